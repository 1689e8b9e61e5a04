"""OpenVINO's CPU plugin on the ONNX model (PyPI `openvino`): its ONNX frontend reads the model,
compile_model builds it for the CPU. One inference thread, and f32 as the inference precision, so
that a CPU with bf16 units does not silently compute an f32 model in bf16. An f64 model is
unsupported: the CPU plugin would compute it in f32.

Its switches are compile_model's properties, by OpenVINO's names: EXECUTION_MODE_HINT (ACCURACY or
PERFORMANCE, OpenVINO's default), INFERENCE_PRECISION_HINT (f32 unless set), SNIPPETS_MODE (the
CPU plugin's fusion of subgraphs into JIT kernels: ENABLE, its default, IGNORE_CALLBACK, DISABLE),
and disabled_properties, the names of SWITCHES each set to the value that turns its optimisation
off. A release build cannot skip one of its transformations by name. changed() compares the graph
the plugin executes (its runtime model) with each switch on and off."""
import re

import numpy as np

from reprokit.onnx_compilers import unsupported_pattern

NAME = "OpenVINO"
OPTIONS = ("EXECUTION_MODE_HINT", "INFERENCE_PRECISION_HINT", "SNIPPETS_MODE", "disabled_properties")
# The properties that turn an optimisation off, with the value that does, in the order the plugin
# applies them: precision lowering (ConvertPrecision), then snippets' tokenisation.
SWITCHES = {"INFERENCE_PRECISION_HINT": "f32", "SNIPPETS_MODE": "DISABLE"}
# The ONNX frontend's words for an op it cannot convert, and the common words (the Python binding's
# "Unsupported data type: bfloat16", a type the CPU plugin has no kernel for).
UNSUPPORTED = unsupported_pattern("does not support the following ONNX operations", "No conversion rule found for operations")
# A name OpenVINO numbered itself ("Constant_5355"): the number differs from one compile to the next.
_NUMBERED = re.compile(r"\b([A-Za-z]+)_\d+\b")

_ov = None
_core = None


def load():
    global _ov, _core
    import openvino

    _ov = openvino
    _core = openvino.Core()
    return openvino.__version__


def _properties(options, disabled_properties):
    properties = {"INFERENCE_NUM_THREADS": 1, "INFERENCE_PRECISION_HINT": "f32"}
    properties.update(options)
    for name in disabled_properties:
        if name not in SWITCHES:
            raise ValueError(f"{name!r} is not one of the properties reprokit turns off ({', '.join(SWITCHES)})")
        properties[name] = SWITCHES[name]
    return properties


def _model(path):
    model = _core.read_model(path)
    if any(op.get_output_element_type(k) == _ov.Type.f64 for op in model.get_ops() for k in range(op.get_output_size())):
        # The CPU plugin converts f64 to f32 and computes in it (its inference precisions are f32,
        # bf16 and f16): every f64 model would be judged f32 arithmetic against an f64 rule.
        raise TypeError("f64 is not supported by the CPU plugin (it computes an f64 model in f32)")
    return model


def compile(path, disabled_properties=(), **options):
    return _core.compile_model(_model(path), "CPU", _properties(options, disabled_properties))


def _executed(compiled):
    """The graph the plugin executes: each node's layer type, precisions, kernel and the model's
    layers it computes."""
    keys = ("layerType", "runtimePrecision", "outputPrecisions", "primitiveType", "originalLayersNames")
    return [tuple(_NUMBERED.sub(r"\1_#", op.get_rt_info()[k].astype(str)) for k in keys) for op in compiled.get_runtime_model().get_ordered_ops()]


def changed(path, disabled_properties=(), **options):
    model = _model(path)

    def outcome(disabled):
        """The executed graph, or the plugin's words where it cannot compile the model."""
        properties = _properties(options, disabled)
        try:
            return _executed(_core.compile_model(model, "CPU", properties))
        except Exception as e:  # a compile error is the plugin's answer too
            return _NUMBERED.sub(r"\1_#", str(e))

    base = outcome(disabled_properties)
    return [name for name in SWITCHES if name not in disabled_properties and outcome(list(disabled_properties) + [name]) != base]


def run(compiled, inputs):
    request = compiled.create_infer_request()
    results = request.infer([_ov.Tensor(a) for a in inputs], share_inputs=False)
    return [_as_its_type(results[o], o) for o in compiled.outputs]


def _as_its_type(a, output):
    # The Python binding hands a bfloat16 output over as a float16 array holding bfloat16's bits
    # (numpy has no bfloat16): read the bits as what they are.
    if output.get_element_type() == _ov.Type.bf16:
        import ml_dtypes
        return np.asarray(a).view(np.uint16).view(ml_dtypes.bfloat16)
    return a
