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
#include <unistd.h>

#include <cstdlib>
#include <mutex>

#include "npy_exchange.h"
#include "reprokit/codegen/compile_options.h"
#include "reprokit/codegen/compiled_graph.h"
#include "reprokit/ir/names.h"
#include "reprokit/process/subprocess.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/runtime/torch_emitter.h"
#include "reprokit/support/errors.h"
#include "reprokit/support/files.h"

namespace reprokit {

namespace {

using nlohmann::json;

// How long the worker may take to start (an `import torch` on a cold disk takes seconds).
constexpr double kWorkerStartSeconds = 300;

// $REPROKIT_PYTHON, else the interpreter a pip-installed reprokit was installed for, else the
// virtual environment scripts/install_deps.sh makes in the checkout, else python3 on PATH.
std::string python_interpreter() {
  if (const char* e = std::getenv("REPROKIT_PYTHON"); e && *e) return e;
#ifdef REPROKIT_INSTALLED_PYTHON
  if (::access(REPROKIT_INSTALLED_PYTHON, X_OK) == 0) return REPROKIT_INSTALLED_PYTHON;
#endif
  const std::string venv = std::string(REPROKIT_SOURCE_DIR) + "/.venv/bin/python";
  if (::access(venv.c_str(), X_OK) == 0) return venv;
  return "python3";
}

const char* kInstallHint =
    "the inductor backend needs Python with torch 2 (scripts/install_deps.sh makes .venv in the checkout; "
    "REPROKIT_PYTHON=/path/to/python names another)";

// The one worker of this process. A dead worker is replaced at the next request.
class InductorWorker {
 public:
  static InductorWorker& get() {
    static InductorWorker w;
    return w;
  }

  // Sends one request; returns the reply. Throws CompileFailure{crash} when the worker dies.
  json ask(const json& request) {
    std::lock_guard<std::mutex> lock(mu_);
    start_if_needed();
    if (!child_->write_line(request.dump())) died("while it was sent a graph");
    std::optional<std::string> line = child_->read_line(0);
    if (!line) died("while it compiled or ran a graph");
    try {
      return json::parse(*line);
    } catch (const json::exception&) {
      throw UserError(fmt::format("the inductor worker answered something that is not a reply: {}", utf8_safe(line->substr(0, 300))));
    }
  }

 private:
  void start_if_needed() {
    if (child_ && child_->alive()) return;
    child_.reset();
    ProcessSpec s;
    s.argv = {python_interpreter(), "-m", "reprokit.inductor_worker"};
    const char* pp = std::getenv("PYTHONPATH");
    s.env_set["PYTHONPATH"] = std::string(REPROKIT_PYTHON_DIR) + (pp && *pp ? std::string(":") + pp : "");
    try {
      child_ = std::make_unique<LineChild>(s);
    } catch (const std::exception& e) {
      throw UserError(fmt::format("{}: cannot start {}: {}", kInstallHint, s.argv[0], e.what()));
    }
    std::optional<std::string> ready = child_->read_line(kWorkerStartSeconds);
    json hello;
    try {
      if (ready) hello = json::parse(*ready);
    } catch (const json::exception&) {
    }
    if (!hello.is_object() || !hello.value("ready", false)) {
      std::string why = child_->timed_out() ? fmt::format("it did not start within {} s", kWorkerStartSeconds) : last_lines(child_->wait_result().err);
      child_.reset();
      throw UserError(fmt::format("{}: the worker ({} -m reprokit.inductor_worker) did not start: {}", kInstallHint, s.argv[0], why));
    }
  }

  [[noreturn]] void died(const char* when) {
    child_->finish();
    ProcessResult r = child_->wait_result();
    child_.reset();
    std::string how = r.signal ? fmt::format("killed by signal {}", r.signal) : fmt::format("exit status {}", r.exit_code);
    throw CompileFailure(FailureKind::crash, fmt::format("the Inductor worker died ({}) {}: {}", how, when, last_lines(r.err)));
  }

  static std::string last_lines(const std::string& text) {
    std::string t = text;
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    size_t from = t.size();
    for (int k = 0; k < 3 && from != std::string::npos && from > 0; ++k) from = t.rfind('\n', from - 1);
    std::string tail = from == std::string::npos ? t : t.substr(from + 1);
    for (char& c : tail)
      if (c == '\n') c = ' ';
    return tail.empty() ? "(it printed nothing)" : utf8_safe(tail.substr(tail.size() > 600 ? tail.size() - 600 : 0));
  }

  std::mutex mu_;
  std::unique_ptr<LineChild> child_;
};

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
    json reply = InductorWorker::get().ask(request);
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
