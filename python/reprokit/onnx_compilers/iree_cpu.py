"""IREE (PyPI `iree-base-compiler`, `iree-base-runtime`) on the ONNX model: its ONNX importer makes
the torch-dialect module, the compiler builds it for the `llvm-cpu` target (the host's CPU), and
the runtime's local-sync driver (one thread) runs it. f64 stays f64 (IREE demotes it to f32 unless
told otherwise, which would judge f32 arithmetic against reprokit's f64 rule)."""
from reprokit.onnx_compilers import unsupported_pattern

NAME = "IREE"
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


def compile(path):
    asm, entry = _import(path)
    vmfb = _compiler.compile_str(asm, target_backends=["llvm-cpu"], input_type="onnx",
                                 extra_args=["--iree-llvmcpu-target-cpu=host", "--iree-input-demote-f64-to-f32=false"])
    config = _runtime.Config("local-sync")
    context = _runtime.SystemContext(config=config)
    context.add_vm_module(_runtime.VmModule.copy_buffer(config.vm_instance, vmfb))
    return context.modules.module[entry]


def run(function, inputs):
    results = function(*inputs)
    if not isinstance(results, (list, tuple)):
        results = [results]
    return [r.to_host() for r in results]
