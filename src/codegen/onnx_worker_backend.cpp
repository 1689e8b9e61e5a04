// The ONNX worker's client (see onnx_worker_backend.h).
#include "onnx_worker_backend.h"

#include <algorithm>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "npy_exchange.h"
#include "python_worker.h"
#include "reprokit/codegen/onnx_worker_compilers.h"
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
  OnnxWorkerGraph(Graph g, std::string onnx, const OnnxCompiler& c, json options)
      : g_(std::move(g)), onnx_(std::move(onnx)), c_(c), worker_(worker_of(c)), options_(std::move(options)) {}

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
    const NpyExchange ex(g_, inputs, c_.backend);
    ex.dir().write("model.onnx", onnx_);
    json specs = json::array();
    for (int i = 0; i < g_.num_inputs(); ++i) {
      const TensorType& t = g_.node(i).type;
      specs.push_back({{"file", ex.input_file(i)}, {"dtype", std::string(dtype_name(t.dtype))}, {"shape", t.shape}});
    }
    json request = {{"model", ex.dir().path("model.onnx")}, {"inputs", specs}, {"outputs", ex.outputs_dir()}};
    if (!options_.empty()) request["options"] = options_;
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
  json options_;
};

json worker_options_of(const CompileOptions& options, const OnnxCompiler& c) {
  if (c.worker_options) return c.worker_options(options);
  if (!options.backend_options.empty())
    throw UserError(fmt::format("--backend-option sets a compiler's own options; the {} backend takes none", c.backend));
  return json::object();
}

}  // namespace

std::unique_ptr<CompiledGraph> compile_with_onnx_worker(const Graph& g, const CompileOptions& options, const OnnxCompiler& c) {
  refuse_fault_injections(options, c.compiler);
  json worker_options = worker_options_of(options, c);
  std::string onnx;
  try {
    onnx = export_onnx(g);
  } catch (const UserError& e) {  // an op or dtype ONNX has no form for
    throw Unsupported(fmt::format("graph {} has no ONNX form for {}: {}", g.name, c.compiler, e.what()));
  }
  return std::make_unique<OnnxWorkerGraph>(g, std::move(onnx), c, std::move(worker_options));
}

std::vector<std::string> onnx_worker_changed(const Graph& g, const CompileOptions& options, const OnnxCompiler& c, bool (*known)(std::string_view)) {
  const ScratchDir scratch("rk_onnx_changed_");
  scratch.dir().write("model.onnx", export_onnx(g));
  json request = {{"changed", true}, {"model", scratch.dir().path("model.onnx")}};
  if (json o = worker_options_of(options, c); !o.empty()) request["options"] = o;
  const json reply = ask_python_worker(worker_of(c), request);
  if (!reply.value("ok", false))
    throw UserError(fmt::format("cannot list {}'s optimisers for graph {}: {}", c.compiler, g.name, utf8_safe(reply.value("message", ""), 600)));
  std::vector<std::string> names;
  for (const auto& n : reply.value("changed", json::array()))
    if (n.is_string() && known(n.get_ref<const std::string&>()) && std::find(names.begin(), names.end(), n) == names.end())
      names.push_back(n.get<std::string>());
  return names;
}

std::string onnx_worker_version(const OnnxCompiler& c) {
  constexpr double kVersionSeconds = 120;  // an interpreter's start and the compiler's import
  return python_worker_version(worker_of(c), kVersionSeconds);
}

extern const OnnxCompiler kOpenVinoCompiler, kTvmCompiler, kIreeCompiler;  // their backend files

namespace {

const OnnxCompiler* const kOnnxWorkerCompilers[] = {&kOpenVinoCompiler, &kTvmCompiler, &kIreeCompiler};

const OnnxCompiler* onnx_compiler_named(std::string_view backend) {
  for (const OnnxCompiler* c : kOnnxWorkerCompilers)
    if (c->backend == backend) return c;
  return nullptr;
}

}  // namespace

std::optional<OnnxWorkerCompiler> onnx_worker_compiler(const CompileOptions& options) {
  const OnnxCompiler* c = onnx_compiler_named(options.backend);
  if (!c) return std::nullopt;
  return OnnxWorkerCompiler{std::string(c->backend), std::string(c->compiler), worker_options_of(options, *c)};
}

std::string onnx_worker_compiler_version(const std::string& backend) {
  const OnnxCompiler* c = onnx_compiler_named(backend);
  return c ? fmt::format("{} {}", c->compiler, onnx_worker_version(*c)) : "unknown";
}

}  // namespace reprokit
