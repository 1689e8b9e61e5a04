// The inductor backend: PyTorch 2's compiler, not reprokit's. The graph is written as the PyTorch
// function reprokit's emitter writes for repro_torch.py (the ATen ops the graph names, never
// reprokit's decompositions of them) and compiled by torch.compile(backend="inductor") in a
// long-lived Python worker (python/reprokit/inductor_worker.py): one interpreter and one
// `import torch` per process, then one request per graph run.
//
// Failure kinds: an exception while Dynamo or Inductor compiles is a compile error, one while the
// compiled code runs a runtime error, a worker that dies a crash (its signal in the message); a
// hang is REPRO_TIMEOUT's, as for every backend. `--inject relu:KIND` plants Inductor's own
// testing fault (torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY); the bundle's
// backend_options are torch._inductor.config options, applied in the worker for each request.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "npy_exchange.h"
#include "python_worker.h"
#include "reprokit/codegen/compile_options.h"
#include "reprokit/codegen/compiled_graph.h"
#include "reprokit/ir/names.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/runtime/torch_emitter.h"
#include "reprokit/support/errors.h"
#include "reprokit/support/files.h"

namespace reprokit {

namespace {

using nlohmann::json;

const PythonWorkerSpec kWorker{
    "Inductor",
    {"reprokit.inductor_worker"},
    "the inductor backend needs Python with torch 2 (scripts/install_deps.sh makes .venv in the checkout; "
    "REPROKIT_PYTHON=/path/to/python names another)"};

class InductorGraph : public CompiledGraph {
 public:
  InductorGraph(Graph g, json config, std::optional<std::string> relu_bug)
      : g_(std::move(g)), source_(emit_torch_function(g_)), config_(std::move(config)), relu_bug_(std::move(relu_bug)) {}

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
    const NpyExchange ex(g_, inputs, "inductor");
    json specs = json::array();
    for (int i = 0; i < g_.num_inputs(); ++i) {
      const TensorType& t = g_.node(i).type;
      specs.push_back({{"file", ex.input_file(i)}, {"dtype", std::string(dtype_name(t.dtype))}, {"shape", t.shape}});
    }
    json request = {{"source", source_}, {"entry", torch_function_name(g_)}, {"inputs", specs}, {"outputs", ex.outputs_dir()}, {"config", config_}};
    request["relu_bug"] = relu_bug_ ? json(*relu_bug_) : json(nullptr);
    json reply = ask_python_worker(kWorker, request);
    if (!reply.value("ok", false)) {
      const std::string kind = reply.value("kind", ""), message = reply.value("message", "");
      if (kind == "compile_error") throw CompileFailure(FailureKind::compile_error, message);
      if (kind == "runtime_error") throw CompileFailure(FailureKind::runtime_error, message);
      throw UserError(fmt::format("the inductor worker refused graph {}: {}", g_.name, utf8_safe(message, 600)));
    }
    return ex.read_outputs("Inductor");
  }

  std::string source() const override { return source_; }

 private:
  Graph g_;
  std::string source_;
  json config_;
  std::optional<std::string> relu_bug_;
};

// The fault Inductor itself can plant: its testing option breaks the C++ it generates for relu.
std::optional<std::string> relu_bug_of(const CompileOptions& options) {
  if (!options.pass_injections.empty()) throw UserError("--inject-pass plants faults in reprokit's own passes; Inductor does not run them");
  std::optional<std::string> bug;
  for (const FaultInjection& inj : options.injections) {
    const bool plantable = inj.op == Op::relu && inj.amount == 0 &&
                           (inj.kind == FaultKind::compile_error || inj.kind == FaultKind::runtime_error || inj.kind == FaultKind::accuracy);
    if (!plantable)
      throw UserError(fmt::format("--inject {}: Inductor can plant only relu:compile_error, relu:runtime_error or relu:accuracy "
                                  "(torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY)",
                                  inj.str()));
    bug = std::string(fault_kind_name(inj.kind));
  }
  return bug;
}

}  // namespace

std::unique_ptr<CompiledGraph> compile_inductor(const Graph& g, const CompileOptions& options) {
  json config = json::object();
  for (const auto& [key, value] : options.backend_options) config[key] = json::parse(value);  // validated when read
  return std::make_unique<InductorGraph>(g, std::move(config), relu_bug_of(options));
}

}  // namespace reprokit
