// `reprokit repro REPRO.rk`: reruns a repro in a fresh process and says whether the failure still
// happens (exit 1, REPRODUCED) or not (exit 0, NOT REPRODUCED). A crash is judged by the child's
// signal, a hang by a timeout.
#include <fmt/core.h>

#include <csignal>
#include <cstring>
#include <filesystem>

#include "command.h"
#include "reprokit/harness/repro_file.h"
#include "reprokit/ir/errors.h"
#include "reprokit/process/subprocess.h"

namespace reprokit::cli {

namespace {

constexpr const char* kResultTag = "REPROKIT-RESULT ";

std::string self_exe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "reprokit" : p.string();
}

// Runs the repro in a child process and classifies what happened there.
Failure run_in_child(const std::string& path, const ReproFile& r, double timeout_s, std::string& child_stderr) {
  ProcessSpec spec;
  spec.argv = {self_exe(), "repro", "--in-process", path};
  spec.timeout_s = timeout_s;
  ProcessResult res = run_process(spec);
  child_stderr = res.err;
  if (res.timed_out) return Failure{"timeout", fmt::format("no result within {}s (a hang)", timeout_s), "timeout", 0};
  if (res.signal) return Failure{"crash", fmt::format("the process was killed by signal {} ({})", res.signal, strsignal(res.signal)), strsignal(res.signal), res.signal};
  auto pos = res.out.rfind(kResultTag);
  if (pos == std::string::npos) {
    if (res.exit_code == 2) throw UserError(fmt::format("{}: the repro could not run: {}", path, res.err));
    return Failure{"runtime_error", fmt::format("the process exited with status {} without a result: {}", res.exit_code, res.err),
                   normalise_signature(res.err), 0};
  }
  std::string line = res.out.substr(pos + std::strlen(kResultTag));
  line = line.substr(0, line.find('\n'));
  (void)r;
  return Failure::from_json(nlohmann::json::parse(line));
}

}  // namespace

static int run_repro(const std::vector<std::string>& argv) {
  Args args(argv, {"--timeout"}, {"--in-process"});
  if (args.positional().size() != 1) throw UsageError("expected exactly one REPRO.rk");
  const std::string& path = args.positional()[0];
  ReproFile r = load_repro_file(path);
  if (args.has("--in-process")) {
    Failure f = run_and_classify(r.spec, r.graph, r.inputs);
    fmt::print("{}{}\n", kResultTag, f.to_json().dump());
    return 0;
  }
  double timeout = args.get_double("--timeout", r.spec.timeout_s > 0 ? r.spec.timeout_s * 2 + 5 : 300);
  if (r.spec.expected.kind == "timeout" && !args.has("--timeout")) timeout = r.spec.timeout_s > 0 ? r.spec.timeout_s : 10;
  std::string child_err;
  Failure got;
  for (int attempt = 1; attempt <= r.spec.attempts; ++attempt) {  // a flaky failure may need a few runs
    got = run_in_child(path, r, timeout, child_err);
    if (same_failure(r.spec.expected, got)) {
      fmt::print("REPRODUCED: {}: {}{}\n", got.kind, got.message.substr(0, got.message.find('\n')),
                 r.spec.attempts > 1 ? fmt::format(" (on run {} of at most {})", attempt, r.spec.attempts) : "");
      return 1;
    }
  }
  fmt::print("NOT REPRODUCED\n");
  if (got.failed())
    fmt::print("  a different failure happened instead: {}: {}\n  expected: {}: {}\n", got.kind, got.message.substr(0, got.message.find('\n')),
               r.spec.expected.kind, r.spec.expected.signature);
  return 0;
}

static CommandRegistration reg({"repro", "reprokit repro REPRO.rk [--timeout S]",
                                "rerun a repro in a fresh process: exit 1 and REPRODUCED, or exit 0 and NOT REPRODUCED",
                                "  --timeout S   seconds before the rerun counts as a hang (default: from the repro, or 300)",
                                run_repro});

}  // namespace reprokit::cli
