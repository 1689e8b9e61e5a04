// The ONNX worker's client (see onnx_worker_backend.h).
#include "onnx_worker_backend.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "npy_exchange.h"
#include "python_worker.h"
#include "reprokit/codegen/unsupported.h"
#include "reprokit/ir/names.h"
#include "reprokit/onnx/onnx_export.h"
#include "reprokit/support/errors.h"
#include "reprokit/support/files.h"

namespace reprokit {

namespace {

using nlohmann::json;

PythonWorkerSpec worker_of(const OnnxCompiler& c) {
  return {std::string(c.compiler),
          {"reprokit.onnx_worker", std::string(c.backend)},
          fmt::format("the {} backend needs Python with {} and onnx (scripts/install_deps.sh makes .venv in the checkout from "
                      "python/requirements.lock; REPROKIT_PYTHON=/path/to/python names another)",
                      c.backend, c.packages)};
}

class OnnxWorkerGraph : public CompiledGraph {
 public:
  OnnxWorkerGraph(Graph g, std::string onnx, const OnnxCompiler& c) : g_(std::move(g)), onnx_(std::move(onnx)), c_(c), worker_(worker_of(c)) {}

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
    const NpyExchange ex(g_, inputs, c_.backend);
    ex.dir().write("model.onnx", onnx_);
    json specs = json::array();
    for (int i = 0; i < g_.num_inputs(); ++i) {
      const TensorType& t = g_.node(i).type;
      specs.push_back({{"file", ex.input_file(i)}, {"dtype", std::string(dtype_name(t.dtype))}, {"shape", t.shape}});
    }
    const json request = {{"model", ex.dir().path("model.onnx")}, {"inputs", specs}, {"outputs", ex.outputs_dir()}};
    const json reply = ask_python_worker(worker_, request);
    if (reply.value("ok", false)) return ex.read_outputs(c_.compiler);
    const std::string kind = reply.value("kind", ""), message = reply.value("message", "");
    if (kind == "compile_error") throw CompileFailure(FailureKind::compile_error, message);
    if (kind == "runtime_error") throw CompileFailure(FailureKind::runtime_error, message);
    if (kind == "unsupported") throw Unsupported(fmt::format("{} cannot take graph {}: {}", c_.compiler, g_.name, utf8_safe(message, 600)));
    throw UserError(fmt::format("the {} worker refused graph {}: {}", c_.compiler, g_.name, utf8_safe(message, 600)));
  }

 private:
  Graph g_;
  std::string onnx_;
  OnnxCompiler c_;
  PythonWorkerSpec worker_;
};

}  // namespace

std::unique_ptr<CompiledGraph> compile_with_onnx_worker(const Graph& g, const CompileOptions& options, const OnnxCompiler& c) {
  refuse_fault_injections(options, c.compiler);
  if (!options.backend_options.empty())
    throw UserError(fmt::format("--backend-option sets a compiler's own options; the {} backend takes none", c.backend));
  std::string onnx;
  try {
    onnx = export_onnx(g);
  } catch (const UserError& e) {  // an op or dtype ONNX has no form for
    throw Unsupported(fmt::format("graph {} has no ONNX form for {}: {}", g.name, c.compiler, e.what()));
  }
  return std::make_unique<OnnxWorkerGraph>(g, std::move(onnx), c);
}

}  // namespace reprokit
