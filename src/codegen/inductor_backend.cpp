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
// backend_options are torch._inductor.config options, applied in the worker for each request, but
// for compile_backend and disabled_subsystems, the switches `reprokit bisect` walks
// (inductor_switches.cpp).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "inductor_worker_client.h"
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

const PythonWorkerSpec kWorker{"Inductor",
                               {"reprokit.inductor_worker"},
                               "the inductor backend needs Python with torch 2 (scripts/install_deps.sh makes .venv in the checkout; "
                               "REPROKIT_PYTHON=/path/to/python names another)"};

// The fault Inductor itself can plant: its testing option breaks the C++ it generates for relu.
std::optional<std::string> relu_bug_of(const CompileOptions& options) {
  if (!options.pass_injections.empty()) throw UserError("--inject-pass plants faults in reprokit's own passes; Inductor does not run them");
  std::optional<std::string> bug;
  for (const FaultInjection& inj : options.injections) {
    const bool plantable = inj.op == Op::relu && inj.amount == 0 &&
                           (inj.kind == FaultKind::compile_error || inj.kind == FaultKind::runtime_error || inj.kind == FaultKind::accuracy);
    if (!plantable)
      throw UserError(
          fmt::format("--inject {}: Inductor can plant only relu:compile_error, relu:runtime_error or relu:accuracy "
                      "(torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY)",
                      inj.str()));
    bug = std::string(fault_kind_name(inj.kind));
  }
  return bug;
}

// The request's fields that `options` set: the config options, the stage, the switches turned
// off and the planted fault.
json request_fields(const CompileOptions& options) {
  json fields = {{"config", json::object()}};
  for (const auto& [key, value] : options.backend_options) {
    if (key == kInductorStageOption) {
      fields["compile_backend"] = backend_option_choice(options.backend_options, key, kInductorStages);
    } else if (key == kInductorDeviceOption) {
      fields["device"] = backend_option_choice(options.backend_options, key, kInductorDevices);
    } else if (key == kInductorDisableOption) {
      fields["disabled"] = split_commas(backend_option_string(options.backend_options, key));
    } else {
      fields["config"][key] = json::parse(value);  // validated when read
    }
  }
  const std::optional<std::string> bug = relu_bug_of(options);
  fields["relu_bug"] = bug ? json(*bug) : json(nullptr);
  return fields;
}

class InductorGraph : public CompiledGraph {
 public:
  InductorGraph(Graph g, CompileOptions options) : g_(std::move(g)), options_(std::move(options)) { request_fields(options_); }

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
    std::vector<Tensor> outputs;
    run_in_inductor_worker(g_, options_, inputs, false, &outputs);
    return outputs;
  }

  std::string source() const override { return emit_torch_function(g_); }

 private:
  Graph g_;
  CompileOptions options_;
};

}  // namespace

json run_in_inductor_worker(const Graph& g, const CompileOptions& options, const std::vector<Tensor>& inputs, bool record,
                            std::vector<Tensor>* outputs) {
  const NpyExchange ex(g, inputs, "inductor");
  json specs = json::array();
  for (int i = 0; i < g.num_inputs(); ++i) {
    const TensorType& t = g.node(i).type;
    specs.push_back({{"file", ex.input_file(i)}, {"dtype", std::string(dtype_name(t.dtype))}, {"shape", t.shape}});
  }
  json request = request_fields(options);
  request.update({{"source", emit_torch_function(g)}, {"entry", torch_function_name(g)}, {"inputs", specs}, {"outputs", ex.outputs_dir()}});
  if (record) request["record"] = true;
  json reply = ask_python_worker(kWorker, request);
  const bool ok = reply.value("ok", false);
  const std::string kind = reply.value("kind", ""), message = reply.value("message", "");
  if (!ok && kind != "compile_error" && kind != "runtime_error")
    throw UserError(fmt::format("the inductor worker refused graph {}: {}", g.name, utf8_safe(message, 600)));
  if (outputs) {
    if (kind == "compile_error") throw CompileFailure(FailureKind::compile_error, message);
    if (kind == "runtime_error") throw CompileFailure(FailureKind::runtime_error, message);
    *outputs = ex.read_outputs("Inductor");
  }
  return reply;
}

std::string inductor_torch_version() {
  const json reply = ask_python_worker(kWorker, {{"version", true}});
  return "torch " + reply.value("torch", std::string("unknown"));
}

std::unique_ptr<CompiledGraph> compile_inductor(const Graph& g, const CompileOptions& options) { return std::make_unique<InductorGraph>(g, options); }

}  // namespace reprokit
