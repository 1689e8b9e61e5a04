// `reprokit analyze BUNDLE_DIR`: per-node accuracy analysis.
#include "command.h"
#include "reprokit/harness/analyze.h"

namespace reprokit::cli {

static int run_analyze(const std::vector<std::string>& argv) {
  Args args(argv, {}, {"--per-node", "--triangulate"});
  if (args.positional().size() != 1) throw UsageError("expected exactly one BUNDLE_DIR");
  AnalyzeOptions o{args.positional()[0], args.has("--per-node")};
  return args.has("--triangulate") ? triangulate_bundle(o) : analyze_bundle(o);
}

static CommandRegistration reg({"analyze", "reprokit analyze BUNDLE_DIR [--per-node] [--triangulate]",
                                "per-node error of the compiled graph against float64; names the first node that diverges",
                                "  --per-node      capture every node (disturbs fusion) instead of kernel boundaries\n"
                                "  --triangulate   cpp and cuda (needs a GPU) against float64 side by side: which backend is wrong,\n"
                                "                  per output and node; a fault planted with --inject stays in the bundle's backend\n"
                                "Writes analyze.json and analyze.svg (analyze-2.*, ... never overwriting) into the bundle, or\n"
                                "triangulate.json with --triangulate. Exit status 1 when a node diverges.",
                                run_analyze});

}  // namespace reprokit::cli
