"""Apache TVM (PyPI `apache-tvm`) on the ONNX model: Relax's ONNX frontend imports it, tvm.compile
builds it for the LLVM CPU target, and Relax's virtual machine runs it, on one thread as the other compilers here (TVM_NUM_THREADS set
in the environment wins)."""
import os

from reprokit.onnx_compilers import unsupported_pattern

NAME = "TVM"
# The frontend's OpNotImplemented ("The following operators are not supported for frontend ONNX"),
# and the common words for an op or a type.
UNSUPPORTED = unsupported_pattern("OpNotImplemented")

_tvm = None


def load():
    global _tvm
    os.environ.setdefault("TVM_NUM_THREADS", "1")
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
