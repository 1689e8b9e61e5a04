// `reprokit minify BUNDLE_DIR` and the hidden `reprokit minify-worker` it runs its oracles in.
#include <fmt/core.h>

#include <filesystem>
#include <sstream>

#include "command.h"
#include "reprokit/process/self_executable.h"
#include "reprokit/minifier/minify_bundle.h"
#include "reprokit/minifier/worker.h"
#include "reprokit/minifier/compiler_decisions.h"
#include "reprokit/minifier/failure_named_guesses.h"
#include "reprokit/minifier/reducer.h"
#include "reprokit/support/command_words.h"

namespace reprokit::cli {

static int run_minify(const std::vector<std::string>& argv) {
  Args args(argv, with_session_flags({"--memory-limit"}, true), with_session_flags({"--any-accuracy", "--list-strategies"}, false));
  if (args.has("--list-strategies")) {
    fmt::print("{:<16} {}\n", kNamedInFailure, kNamedInFailureDescription);  // first guesses, tried before any strategy
    // The removals, the one guess of every simplification at once, then the simplifications.
    for (auto& s : strategy_table())
      if (s.removes_nodes) fmt::print("{:<16} {}\n", s.name, s.description);
    fmt::print("{:<16} {}\n", kSimplifyAll, kSimplifyAllDescription);
    for (auto& s : strategy_table())
      if (!s.removes_nodes) fmt::print("{:<16} {}\n", s.name, s.description);
    return 0;
  }
  if (args.positional().size() != 1) throw UsageError("expected exactly one BUNDLE_DIR");
  MinifyCommandOptions o;
  o.bundle_dir = args.positional()[0];
  o.reprokit_exe = self_executable();
  o.session = session_options(args, 8);
  o.memory_limit_mb = args.get_int("--memory-limit", 0);
  o.any_accuracy = args.has("--any-accuracy");
  return minify_bundle(o);
}

static int run_worker(const std::vector<std::string>& argv) {
  Args args(argv, {"--query"}, {});
  if (args.positional().size() != 1) throw UsageError("expected exactly one BUNDLE_DIR");
  return run_minify_worker(args.positional()[0], args.get_or("--query", ""));
}

static CommandRegistration reg({"minify", "reprokit minify BUNDLE_DIR [--jobs N] [--timeout S] [--resume] [--worker-prefix CMD] [--work-dir DIR]",
                                "minify a saved failure to the smallest graph that fails the same way",
                                "  --jobs N            oracle worker processes (default 1); the result does not depend on N\n"
                                "  --timeout S         least seconds per query (default: 3x the original's run + 5, at least 10); the limit grows\n"
                                "                      with what candidates cost; a query past it is asked again with twice the\n"
                                "                      limit, then is unknown (never 'not interesting'); for a hang bundle, the hang threshold\n"
                                "  --memory-limit MB   address-space limit of each worker\n"
                                "  --resume            continue from the best repro an interrupted run left behind\n"
                                "  --only A,B          run only these strategies;  --skip A,B  never run these\n"
                                "  --list-strategies   list the strategies in run order\n"
                                "  --any-accuracy      also accept candidates whose accuracy failure is only in integer/bool outputs\n"
                                "  --flaky-checks N    most runs of the original used to measure a flaky failure rate (default 8;\n"
                                "                      after 3 runs it stops once 15 s are spent)\n"
                                "  --no-verify         skip the final rerun of the repro in a fresh process\n"
                                "  --worker-prefix CMD run every worker under this launcher, e.g. \"srun -N1 -n1 --gres=gpu:1\" or\n"
                                "                      \"ssh HOST\" (words split as a shell would, but no shell runs; docs/CLUSTER.md)\n"
                                "  --work-dir DIR      queries and state here instead of BUNDLE/minify_work (a directory all workers see)",
                                run_minify});

static CommandRegistration worker_reg({"minify-worker", "reprokit minify-worker BUNDLE_DIR [--query FILE]",
                                       "oracle worker of the minifier (internal); with --query, reruns one saved query by hand", "", run_worker,
                                       true});

}  // namespace reprokit::cli
