"""OpenVINO's CPU plugin on the ONNX model (PyPI `openvino`): its ONNX frontend reads the model,
compile_model builds it for the CPU. One inference thread, and f32 as the inference precision, so
that a CPU with bf16 units does not silently compute an f32 model in bf16. An f64 model is
unsupported: the CPU plugin would compute it in f32."""
from reprokit.onnx_compilers import unsupported_pattern

NAME = "OpenVINO"
# The ONNX frontend's words for an op it cannot convert, and the common words (the Python binding's
# "Unsupported data type: bfloat16", a type the CPU plugin has no kernel for).
UNSUPPORTED = unsupported_pattern("does not support the following ONNX operations", "No conversion rule found for operations")

_ov = None
_core = None


def load():
    global _ov, _core
    import openvino

    _ov = openvino
    _core = openvino.Core()
    return openvino.__version__


def compile(path):
    model = _core.read_model(path)
    if any(op.get_output_element_type(k) == _ov.Type.f64 for op in model.get_ops() for k in range(op.get_output_size())):
        # The CPU plugin converts f64 to f32 and computes in it (its inference precisions are f32,
        # bf16 and f16): every f64 model would be judged f32 arithmetic against an f64 rule.
        raise TypeError("f64 is not supported by the CPU plugin (it computes an f64 model in f32)")
    return _core.compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": 1, "INFERENCE_PRECISION_HINT": "f32"})


def run(compiled, inputs):
    request = compiled.create_infer_request()
    results = request.infer([_ov.Tensor(a) for a in inputs], share_inputs=False)
    return [results[o] for o in compiled.outputs]
