// The onnxruntime backend: a compiler that is not reprokit's. The graph is exported to ONNX and
// run by ONNX Runtime (CPU, one thread) through `examples/ort_check/check.mjs --run` under Node.js,
// so the harness and the minifier treat ORT's failures and wrong numbers as they treat the cpp
// backend's. A session ORT cannot create (an op or type it lacks included) is a compile error, a
// failed run a runtime error. Each run starts Node (about 0.2 s): fine for finding and shrinking
// bugs, not a way to run models fast.
#include <fmt/format.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>

#include "reprokit/codegen/compiled_graph.h"
#include "reprokit/codegen/compile_options.h"
#include "reprokit/onnx/onnx_export.h"
#include "reprokit/process/subprocess.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/support/errors.h"
#include "reprokit/support/files.h"

namespace reprokit {

namespace {

namespace fs = std::filesystem;

// $REPRO_ORT_RUNNER, else the script of this source tree.
std::string runner_script() {
  if (const char* e = std::getenv("REPRO_ORT_RUNNER"); e && *e) return e;
  return REPROKIT_ORT_RUNNER;
}

// A fresh directory under the system's temporary directory, removed with this object.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "rk_onnxruntime_XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw UserError(fmt::format("onnxruntime backend: cannot create a directory under {}", fs::temp_directory_path().string()));
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// The last non-empty line of `text`.
std::string last_line(const std::string& text) {
  size_t end = text.find_last_not_of("\n ");
  if (end == std::string::npos) return "";
  size_t begin = text.rfind('\n', end);
  return text.substr(begin == std::string::npos ? 0 : begin + 1, end + 1 - (begin == std::string::npos ? 0 : begin + 1));
}

class OrtGraph : public CompiledGraph {
 public:
  OrtGraph(Graph g, std::string onnx) : g_(std::move(g)), onnx_(std::move(onnx)) {}

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
    const int ni = g_.num_inputs();
    if (static_cast<int>(inputs.size()) != ni) throw UserError(fmt::format("graph {} takes {} inputs, got {}", g_.name, ni, inputs.size()));
    TempDir tmp;
    const Dir dir = Dir::open(tmp.path.string());
    dir.write("model.onnx", onnx_);
    const Dir in = dir.sub("inputs", true), out = dir.sub("outputs", true);
    for (int i = 0; i < ni; ++i) {
      const TensorType& t = g_.node(i).type;
      if (inputs[static_cast<size_t>(i)].dtype() != t.dtype || inputs[static_cast<size_t>(i)].shape() != t.shape)
        throw UserError(fmt::format("input %{} of graph {} must be {}", g_.node(i).name, g_.name, t.str()));
      in.write(g_.node(i).name + ".npy", encode_npy(inputs[static_cast<size_t>(i)]));
    }
    ProcessSpec s;
    s.argv = {"node", runner_script(), "--run", (tmp.path / "model.onnx").string(), in.path(), out.path()};
    ProcessResult r;
    try {
      r = run_process(s);
    } catch (const std::exception& e) {
      throw UserError(fmt::format("the onnxruntime backend needs Node.js (`node` on PATH): {}", e.what()));
    }
    const std::string said = last_line(r.err.empty() ? r.out : r.err);
    if (r.exit_code == 1) {
      const bool at_load = said.find("ONNX Runtime session creation") != std::string::npos;
      throw CompileFailure(at_load ? FailureKind::compile_error : FailureKind::runtime_error, said);
    }
    if (r.exit_code != 0)
      throw UserError(fmt::format("the onnxruntime backend could not run ONNX Runtime ({} {}, exit {}): {}\n  install it with: cd examples/ort_check && npm install --ignore-scripts",
                                  "node", runner_script(), r.exit_code, said.empty() ? r.err : said));
    std::vector<Tensor> outs;
    for (size_t k = 0; k < g_.outputs.size(); ++k) {
      const TensorType& want = g_.node(g_.outputs[k]).type;
      Tensor t = read_npy_as((tmp.path / "outputs" / fmt::format("out{}.npy", k)).string(), want.dtype);
      if (t.dtype() != want.dtype || t.shape() != want.shape)
        throw CompileFailure(FailureKind::runtime_error,
                             fmt::format("ONNX Runtime's output {} (%{}) is {}, the graph's is {}", k, g_.node(g_.outputs[k]).name, TensorType{t.dtype(), t.shape()}.str(), want.str()));
      outs.push_back(std::move(t));
    }
    return outs;
  }

 private:
  Graph g_;
  std::string onnx_;
};

}  // namespace

std::unique_ptr<CompiledGraph> compile_onnxruntime(const Graph& g, const CompileOptions& options) {
  if (!options.injections.empty() || !options.injection_nodes.empty() || !options.pass_injections.empty())
    throw UserError("--inject and --inject-pass plant faults in reprokit's own code generators (cpp, cuda), not in ONNX Runtime");
  return std::make_unique<OrtGraph>(g, export_onnx(g));
}

}  // namespace reprokit
