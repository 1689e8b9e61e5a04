"""IREE (PyPI `iree-base-compiler`, `iree-base-runtime`) on the ONNX model: its ONNX importer makes
the torch-dialect module, the compiler builds it for the `llvm-cpu` target (the host's CPU), and
the runtime's local-sync driver (one thread) runs it. f64 stays f64 (IREE demotes it to f32 unless
told otherwise, which would judge f32 arithmetic against reprokit's f64 rule).

Its switches are iree-compile's own flags: opt_level, the value of --iree-opt-level (O0..O3; IREE's
default when unset), and disabled_flags, the names of flags of SWITCHES each passed as
`--NAME=false`. IREE cannot skip a pass by name; these flags are the optimisations of its llvm-cpu
pipeline that one flag turns off. changed() compiles with each one off and compares the module's
bytes: the flags whose turning off changes what IREE builds."""
from reprokit.onnx_compilers import unsupported_pattern

NAME = "IREE"
OPTIONS = ("opt_level", "disabled_flags")
LEVELS = ("O0", "O1", "O2", "O3")
# The boolean flags that turn on an optimisation of the llvm-cpu pipeline, in the order of its
# phases (global optimisation, dispatch creation, stream scheduling, codegen); each is on at some
# --iree-opt-level and changes the module of some small model when turned off.
SWITCHES = (
    "iree-opt-const-eval",  # evaluates constant expressions at compile time
    "iree-opt-const-expr-hoisting",  # hoists constant expressions into initialisers
    "iree-opt-outer-dim-concat",  # concatenates along the outermost dimension (O1)
    "iree-opt-generalize-matmul",  # named matmuls as linalg.generic, for fusion (O2)
    "iree-dispatch-creation-enable-aggressive-fusion",  # (O2)
    "iree-scheduling-optimize-bindings",  # binding fusion and dispatch-site specialisation
    "iree-llvmcpu-reassociate-fp-reductions",  # reorders float reductions (O2)
)
# An ONNX op the importer or the torch-to-linalg conversion has no lowering for, and the common
# words for an op or a type.
UNSUPPORTED = unsupported_pattern("failed to legalize operation 'torch.operator'")

_compiler = None
_runtime = None


def load():
    global _compiler, _runtime
    import iree.compiler
    import iree.compiler.extras.onnx_importer  # noqa: F401
    import iree.runtime
    import onnx  # noqa: F401

    _compiler, _runtime = iree.compiler, iree.runtime
    import iree.compiler.version

    return iree.compiler.version.VERSION


def _import(path):
    """The model as IREE's ONNX importer writes it (MLIR text, torch dialect), and its function name."""
    import onnx
    from iree.compiler.extras import onnx_importer
    from iree.compiler.ir import Context

    model = onnx.shape_inference.infer_shapes(onnx.load(path))
    info = onnx_importer.ModelInfo(model)
    module = info.create_module(context=Context()).operation
    onnx_importer.NodeImporter.define_function(info.main_graph, module).import_all()
    module.verify()
    return module.get_asm(), model.graph.name


def message(e):
    """The compiler's own words for `e`: iree-compile's "error:" lines, not its banner."""
    said = []
    for line in str(e).splitlines():
        if "error:" in line:
            text = line.split("error:", 1)[1].strip()
            if text not in said:
                said.append(text)
    return "; ".join(said[:3]) if said else None


def _flags(opt_level, disabled_flags):
    """iree-compile's flags for the switches, each checked here too: they go on its command line."""
    flags = ["--iree-llvmcpu-target-cpu=host", "--iree-input-demote-f64-to-f32=false"]
    if opt_level is not None:
        if opt_level not in LEVELS:
            raise ValueError(f"opt_level {opt_level!r} is not one of {', '.join(LEVELS)}")
        flags.append(f"--iree-opt-level={opt_level}")
    for name in disabled_flags:
        if name not in SWITCHES:
            raise ValueError(f"{name!r} is not one of IREE's optimisation flags reprokit turns off")
        flags.append(f"--{name}=false")
    return flags


def _build(asm, opt_level, disabled_flags):
    return _compiler.compile_str(asm, target_backends=["llvm-cpu"], input_type="onnx", extra_args=_flags(opt_level, disabled_flags))


def compile(path, opt_level=None, disabled_flags=()):
    asm, entry = _import(path)
    vmfb = _build(asm, opt_level, disabled_flags)
    config = _runtime.Config("local-sync")
    context = _runtime.SystemContext(config=config)
    context.add_vm_module(_runtime.VmModule.copy_buffer(config.vm_instance, vmfb))
    return context.modules.module[entry]


def changed(path, opt_level=None, disabled_flags=()):
    # The module's bytes are the same for the same flags (iree-compile is deterministic), so a
    # flag whose turning off leaves them equal changed nothing.
    _flags(opt_level, disabled_flags)  # a bad name or level is the request's fault, not IREE's
    asm, _ = _import(path)

    def outcome(disabled):
        """The module, or IREE's words where it cannot compile the model."""
        try:
            return _build(asm, opt_level, disabled)
        except Exception as e:  # a compile error is IREE's answer too
            return message(e) or str(e)

    base = outcome(disabled_flags)
    return [name for name in SWITCHES if name not in disabled_flags and outcome(list(disabled_flags) + [name]) != base]


def run(function, inputs):
    results = function(*inputs)
    if not isinstance(results, (list, tuple)):
        results = [results]
    return [r.to_host() for r in results]
