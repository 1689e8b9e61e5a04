// `reprokit analyze BUNDLE_DIR`: per-node accuracy analysis.
#include "command.h"
#include "reprokit/harness/analyze.h"

namespace reprokit::cli {

static int run_analyze(const std::vector<std::string>& argv) {
  Args args(argv, {}, {"--per-node"});
  if (args.positional().size() != 1) throw UsageError("expected exactly one BUNDLE_DIR");
  return analyze_bundle({args.positional()[0], args.has("--per-node")});
}

static CommandRegistration reg({"analyze", "reprokit analyze BUNDLE_DIR [--per-node]",
                                "per-node error of the compiled graph against float64; names the first node that diverges",
                                "  --per-node   capture every node (disturbs fusion) instead of kernel boundaries\n"
                                "Writes analyze.json and analyze.svg (analyze-2.*, ... never overwriting) into the bundle.\n"
                                "Exit status 1 when a node diverges.",
                                run_analyze});

}  // namespace reprokit::cli
