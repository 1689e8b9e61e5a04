// The Python workers of this process (see python_worker.h).
#include "python_worker.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "reprokit/codegen/compiled_graph.h"
#include "reprokit/ir/names.h"
#include "reprokit/process/subprocess.h"
#include "reprokit/support/errors.h"

namespace reprokit {

namespace {

using nlohmann::json;

// How long a worker may take to start (an `import torch` on a cold disk takes seconds).
constexpr double kWorkerStartSeconds = 300;

// The last lines of a worker's stderr, on one line: what it said before it died.
std::string last_lines(const std::string& text) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  if (t.empty()) return "(it printed nothing)";
  size_t from = t.size();
  for (int k = 0; k < 3 && from != std::string::npos && from > 0; ++k) from = t.rfind('\n', from - 1);
  std::string tail = from == std::string::npos ? t : t.substr(from + 1);
  for (char& c : tail)
    if (c == '\n') c = ' ';
  return tail.empty() ? "(it printed nothing)" : utf8_safe(tail.substr(tail.size() > 600 ? tail.size() - 600 : 0));
}

class PythonWorker {
 public:
  explicit PythonWorker(PythonWorkerSpec spec) : spec_(std::move(spec)) {}

  json ask(const json& request) {
    std::lock_guard<std::mutex> lock(mu_);
    start_if_needed();
    if (!child_->write_line(request.dump())) died("while it was sent a graph");
    std::optional<std::string> line = child_->read_line(0);
    if (!line) died("while it compiled or ran a graph");
    json reply;
    try {
      reply = json::parse(*line);
    } catch (const json::exception&) {
      throw UserError(fmt::format("the {} worker answered something that is not a reply: {}", spec_.compiler, utf8_safe(line->substr(0, 300))));
    }
    // A worker that serves from forked children (inductor's) outlives a child that died on this
    // request, and says so: a crash, told as a worker's death is.
    if (reply.is_object() && reply.value("kind", "") == "worker_died")
      throw CompileFailure(FailureKind::crash,
                           death(json_int(reply, "signal"), json_int(reply, "exit_code"), "while it compiled or ran a graph", child_->stderr_tail()));
    // Its last answer (a GPU fault cost it CUDA's context): the next request starts a fresh one.
    if (reply.is_object() && reply.value("worker_ends", false)) {
      child_->finish();
      child_.reset();
    }
    return reply;
  }

 private:
  std::string command() const {
    std::string s = "-m";
    for (const std::string& a : spec_.module) s += " " + a;
    return s;
  }

  void start_if_needed() {
    if (child_ && child_->alive()) return;
    child_.reset();
    ProcessSpec s;
    s.argv = {python_interpreter(), "-m"};
    s.argv.insert(s.argv.end(), spec_.module.begin(), spec_.module.end());
    const char* pp = std::getenv("PYTHONPATH");
    s.env_set["PYTHONPATH"] = std::string(REPROKIT_PYTHON_DIR) + (pp && *pp ? std::string(":") + pp : "");
    try {
      child_ = std::make_unique<LineChild>(s);
    } catch (const std::exception& e) { throw UserError(fmt::format("{}: cannot start {}: {}", spec_.install_hint, s.argv[0], e.what())); }
    std::optional<std::string> ready = child_->read_line(kWorkerStartSeconds);
    json hello;
    try {
      if (ready) hello = json::parse(*ready);
    } catch (const json::exception&) {}
    if (!hello.is_object() || !hello.value("ready", false)) {
      std::string why =
          child_->timed_out() ? fmt::format("it did not start within {} s", kWorkerStartSeconds) : last_lines(child_->wait_result().err);
      child_.reset();
      throw UserError(fmt::format("{}: the worker ({} {}) did not start: {}", spec_.install_hint, s.argv[0], command(), why));
    }
  }

  [[noreturn]] void died(const char* when) {
    child_->finish();
    ProcessResult r = child_->wait_result();
    child_.reset();
    throw CompileFailure(FailureKind::crash, death(r.signal, r.exit_code, when, r.err));
  }

  std::string death(int signal, int exit_code, const char* when, const std::string& err) const {
    std::string how = signal ? fmt::format("killed by signal {} ({})", signal, strsignal(signal)) : fmt::format("exit status {}", exit_code);
    return fmt::format("the {} worker died ({}) {}: {}", spec_.compiler, how, when, last_lines(err));
  }

  // A small integer field of a worker's reply (0 where absent or not one).
  static int json_int(const json& reply, const char* key) {
    const json v = reply.value(key, json());
    return v.is_number_integer() && v.get<int64_t>() > -1000 && v.get<int64_t>() < 1000 ? static_cast<int>(v.get<int64_t>()) : 0;
  }

  PythonWorkerSpec spec_;
  std::mutex mu_;
  std::unique_ptr<LineChild> child_;
};

}  // namespace

std::string python_interpreter() {
  if (const char* e = std::getenv("REPROKIT_PYTHON"); e && *e) return e;
#ifdef REPROKIT_INSTALLED_PYTHON
  if (::access(REPROKIT_INSTALLED_PYTHON, X_OK) == 0) return REPROKIT_INSTALLED_PYTHON;
#endif
  const std::string venv = std::string(REPROKIT_SOURCE_DIR) + "/.venv/bin/python";
  if (::access(venv.c_str(), X_OK) == 0) return venv;
  return "python3";
}

json ask_python_worker(const PythonWorkerSpec& spec, const json& request) {
  // One worker per module and arguments, for the life of the process.
  static std::mutex mu;
  static std::map<std::vector<std::string>, std::unique_ptr<PythonWorker>> workers;
  PythonWorker* w;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto& slot = workers[spec.module];
    if (!slot) slot = std::make_unique<PythonWorker>(spec);
    w = slot.get();
  }
  return w->ask(request);
}

std::string python_worker_version(const PythonWorkerSpec& spec, double timeout_s) {
  ProcessSpec s;
  s.argv = {python_interpreter(), "-m"};
  s.argv.insert(s.argv.end(), spec.module.begin(), spec.module.end());
  const char* pp = std::getenv("PYTHONPATH");
  s.env_set["PYTHONPATH"] = std::string(REPROKIT_PYTHON_DIR) + (pp && *pp ? std::string(":") + pp : "");
  s.timeout_s = timeout_s;  // stdin is empty: the worker says it is ready, then ends
  try {
    const ProcessResult r = run_process(s);
    const json hello = json::parse(r.out.substr(0, r.out.find('\n')), nullptr, false);
    if (hello.is_object() && hello.contains("version") && hello["version"].is_string()) return hello["version"].get<std::string>();
  } catch (const std::exception&) {}
  return "unknown";
}

}  // namespace reprokit
