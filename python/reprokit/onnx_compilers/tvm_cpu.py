"""Apache TVM (PyPI `apache-tvm`) on the ONNX model: Relax's ONNX frontend imports it, tvm.compile
builds it for the LLVM CPU target, and Relax's virtual machine runs it, on one thread as the other compilers here (TVM_NUM_THREADS set
in the environment wins).

Its switches are PassContext's: opt_level (0..3; TVM's default, 2, when unset) and disabled_pass,
the names of passes to skip. changed() asks a pass instrument which passes changed the module."""
import os

from reprokit.onnx_compilers import unsupported_pattern

NAME = "TVM"
OPTIONS = ("opt_level", "disabled_pass")
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


def _build(path, opt_level, disabled_pass, instruments=()):
    import onnx
    from tvm.relax.frontend.onnx import from_onnx

    mod = from_onnx(onnx.load(path), keep_params_in_input=False)
    with _tvm.transform.PassContext(opt_level=opt_level, disabled_pass=list(disabled_pass), instruments=list(instruments)):
        return _tvm.compile(mod, target="llvm")


def compile(path, opt_level=2, disabled_pass=()):
    from tvm import relax

    return relax.VirtualMachine(_build(path, opt_level, disabled_pass), _tvm.cpu())


def _recorder():
    """A pass instrument that records, in order, each innermost pass that changed the module (a
    Sequential or a pipeline only holds passes: turning it off is not one optimiser's)."""
    import tvm_ffi

    # The module's structural hash, not the module: a Python pass may change it in place.
    @_tvm.instrument.pass_instrument
    class Changes:
        def __init__(self):
            self.names = []
            self.open = []  # [hash before, whether a pass ran inside] per pass running

        def run_before_pass(self, mod, info):
            if self.open:
                self.open[-1][1] = True
            self.open.append([tvm_ffi.structural_hash(mod), False])

        def run_after_pass(self, mod, info):
            before, holds_passes = self.open.pop()
            if holds_passes or before == tvm_ffi.structural_hash(mod):
                return
            if info.name not in self.names:
                self.names.append(info.name)

    return Changes()


def _builds(path, opt_level, disabled_pass):
    """Whether the model compiles with `disabled_pass` off, asked in a forked child: without a pass
    it needs, TVM may crash rather than raise."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), 2)  # TVM's warnings and traces, not the worker's
            _build(path, opt_level, disabled_pass)
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def changed(path, opt_level=2, disabled_pass=()):
    record = _recorder()
    _build(path, opt_level, disabled_pass, [record])
    # A pass the build cannot do without (LegalizeOps, VMShapeLower...) fails to compile when turned
    # off: bisect would take that for the failure going away, so it is not offered.
    return [name for name in record.names if _builds(path, opt_level, list(disabled_pass) + [name])]


def _flatten(value):
    if isinstance(value, (list, tuple)) or type(value).__name__ == "Array":
        return [a for v in value for a in _flatten(v)]
    return [value.numpy()]


def run(vm, inputs):
    return _flatten(vm["main"](*[_tvm.runtime.tensor(a) for a in inputs]))
