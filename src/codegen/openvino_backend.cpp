// The openvino backend: OpenVINO's CPU plugin (PyPI openvino) on the
// exported ONNX model: its ONNX frontend reads it, compile_model builds it for the CPU (one
// inference thread, f32 inference precision).
// The worker is python/reprokit/onnx_worker.py with python/reprokit/onnx_compilers/openvino_cpu.py;
// failure kinds as onnx_worker_backend.h says.
#include "onnx_worker_backend.h"

namespace reprokit {

extern const OnnxCompiler kOpenVinoCompiler;
const OnnxCompiler kOpenVinoCompiler = {"openvino", "OpenVINO", "openvino"};

std::unique_ptr<CompiledGraph> compile_openvino(const Graph& g, const CompileOptions& options) {
  return compile_with_onnx_worker(g, options, kOpenVinoCompiler);
}

}  // namespace reprokit
