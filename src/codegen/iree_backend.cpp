// The iree backend: IREE (PyPI iree-base-compiler,
// iree-base-runtime) on the exported ONNX model: its ONNX importer, the llvm-cpu target for the
// host's CPU, the runtime's local-sync (one-thread) driver.
// The worker is python/reprokit/onnx_worker.py with python/reprokit/onnx_compilers/iree_cpu.py;
// failure kinds as onnx_worker_backend.h says. Its backend options are iree-compile's optimisation
// level and flags (iree_switches.cpp).
#include "onnx_worker_backend.h"

namespace reprokit {

nlohmann::json iree_worker_options(const CompileOptions& options);  // iree_switches.cpp
extern const OnnxCompiler kIreeCompiler;
const OnnxCompiler kIreeCompiler = {"iree", "IREE", "iree-base-compiler and iree-base-runtime", iree_worker_options};

std::unique_ptr<CompiledGraph> compile_iree(const Graph& g, const CompileOptions& options) {
  return compile_with_onnx_worker(g, options, kIreeCompiler);
}

}  // namespace reprokit
