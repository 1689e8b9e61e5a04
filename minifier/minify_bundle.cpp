// `reprokit minify` (see minify_bundle.h).
#include "reprokit/minifier/minify_bundle.h"

#include <fmt/core.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "reprokit/codegen/backend.h"
#include "reprokit/codegen/passes/pass_manager.h"
#include "reprokit/harness/child_run.h"
#include "reprokit/harness/repro_file.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/json_format.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/minifier/probe.h"
#include "reprokit/minifier/progress_printer.h"
#include "reprokit/minifier/reducer.h"
#include "reprokit/minifier/report_json.h"
#include "reprokit/minifier/subprocess_oracle.h"
#include "reprokit/process/subprocess.h"
#include "reprokit/runtime/interpreter.h"
#include "reprokit/support/files.h"

namespace reprokit {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// The number after the last query an earlier run saved in `queries` (q00001.json, ...), so a
// resumed run never overwrites them.
int64_t next_query_number(const Dir& queries) { return next_number_after(queries.list(), "q", ".json"); }

// The strategies of the table that options select and that apply to the spec, in table order.
std::vector<Strategy> selected_strategies(const MinifyCommandOptions& o, const ReproSpec& spec) {
  const CompileOptions& c = spec.options.compile;
  const bool has_passes = passes_run(c);
  std::vector<Strategy> out;
  for (auto& s : strategy_table())
    if ((o.only.empty() || o.only.count(s.name)) && !o.skip.count(s.name) && (has_passes || !s.compiler_only)) out.push_back(s);
  return out;
}

int enabled_passes(const ReproSpec& spec) {
  const CompileOptions& c = spec.options.compile;
  if (!passes_run(c)) return 0;
  int n = 0;
  for (auto& p : pass_table()) n += !c.disabled_passes.count(p.name) && !(c.pass_limits.count(p.name) && c.pass_limits.at(p.name) == 0);
  return n;
}

}  // namespace

int minify_bundle(const MinifyCommandOptions& o) {
  auto t0 = Clock::now();
  Bundle b = load_bundle(o.bundle_dir);
  fs::path dir(o.bundle_dir);
  // Ctrl-C or a kill: the workers go with us (the message changes once a repro is on disk).
  on_termination_signal("\n[minify] interrupted before any repro was written: nothing to resume\n");
  adopt_orphans();  // a daemon a check or worker leaves behind is stopped, not left running (subprocess.h)
  Dir bundle = Dir::open(o.bundle_dir);
  // The work directory: minify_work in the bundle, or --work-dir (shared with other machines).
  Dir work = o.work_dir.empty() ? bundle.sub("minify_work", true) : Dir::create(o.work_dir);  // a symlink there is refused, never followed
  if (!o.resume) work.remove_tree("state.json");
  fmt::print(stderr, "[minify] bundle {}: graph {} ({} ops), stage {}, backend {}\n", o.bundle_dir, b.graph.name, b.graph.num_ops(), b.spec.stage,
             b.spec.options.compile.backend);

  WorkerPoolOptions wo;
  wo.reprokit_exe = o.reprokit_exe;
  wo.bundle_dir = fs::absolute(dir).string();
  wo.work_dir = fs::absolute(work.path()).string();
  wo.prefix = o.worker_prefix;
  if (o.resume && work.is_dir("queries")) wo.first_query = next_query_number(work.sub("queries"));
  wo.jobs = o.jobs;
  wo.memory_limit_mb = o.memory_limit_mb;
  wo.any_accuracy = o.any_accuracy;
  // Until the original has been timed, allow generously (a compile may be cold).
  bool hang = b.spec.expected.kind == FailureKind::timeout;
  wo.timeout_s = o.timeout_s > 0 ? o.timeout_s : (hang && b.spec.timeout_s > 0 ? b.spec.timeout_s : 300);
  Failure expected = b.spec.expected;
  Candidate original;
  original.graph = b.graph;

  // 1. The original must fail, and fail the way the bundle says (a level-3 bundle is classified now).
  //    The probe's workers end before the reduction's start (no step held twice on a cluster).
  ProbeOptions po;
  po.runs = hang ? 1 : std::max(1, o.flaky_checks);
  po.look_until = expected.failed() && !hang ? 10 : po.runs;
  fmt::print(stderr, "[minify] checking that the original fails ({} runs{})...\n", po.runs,
             po.runs > po.min_runs ? fmt::format(" at most; after {}, no more than {:.0f} s", po.min_runs, po.budget_s) : "");
  ProbeResult pr;
  {
    SubprocessOracle probe(wo, expected);
    pr = probe_original(po, [&] {
      Verdict v = probe.run_one(original);
      const Failure& f = v.got;
      if (!v.unknown && !expected.failed() && f.failed() && f.kind != FailureKind::invalid_candidate) expected = f;
      return Verdict{!v.unknown && minifier_interesting(expected, f, o.any_accuracy), f};
    });
  }
  if (pr.fails == 0) {
    fmt::print(stderr, "[minify] the original graph does not fail in {} run{}: nothing to minify.\n", pr.runs, pr.runs == 1 ? "" : "s");
    if (pr.other.failed()) fmt::print(stderr, "[minify] it failed differently instead: {}: {}\n", pr.other.kind_name(), pr.other.message.substr(0, 200));
    fmt::print(stderr, "[minify] expected: {}: {}\n", expected.failed() ? expected.kind_name() : "(any failure)", expected.signature);
    return 1;
  }
  const double rate = pr.rate();
  const double slowest = pr.slowest_s;
  MinifyOptions mo;
  mo.flaky_attempts = pr.attempts_per_candidate();
  if (rate < 1)
    fmt::print(stderr, "[minify] the failure is flaky: it happened in {} of {} runs ({:.0f}%); each candidate gets up to {} tries\n", pr.fails, pr.runs,
               rate * 100, mo.flaky_attempts);
  wo.timeout_s = o.timeout_s > 0 ? o.timeout_s : expected.kind == FailureKind::timeout ? wo.timeout_s : std::max(10.0, 3 * slowest + 5);
  wo.first_query = next_query_number(work.sub("queries"));  // after the probe's queries
  SubprocessOracle oracle(wo, expected);
  fmt::print(stderr, "[minify] failure: {}: {}\n[minify] per-query time limit {}, {} worker{}\n", expected.kind_name(),
             expected.message.substr(0, expected.message.find('\n')), oracle.limit().describe("a hang"), wo.jobs, wo.jobs == 1 ? "" : "s");

  // 2. Resume from the best candidate an earlier run left behind.
  Candidate start = original;
  if (o.resume && work.exists("state.json")) {
    start = read_best_candidate(work);
    fmt::print(stderr, "[minify] resuming from {} ({} ops)\n", work.path("state.json"), start.graph.num_ops());
  }

  // 3. Reduce; after every success the best repro so far is on disk and runnable.
  KnownValues values(b);
  if (o.resume && work.exists("state.json")) {  // untrusted: every window and index must fit
    try {
      candidate_inputs(start, b, values);
    } catch (const UserError& e) {
      throw UserError(fmt::format("{}: {}", work.path("state.json"), e.what()));
    }
  }
  ReproSpec spec = b.spec;
  spec.expected = expected;
  if (expected.kind == FailureKind::timeout && spec.timeout_s <= 0) spec.timeout_s = wo.timeout_s;
  spec.attempts = mo.flaky_attempts;
  int start_nodes = b.graph.num_ops();
  ProgressPrinter printer("minify", start_nodes);
  auto save = [&](const Candidate& c, const std::string& how, const PassingTwin* twin = nullptr, const std::vector<Tensor>* compiled = nullptr) {
    write_repro_files(dir.string(), c.graph, candidate_inputs(c, b, values), candidate_spec(spec, c), how, twin, compiled);
    work.write("state.json", json{{"best", c.to_json()}}.dump());
  };
  save(start, "Minification in progress: this is the best repro so far.");
  on_termination_signal(fmt::format("\n[minify] interrupted: the best repro so far is {}\n[minify] continue with: {}\n", (dir / "repro.rk").string(),
                                    shell_quote_command({o.reprokit_exe, "minify", o.bundle_dir, "--resume"})));
  MinifyCallbacks cb;
  cb.on_success = [&](const Candidate& c, const MinifyProgress& p) {
    save(c, "Minification in progress: this is the best repro so far.");
    printer.line(p, true);
  };
  cb.on_progress = [&](const MinifyProgress& p) { printer.line(p, false); };
  if (rate < 1) mo.restarts = 2;  // a flaky oracle can still say "passes" wrongly
  MinifyResult r = reduce(start, selected_strategies(o, b.spec), oracle, mo, cb);
  printer.done();
  oracle.release();
  report_time_limits("minify", r, oracle.limit().largest_given_s());
  const ReproSpec final_spec = candidate_spec(spec, r.best);
  std::string how = fmt::format("Minified by reprokit from {} to {} ops, {} to {} input elements, {} to {} compiler passes, in {} queries ({:.1f}s).",
                                start_nodes, r.best.graph.num_ops(), input_elements(b.graph), input_elements(r.best.graph), enabled_passes(b.spec),
                                enabled_passes(final_spec), r.queries, r.seconds);
  std::optional<PassingTwin> twin;
  if (r.twin) {
    twin = PassingTwin{r.twin->graph, candidate_inputs(*r.twin, b, values), candidate_spec(spec, *r.twin), describe_difference(r.best, *r.twin), {}};
    fmt::print(stderr, "[minify] passing twin: {}\n", twin->difference);
  }
  // An accuracy bug: the compiled outputs go beside the repro (and the twin), so repro_torch.py
  // shows the difference to whoever gets the report without reprokit.
  std::optional<std::vector<Tensor>> compiled;
  if (expected.kind == FailureKind::accuracy && (spec.failing_samples.empty() || spec.failing_samples.front() == 0)) {
    compiled = compiled_outputs(final_spec, r.best.graph, candidate_inputs(r.best, b, values));
    if (twin) twin->compiled = compiled_outputs(twin->spec, twin->graph, twin->inputs);
  }
  save(r.best, how, twin ? &*twin : nullptr, compiled ? &*compiled : nullptr);

  // 4. Verify in a fresh process, as a user would rerun it.
  bool reproduced = true;
  std::string verify_cmd = shell_quote_command({o.reprokit_exe, "repro", (dir / "repro.rk").string()});
  if (o.verify) {
    ProcessSpec ps;
    ps.argv = {o.reprokit_exe, "repro", (dir / "repro.rk").string()};
    ps.timeout_s = wo.timeout_s * 3 + 30;
    ProcessResult pr = run_process(ps);
    reproduced = pr.exit_code == 1 && pr.out.find("REPRODUCED") != std::string::npos;
    if (!reproduced)
      fmt::print(stderr,
                 "\n[minify] !!! WARNING: the final repro did NOT reproduce the failure in a fresh process !!!\n"
                 "[minify] !!! {}\n[minify] !!! output: {}{}\n",
                 verify_cmd, pr.out, pr.err);
  }

  // 5. Report.
  json report = reduction_report(r, b.graph, rate, twin ? twin->difference : "");
  report.update({{"bundle", o.bundle_dir},
                 {"failure", expected.to_json()},
                 {"original_passes", enabled_passes(b.spec)},
                 {"final_passes", enabled_passes(final_spec)},
                 {"seconds", std::chrono::duration<double>(Clock::now() - t0).count()},
                 {"jobs", o.jobs},
                 {"verified", o.verify ? json(reproduced) : json(nullptr)},
                 {"rerun", verify_cmd}});
  bundle.write("report.json", report.dump(2) + "\n");
  std::string summary = fmt::format(
      "reprokit minify: {} -> {} ops, {} -> {} input elements, {} -> {} passes, {} queries ({} answered from cache), {:.1f}s\nfailure: {}\n{}\n"
      "rerun: {}\n{}\n{}",
      start_nodes, r.best.graph.num_ops(), input_elements(b.graph), input_elements(r.best.graph), enabled_passes(b.spec), enabled_passes(final_spec),
      r.queries, r.cache_hits, report["seconds"].get<double>(), expected.label(),
      o.verify ? (reproduced ? "verified: REPRODUCED in a fresh process" : "verified: NOT REPRODUCED (see the warning above)") : "not verified",
      verify_cmd, twin ? "passing twin (twin.rk): " + twin->difference + "\n" : std::string(), print_graph(r.best.graph));
  bundle.write("SUMMARY.txt", summary);
  fmt::print("{}", summary);
  fmt::print("\nfiles: {}/repro.rk repro.onnx repro_test.cpp repro_torch.py BUG_REPORT.md report.json{}\n", o.bundle_dir, twin ? " twin.rk" : "");
  return reproduced ? 0 : 1;
}

}  // namespace reprokit
