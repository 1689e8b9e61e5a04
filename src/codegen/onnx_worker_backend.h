// The backends that hand reprokit's exported ONNX model to another compiler through
// python/reprokit/onnx_worker.py (openvino, tvm, iree): each backend file names its compiler, this
// does the rest. The graph is exported to ONNX (export_onnx, as for onnxruntime); each run writes
// the model and the inputs (.npy) and asks the compiler's long-lived worker (python_worker.h),
// which compiles a model once and runs it as often as asked.
//
// Failure kinds: a model the compiler cannot build is a compile error, a failed run a runtime
// error, a dead worker a crash, a hang REPRO_TIMEOUT's. An op or a dtype the compiler says it
// lacks, or a graph with no ONNX form, is Unsupported (unsupported.h): a limitation, not a finding.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "reprokit/codegen/compile_options.h"
#include "reprokit/codegen/compiled_graph.h"
#include "reprokit/ir/graph.h"

namespace reprokit {

struct OnnxCompiler {
  std::string_view backend;   // the backend's name, and the worker's argument ("openvino")
  std::string_view compiler;  // its name in messages ("OpenVINO")
  std::string_view packages;  // what pip installs ("openvino")
  // The worker's "options" for the backend options (the compiler's switches), validated; null
  // when the compiler takes none.
  nlohmann::json (*worker_options)(const CompileOptions& options) = nullptr;
};

std::unique_ptr<CompiledGraph> compile_with_onnx_worker(const Graph& g, const CompileOptions& options, const OnnxCompiler& c);

// The optimisers that changed `g` under `options`, in the order they ran, as the compiler's worker
// says (its module's changed()). Only names `known` takes are kept, each once: the worker's answer
// is not trusted to name a real switch.
std::vector<std::string> onnx_worker_changed(const Graph& g, const CompileOptions& options, const OnnxCompiler& c, bool (*known)(std::string_view));

// The compiler's version as its worker reports it; "unknown" when it cannot start.
std::string onnx_worker_version(const OnnxCompiler& c);

}  // namespace reprokit
