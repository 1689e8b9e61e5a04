"""OpenVINO's CPU plugin on the ONNX model (PyPI `openvino`): its ONNX frontend reads the model,
compile_model builds it for the CPU. One inference thread, and f32 as the inference precision, so
that a CPU with bf16 units does not silently compute an f32 model in bf16. An f64 model is
unsupported: the CPU plugin would compute it in f32."""
import re

NAME = "OpenVINO"
# The ONNX frontend's "OpenVINO does not support the following ONNX operations", a type the CPU
# plugin has no kernel for, and its "Unsupported ..." / "not supported" / "not implemented" errors.
UNSUPPORTED = re.compile(
    r"does not support the following ONNX operations[^\n]*|No conversion rule found for operations[^\n]*|[^\n]*(?:Unsupported|unsupported|is not supported|not implemented|Not implemented)[^\n]*")

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
