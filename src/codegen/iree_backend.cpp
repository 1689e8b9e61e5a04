// The iree backend: IREE (PyPI iree-base-compiler,
// iree-base-runtime) on the exported ONNX model: its ONNX importer, the llvm-cpu target for the
// host's CPU, the runtime's local-sync (one-thread) driver.
// The worker is python/reprokit/onnx_worker.py with python/reprokit/onnx_compilers/iree_cpu.py;
// failure kinds as onnx_worker_backend.h says.
#include "onnx_worker_backend.h"

namespace reprokit {

extern const OnnxCompiler kIreeCompiler;
const OnnxCompiler kIreeCompiler = {"iree", "IREE", "iree-base-compiler and iree-base-runtime"};

std::unique_ptr<CompiledGraph> compile_iree(const Graph& g, const CompileOptions& options) {
  return compile_with_onnx_worker(g, options, kIreeCompiler);
}

}  // namespace reprokit
