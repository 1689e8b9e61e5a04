// `reprokit fuzz -o CAMPAIGN`: generated graphs through the stack (or a user's check), every
// finding minified in the same run and grouped into distinct bugs (campaign/campaign.h).
#include <fmt/core.h>

#include "command.h"
#include "reprokit/campaign/campaign.h"
#include "reprokit/codegen/backend.h"

namespace reprokit::cli {

// What a campaign is (its graphs and how they are judged) is fixed when it starts: a resumed one
// keeps it, so these flags are refused with --resume rather than silently ignored. --check is the
// exception: a resumed campaign runs no command read from its state.json, so a campaign judged by
// a check is resumed only with the same --check given again.
static const std::vector<std::string> kCampaignDefiningFlags = {"--seed",     "--max-nodes", "--ops",    "--skip-ops",   "--backend",
                                                                "--train",    "--timeout",   "--format", "--fail-regex", "--unsupported-regex",
                                                                "--no-minify"};

static int run_fuzz(const std::vector<std::string>& argv) {
  Args args(argv,
            {"-o", "--budget", "--seed", "--max-nodes", "--ops", "--skip-ops", "--backend", "--jobs", "--timeout", "--check", "--format",
             "--fail-regex", "--unsupported-regex", "--max-graphs"},
            {"--train", "--resume", "--no-minify"});
  if (!args.positional().empty()) throw UsageError("unexpected argument '" + args.positional()[0] + "'");
  if (!args.get("-o")) throw UsageError("-o CAMPAIGN is required");
  CampaignOptions o;
  o.dir = *args.get("-o");
  o.budget_s = args.get_double("--budget", 60);
  if (!(o.budget_s > 0 && o.budget_s <= 30 * 86400)) throw UsageError(fmt::format("--budget expects seconds in (0, 2592000], got {}", o.budget_s));
  o.jobs = jobs_flag(args);
  o.max_graphs = args.get_int("--max-graphs", 0);
  if (o.max_graphs < 0) throw UsageError("--max-graphs must not be negative");
  o.resume = args.has("--resume");
  if (o.resume) {
    for (const std::string& flag : kCampaignDefiningFlags)
      if (args.has(flag) || args.get(flag))
        throw UsageError(fmt::format("{} with --resume: a resumed campaign keeps the options it started with (see CAMPAIGN/state.json)", flag));
    o.check = args.get_or("--check", "");
    return run_campaign(o);
  }
  const long seed = args.get_int("--seed", 1);
  if (seed < 0) throw UsageError(fmt::format("--seed expects a non-negative integer, got {}", seed));
  o.seed = static_cast<uint64_t>(seed);
  o.generator = generator_options(args);
  o.timeout_s = args.get_double("--timeout", 30);
  if (!(o.timeout_s >= 0.1 && o.timeout_s <= 86400)) throw UsageError(fmt::format("--timeout expects seconds in [0.1, 86400], got {}", o.timeout_s));
  o.minify = !args.has("--no-minify");
  if (auto check = args.get("--check")) {
    if (args.get("--backend")) throw UsageError("--backend and --check exclude each other: the check is the compiler under test");
    if (o.generator.train) throw UsageError("--train and --check exclude each other: a check runs the model forward");
    o.check = *check;
    o.format = args.get_or("--format", "onnx");
    if (o.format != "rk" && o.format != "onnx") throw UsageError(fmt::format("--format expects rk or onnx, got '{}'", o.format));
    o.fail_regex = args.get_or("--fail-regex", "");
    o.unsupported_regex = args.get_or("--unsupported-regex", "");
  } else {
    if (args.get("--format") || args.get("--fail-regex") || args.get("--unsupported-regex"))
      throw UsageError("--format, --fail-regex and --unsupported-regex go with --check");
    o.backends = csv_items(args.get_or("--backend", "cpp"));
    if (o.backends.empty()) throw UsageError("--backend expects B[,B...]");
    for (auto& b : o.backends)
      if (!find_backend(b)) throw UsageError("--backend must list " + backend_choices() + "; got '" + b + "'");
  }
  return run_campaign(o);
}

static CommandRegistration reg(
    {"fuzz",
     "reprokit fuzz -o CAMPAIGN [--budget S] [--seed N] [--max-nodes N] [--ops A,B|--skip-ops A,B] [--backend B,..] [--train] [--jobs N] "
     "[--check \"CMD {}\" [--format onnx|rk]] [--resume]",
     "find bugs: random graphs through the stack (or any compiler's check), each finding minified and grouped",
     "  -o CAMPAIGN         the campaign's directory (new; an existing one only with --resume): state.json, report.json,\n"
     "                      SUMMARY.txt and findings/<id>/ (finding.json, model.rk, inputs/, and bundles/ minified in\n"
     "                      place or reduced/ from `reprokit reduce`)\n"
     "  --budget S          seconds to spend (default 60): no new graph starts after them; a minification under way finishes\n"
     "  --seed N            the campaign seed (default 1); graph i is `reprokit generate --seed N`'s graph i\n"
     "  --max-nodes N       ops per graph, 1..N (default 8)\n"
     "  --ops A,B           only these ops; --skip-ops A,B: every op of the table but these\n"
     "  --backend B,..      the backends each graph runs on (default cpp): `reprokit run` under REPRO_AFTER=aot\n"
     "                      REPRO_LEVEL=4 (errors, crashes, hangs and accuracy against float64); a backend that cannot\n"
     "                      run on this machine (no CUDA driver, no Node.js, no torch) is refused before the campaign starts\n"
     "  --train             inputs require grad; each graph also runs with --train (forward and backward)\n"
     "  --jobs N            graphs judged at once, and each minification's --jobs (default 1)\n"
     "  --timeout S         REPRO_TIMEOUT of each run, or the check's limit (default 30)\n"
     "  --check \"CMD {}\"    judge each graph by this command instead of reprokit's stack, as `reprokit reduce` runs it\n"
     "                      ({} is the model; its inputs are inputs/<name>.npy beside it; non-zero exit: a finding;\n"
     "                      126/127: the check cannot run, exit 2); findings are reduced with `reprokit reduce`\n"
     "  --format onnx|rk    the format the check is handed (default onnx)\n"
     "  --fail-regex RE     with --check: a finding when the check's output matches RE, whatever its exit status\n"
     "  --unsupported-regex RE  with --check: a passing check whose output matches RE counts as \"unsupported\" (the\n"
     "                      compiler declined the graph), not as passed\n"
     "  --max-graphs N      stop after N graphs (default: the budget decides)\n"
     "  --no-minify         record findings without minifying them\n"
     "  --resume            continue the campaign in CAMPAIGN (its options are kept; --budget, --jobs and --max-graphs\n"
     "                      are this run's; a campaign judged by a check needs the same --check again: no command\n"
     "                      is taken from state.json); Ctrl-C leaves a campaign that --resume continues\n"
     "environment: REPRO_INJECT / REPRO_INJECT_PASS plant a bug in every run (a graph without the op runs clean)\n"
     "exit status: 0 the campaign ran (SUMMARY.txt says what it found); 2 bad input",
     run_fuzz});

}  // namespace reprokit::cli
