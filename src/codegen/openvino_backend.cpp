// The openvino backend: OpenVINO's CPU plugin (PyPI openvino) on the
// exported ONNX model: its ONNX frontend reads it, compile_model builds it for the CPU (one
// inference thread, f32 inference precision).
// The worker is python/reprokit/onnx_worker.py with python/reprokit/onnx_compilers/openvino_cpu.py;
// failure kinds as onnx_worker_backend.h says. Its backend options are compile_model's properties
// that switch optimisations (openvino_switches.cpp).
#include "onnx_worker_backend.h"

namespace reprokit {

nlohmann::json openvino_worker_options(const CompileOptions& options);  // openvino_switches.cpp
extern const OnnxCompiler kOpenVinoCompiler;
const OnnxCompiler kOpenVinoCompiler = {"openvino", "OpenVINO", "openvino", openvino_worker_options};

std::unique_ptr<CompiledGraph> compile_openvino(const Graph& g, const CompileOptions& options) {
  return compile_with_onnx_worker(g, options, kOpenVinoCompiler);
}

}  // namespace reprokit
