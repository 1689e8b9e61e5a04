// `reprokit bisect BUNDLE_DIR` and its hidden per-try command `reprokit bisect-step`.
#include <filesystem>

#include "command.h"
#include "reprokit/process/self_executable.h"
#include "reprokit/harness/bisect.h"

namespace reprokit::cli {

static int run_bisect(const std::vector<std::string>& argv) {
  Args args(argv, {"--timeout"}, {});
  if (args.positional().size() != 1) throw UsageError("expected exactly one BUNDLE_DIR");
  BisectOptions o;
  o.bundle_dir = args.positional()[0];
  o.reprokit_exe = self_executable();
  o.timeout_s = args.get_double("--timeout", 0);
  return bisect_bundle(o);
}

static int run_step(const std::vector<std::string>& argv) {
  Args args(argv, {}, {});
  if (args.positional().size() != 2) throw UsageError("expected BUNDLE_DIR STEP_JSON");
  return run_bisect_step(args.positional()[0], args.positional()[1]);
}

static CommandRegistration reg(
    {"bisect", "reprokit bisect BUNDLE_DIR [--timeout S]",
     "find the first stage, then pass, then pass rewrite that introduces a bundle's failure (for onnxruntime: ORT's level, optimiser and rewrite "
     "rule; for inductor: torch.compile's backend, then CompilerBisector's subsystems and their applications)",
     "  --timeout S   seconds per try before it counts as a hang (default: from the bundle, or 120)\n"
     "Writes bisect.json (bisect-2.json, ... never overwriting) into the bundle.",
     run_bisect});
static CommandRegistration step_reg({"bisect-step", "reprokit bisect-step BUNDLE_DIR STEP_JSON", "one try of bisect (internal)", "", run_step, true});

}  // namespace reprokit::cli
