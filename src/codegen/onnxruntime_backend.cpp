// The onnxruntime backend: a compiler that is not reprokit's. The graph is exported to ONNX and
// run by ONNX Runtime (CPU, one thread) through `examples/ort_check/check.mjs --run` under Node.js,
// so the harness and the minifier treat ORT's failures and wrong numbers as they treat the cpp
// backend's. A session ORT cannot create (an op or type it lacks included) is a compile error, a
// failed run a runtime error. The backend options graph_optimization_level and disabled_optimizers
// are ORT's session options of those names. Each run starts Node (about 0.2 s): fine for finding and shrinking
// bugs, not a way to run models fast.
#include <fmt/format.h>

#include <cstdlib>

#include "npy_exchange.h"
#include "reprokit/codegen/unsupported.h"
#include "onnxruntime_runner.h"
#include "reprokit/codegen/compiled_graph.h"
#include "reprokit/codegen/compile_options.h"
#include "reprokit/onnx/onnx_export.h"
#include "reprokit/process/subprocess.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/support/errors.h"
#include "reprokit/support/files.h"
#include "reprokit/ir/names.h"

namespace reprokit {

namespace {

// The last non-empty line of `text`.
std::string last_line(const std::string& text) {
  size_t end = text.find_last_not_of("\n ");
  if (end == std::string::npos) return "";
  size_t begin = text.rfind('\n', end);
  return text.substr(begin == std::string::npos ? 0 : begin + 1, end + 1 - (begin == std::string::npos ? 0 : begin + 1));
}

// How the runner says ORT lacks a kernel for an op and dtype, or onnxruntime-node a type.
constexpr std::string_view kUnsupportedTag = "ort_check: unsupported: ";

class OrtGraph : public CompiledGraph {
 public:
  OrtGraph(Graph g, std::string onnx, std::map<std::string, std::string> env) : g_(std::move(g)), onnx_(std::move(onnx)), env_(std::move(env)) {}

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
    const NpyExchange ex(g_, inputs, "onnxruntime");
    ex.dir().write("model.onnx", onnx_);
    ProcessSpec s;
    s.argv = {"node", ort_runner_script(), "--run", ex.dir().path("model.onnx"), ex.inputs_dir(), ex.outputs_dir()};
    s.env_set = env_;
    ProcessResult r;
    try {
      r = run_process(s);
    } catch (const std::exception& e) { throw UserError(fmt::format("the onnxruntime backend needs Node.js (`node` on PATH): {}", e.what())); }
    const std::string said = last_line(r.err.empty() ? r.out : r.err);
    if (r.exit_code == 1 && said.rfind(kUnsupportedTag, 0) == 0)
      throw Unsupported(fmt::format("ONNX Runtime cannot take graph {}: {}", g_.name, utf8_safe(said.substr(kUnsupportedTag.size()), 600)));
    if (r.exit_code == 1) {
      const bool at_load = said.find("ONNX Runtime session creation") != std::string::npos;
      throw CompileFailure(at_load ? FailureKind::compile_error : FailureKind::runtime_error, said);
    }
    if (r.exit_code != 0)
      throw UserError(
          fmt::format("the onnxruntime backend could not run ONNX Runtime ({} {}, exit {}): {}\n  install it with: cd examples/ort_check && npm "
                      "install --ignore-scripts",
                      "node", ort_runner_script(), r.exit_code, said.empty() ? r.err : said));
    return ex.read_outputs("ONNX Runtime");
  }

 private:
  Graph g_;
  std::string onnx_;
  std::map<std::string, std::string> env_;  // the backend options, as the runner reads them
};

}  // namespace

std::unique_ptr<CompiledGraph> compile_onnxruntime(const Graph& g, const CompileOptions& options) {
  refuse_fault_injections(options, "ONNX Runtime");
  return std::make_unique<OrtGraph>(g, export_onnx(g), ort_runner_env(options));
}

}  // namespace reprokit
