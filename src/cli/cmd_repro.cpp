// `reprokit repro REPRO.rk`: reruns a repro in a fresh process and says whether the failure still
// happens (exit 1, REPRODUCED) or not (exit 0, NOT REPRODUCED). A crash is judged by the child's
// signal, a hang by a timeout.
#include <fmt/core.h>

#include <csignal>
#include <cstring>
#include <filesystem>

#include "command.h"
#include "reprokit/harness/child_run.h"
#include "reprokit/harness/repro_file.h"
#include "reprokit/support/errors.h"
#include "reprokit/process/subprocess.h"

namespace reprokit::cli {

static int run_repro(const std::vector<std::string>& argv) {
  Args args(argv, {"--timeout"}, {"--in-process"});
  if (args.positional().size() != 1) throw UsageError("expected exactly one REPRO.rk");
  const std::string& path = args.positional()[0];
  ReproFile r = load_repro_file(path);
  if (args.has("--in-process")) {
    fmt::print("{}\n", verdict_line(run_and_classify(r.spec, r.graph, r.inputs)));
    return 0;
  }
  const Rerun rerun = rerun_repro(path, r.spec, args.get_double("--timeout", rerun_timeout(r.spec)));
  const Failure& got = rerun.got;
  if (rerun.reproduced) {
    fmt::print("REPRODUCED: {}: {}{}\n", got.kind_name(), got.message.substr(0, got.message.find('\n')),
               r.spec.attempts > 1 ? fmt::format(" (on run {} of at most {})", rerun.runs, r.spec.attempts) : "");
    return 1;
  }
  fmt::print("NOT REPRODUCED\n");
  if (got.failed())
    fmt::print("  a different failure happened instead: {}: {}\n  expected: {}: {}\n", got.kind_name(), got.message.substr(0, got.message.find('\n')),
               r.spec.expected.kind_name(), r.spec.expected.signature);
  return 0;
}

static CommandRegistration reg({"repro", "reprokit repro REPRO.rk [--timeout S]",
                                "rerun a repro in a fresh process: exit 1 and REPRODUCED, or exit 0 and NOT REPRODUCED",
                                "  --timeout S   seconds before the rerun counts as a hang (default: from the repro, or 300)", run_repro});

}  // namespace reprokit::cli
