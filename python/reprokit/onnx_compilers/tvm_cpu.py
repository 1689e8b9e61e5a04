"""Apache TVM (PyPI `apache-tvm`) on the ONNX model: Relax's ONNX frontend imports it, tvm.compile
builds it for the LLVM CPU target, and Relax's virtual machine runs it (TVM_NUM_THREADS threads)."""
import re

NAME = "TVM"
# The frontend's OpNotImplemented ("The following operators are not supported for frontend ONNX"),
# and TVM's "not supported" / "not implemented" / "Unsupported" errors for an op or a type.
UNSUPPORTED = re.compile(r"[^\n]*(?:OpNotImplemented|not supported|Not supported|not implemented|Unsupported|unsupported)[^\n]*")

_tvm = None


def load():
    global _tvm
    import onnx  # noqa: F401 (the frontend's own import, done once here)
    import tvm
    import tvm.relax.frontend.onnx  # noqa: F401

    _tvm = tvm
    return tvm.__version__


def compile(path):
    import onnx
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx

    mod = from_onnx(onnx.load(path), keep_params_in_input=False)
    executable = _tvm.compile(mod, target="llvm")
    return relax.VirtualMachine(executable, _tvm.cpu())


def _flatten(value):
    if isinstance(value, (list, tuple)) or type(value).__name__ == "Array":
        return [a for v in value for a in _flatten(v)]
    return [value.numpy()]


def run(vm, inputs):
    return _flatten(vm["main"](*[_tvm.runtime.tensor(a) for a in inputs]))
