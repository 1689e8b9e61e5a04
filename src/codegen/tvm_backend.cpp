// The tvm backend: Apache TVM (PyPI apache-tvm) on the exported ONNX model:
// Relax's ONNX frontend imports it, tvm.compile builds it for the LLVM CPU target, Relax's virtual
// machine runs it.
// The worker is python/reprokit/onnx_worker.py with python/reprokit/onnx_compilers/tvm_cpu.py;
// failure kinds as onnx_worker_backend.h says. Its backend options are PassContext's switches
// (tvm_switches.cpp).
#include "onnx_worker_backend.h"

namespace reprokit {

nlohmann::json tvm_worker_options(const CompileOptions& options);  // tvm_switches.cpp
extern const OnnxCompiler kTvmCompiler;
const OnnxCompiler kTvmCompiler = {"tvm", "TVM", "apache-tvm", tvm_worker_options};

std::unique_ptr<CompiledGraph> compile_tvm(const Graph& g, const CompileOptions& options) {
  return compile_with_onnx_worker(g, options, kTvmCompiler);
}

}  // namespace reprokit
