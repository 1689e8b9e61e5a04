// `reprokit minify` (see minify_bundle.h).
#include "reprokit/minifier/minify_bundle.h"

#include <fmt/core.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "reprokit/codegen/backend.h"
#include "reprokit/codegen/passes/pass_manager.h"
#include "reprokit/harness/child_run.h"
#include "reprokit/harness/repro_file.h"
#include "reprokit/support/command_words.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/json_format.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/minifier/candidate_values.h"
#include "reprokit/minifier/compiler_decisions.h"
#include "reprokit/minifier/failure_named_guesses.h"
#include "reprokit/minifier/probe.h"
#include "reprokit/minifier/progress_printer.h"
#include "reprokit/minifier/reducer.h"
#include "reprokit/minifier/session.h"
#include "reprokit/minifier/report_json.h"
#include "reprokit/minifier/subprocess_oracle.h"
#include "reprokit/minifier/twin.h"
#include "reprokit/minifier/verdict_details.h"
#include "reprokit/process/subprocess.h"
#include "reprokit/runtime/interpreter.h"
#include "reprokit/support/files.h"

namespace reprokit {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The number after the last query an earlier run saved in `queries` (q00001.json, ...), so a
// resumed run never overwrites them.
int64_t next_query_number(const Dir& queries) { return next_number_after(queries.list(), "q", ".json"); }

int enabled_passes(const ReproSpec& spec) {
  const CompileOptions& c = spec.options.compile;
  if (!passes_run(c)) return 0;
  int n = 0;
  for (auto& p : pass_table()) n += !c.disabled_passes.count(p.name) && !(c.pass_limits.count(p.name) && c.pass_limits.at(p.name) == 0);
  return n;
}

// `reprokit minify` as a front end of the session: the bundle's graph, judged by worker processes
// that rerun its failing stage; the repro files go into the bundle.
class MinifyFrontEnd : public ReductionFrontEnd {
 public:
  explicit MinifyFrontEnd(const MinifyCommandOptions& o)
      : o_(o),
        b_(load_bundle(o.bundle_dir)),
        dir_(o.bundle_dir),
        bundle_(Dir::open(o.bundle_dir)),
        // minify_work in the bundle, or --work-dir (shared with other machines); a symlink there is refused, never followed
        work_(o.session.work_dir.empty() ? bundle_.sub("minify_work", true) : Dir::create(o.session.work_dir)),
        values_(b_),
        expected_(b_.spec.expected),
        spec_(b_.spec) {
    if (!o.session.resume) work_.remove_tree("state.json");
    fmt::print(stderr, "[minify] bundle {}: graph {} ({} ops), stage {}, backend {}\n", o.bundle_dir, b_.graph.name, b_.graph.num_ops(),
               b_.spec.stage, b_.spec.options.compile.backend);
    wo_.reprokit_exe = o.reprokit_exe;
    wo_.bundle_dir = fs::absolute(dir_).string();
    wo_.work_dir = fs::absolute(work_.path()).string();
    wo_.prefix = o.session.worker_prefix;
    refuse_path_under_launcher(wo_.prefix, wo_.bundle_dir, "the bundle's path");  // a worker's argv; ssh-like launchers get it quoted
    refuse_path_under_launcher(wo_.prefix, wo_.reprokit_exe, "reprokit's path");
    wo_.jobs = o.session.jobs;
    wo_.memory_limit_mb = o.memory_limit_mb;
    wo_.any_accuracy = o.any_accuracy;

    const SessionOptions& so = o.session;
    options_.tool = "minify";
    options_.original = &b_.graph;
    // The compiler's strategies only where reprokit's passes run.
    options_.strategies = passes_run(b_.spec.options.compile) ? strategy_table() : strategy_table_with({});
    options_.first_guesses_name = kNamedInFailure;
    options_.passes = &reprokit_passes();
    ProbeOptions& po = options_.probe;
    po.runs = hang() ? 1 : std::max(1, so.flaky_checks);
    po.look_until = expected_.failed() && !hang() ? 10 : po.runs;
    options_.probing_message =
        fmt::format("[minify] checking that the original fails ({} runs{})...\n", po.runs,
                    po.runs > po.min_runs ? fmt::format(" at most; after {} ({} when one takes over {:.0f} s), only those that end within {:.0f} s",
                                                        po.min_runs, po.min_runs_when_slow, po.budget_s / po.min_runs, po.budget_s)
                                          : "");
    // Until the original has been timed, allow generously (a compile may be cold); a hang keeps
    // its threshold throughout.
    options_.untimed_limit_s = so.timeout_s > 0 ? so.timeout_s : (hang() && b_.spec.timeout_s > 0 ? b_.spec.timeout_s : 300);
    options_.limit_from_probe = !hang();
    options_.say_when_interrupted = on_termination_signal;
    options_.state_dir = &work_;
    options_.interrupted_message =
        fmt::format("\n[minify] interrupted: the best repro so far is {}\n[minify] continue with: {}\n", (dir_ / "repro.rk").string(),
                    shell_quote_command({o.reprokit_exe, "minify", o.bundle_dir, "--resume"}));
  }

  std::unique_ptr<TimedOracle> make_oracle(double floor_s) override {
    wo_.timeout_s = floor_s;
    // Queries are numbered on after those an earlier run (or the probe) saved, never over them.
    if ((o_.session.resume || probed_) && work_.is_dir("queries")) wo_.first_query = next_query_number(work_.sub("queries"));
    return std::make_unique<SubprocessOracle>(wo_, expected_);
  }
  std::unique_ptr<TimedOracle> oracle_after_probe(std::unique_ptr<TimedOracle> probe, double floor_s) override {
    if (!wo_.prefix.empty()) return ReductionFrontEnd::oracle_after_probe(std::move(probe), floor_s);  // a cluster job per oracle
    wo_.timeout_s = floor_s;
    static_cast<SubprocessOracle&>(*probe).retime(floor_s, expected_);
    return probe;
  }
  Verdict probe_once(TimedOracle& oracle, const Candidate& original) override {
    Verdict v = oracle.judge({original}).at(0);
    const Failure& f = failure_of(v);
    // A level-3 bundle, written before compiling, records no failure: the first one seen is sought.
    if (!v.unknown && !expected_.failed() && f.failed() && f.kind != FailureKind::invalid_candidate) expected_ = f;
    Verdict judged = verdict_of(!v.unknown && minifier_interesting(expected_, f, o_.any_accuracy), f);
    if (!judged.interesting && f.failed()) other_ = f;
    return judged;
  }
  bool probed(const ProbeResult& pr) override {
    probed_ = true;
    if (pr.fails == 0) {
      fmt::print(stderr, "[minify] the original graph does not fail in {} run{}: nothing to minify.\n", pr.runs, pr.runs == 1 ? "" : "s");
      if (other_.failed()) fmt::print(stderr, "[minify] it failed differently instead: {}: {}\n", other_.kind_name(), other_.message.substr(0, 200));
      fmt::print(stderr, "[minify] expected: {}: {}\n", expected_.failed() ? expected_.kind_name() : "(any failure)", expected_.signature);
      return false;
    }
    if (pr.rate() < 1)
      fmt::print(stderr, "[minify] the failure is flaky: it happened in {} of {} runs ({:.0f}%); each candidate gets up to {} tries\n", pr.fails,
                 pr.runs, pr.rate() * 100, pr.attempts_per_candidate());
    spec_.expected = expected_;
    spec_.attempts = pr.attempts_per_candidate();
    return true;
  }
  // A failure where it happened (a compile error, an error at run time, a crash) names the node it
  // happened in, and that node is tried first (failure_named_guesses.h); a drift in accuracy names
  // the output it shows in, seldom where it starts.
  std::vector<Candidate> first_guesses(const Candidate& start) override {
    static const std::set<FailureKind> kSaysWhere = {FailureKind::compile_error, FailureKind::runtime_error, FailureKind::crash};
    if (!kSaysWhere.count(expected_.kind)) return {};
    std::vector<NamedNodeGuess> guesses = failure_named_guesses(start, expected_.message);
    for (const std::string& line : describe_named_guesses(guesses)) fmt::print(stderr, "[minify] the failure names {}\n", line);
    std::vector<Candidate> out;
    for (NamedNodeGuess& g : guesses) out.push_back(std::move(g.candidate));
    return out;
  }
  void ready(const TimedOracle& oracle, const ProbeResult&, const SessionOptions& o) override {
    if (expected_.kind == FailureKind::timeout && spec_.timeout_s <= 0) spec_.timeout_s = wo_.timeout_s;
    fmt::print(stderr, "[minify] failure: {}: {}\n[minify] per-query time limit {}, {} worker{}\n", expected_.kind_name(),
               expected_.message.substr(0, expected_.message.find('\n')), oracle.limit().describe("a hang"), o.jobs, o.jobs == 1 ? "" : "s");
  }

  void check_resumed(const Candidate& c) override { candidate_inputs(c, b_, values_); }

  void save(const Candidate& c) override {
    write_repro_files(dir_.string(), c.graph, candidate_inputs(c, b_, values_), candidate_spec(spec_, c),
                      "Minification in progress: this is the best repro so far.");
  }
  std::string write_final(const MinifyResult& r) override {
    const ReproSpec final_spec = candidate_spec(spec_, r.best);
    const std::string how =
        fmt::format("Minified by reprokit from {} to {} ops, {} to {} input elements, {} to {} compiler passes, in {} queries ({:.1f}s).",
                    b_.graph.num_ops(), r.best.graph.num_ops(), input_elements(b_.graph), input_elements(r.best.graph), enabled_passes(b_.spec),
                    enabled_passes(final_spec), r.queries, r.seconds);
    final_.emplace(FinalRepro{r.best.graph, candidate_inputs(r.best, b_, values_), final_spec, how, std::nullopt, std::nullopt});
    if (r.twin) {
      final_->twin = PassingTwin{
          r.twin->graph, candidate_inputs(*r.twin, b_, values_), candidate_spec(spec_, *r.twin), describe_difference(r.best, *r.twin), {}};
      fmt::print(stderr, "[minify] passing twin: {}\n", final_->twin->difference);
    }
    // An accuracy bug: the compiled outputs go beside the repro (and the twin), so repro_torch.py
    // shows the difference to whoever gets the report without reprokit.
    if (expected_.kind == FailureKind::accuracy && (spec_.failing_samples.empty() || spec_.failing_samples.front() == 0)) {
      final_->compiled = compiled_outputs(final_spec, final_->graph, final_->inputs);
      if (final_->twin) final_->twin->compiled = compiled_outputs(final_->twin->spec, final_->twin->graph, final_->twin->inputs);
    }
    write_final_files();
    // A compiler that is not reprokit's: which of its own optimisers causes the failure, searched
    // on the repro just written (a few runs of the compiler), and the report written again with it.
    if (std::optional<json> search = bisect_compiler_switches(repro_path())) {
      compiler_switches_ = *search;
      write_final_files();
    }
    return final_->twin ? final_->twin->difference : "";
  }

  // As a user would rerun it: the repro file as written, judged by the child's verdict (as
  // `reprokit repro` judges it).
  bool verify(const Candidate&) override {
    const ReproFile written = load_repro_file(repro_path());
    const Rerun rerun = rerun_repro(repro_path(), written.spec, rerun_timeout(written.spec));
    // The report quotes the repro's own failure (its node names, its values), not the original
    // graph's; the signature it is judged by stays the one sought.
    if (rerun.reproduced && final_ && !rerun.got.message.empty() && rerun.got.message != final_->spec.expected.message) {
      final_->spec.expected.message = rerun.got.message;
      write_final_files();
    }
    if (!rerun.reproduced)
      fmt::print(stderr,
                 "\n[minify] !!! WARNING: the final repro did NOT reproduce the failure in a fresh process !!!\n"
                 "[minify] !!! {}\n[minify] !!! expected {}; got {} in {} run{}\n",
                 rerun_command(), written.spec.expected.label(),
                 rerun.got.failed() ? rerun.got.label() + ": " + rerun.got.message.substr(0, 300) : "a pass", rerun.runs, rerun.runs == 1 ? "" : "s");
    return rerun.reproduced;
  }

  void report(const SessionResult& s, const SessionOptions& o) override {
    const MinifyResult& r = s.reduction;
    const ReproSpec final_spec = candidate_spec(spec_, r.best);
    json report = reduction_report(r, b_.graph, s.failure_rate, s.twin_difference);
    report.update({{"bundle", o_.bundle_dir},
                   {"failure", expected_.to_json()},
                   {"original_passes", enabled_passes(b_.spec)},
                   {"final_passes", enabled_passes(final_spec)},
                   {"seconds", s.seconds},
                   {"jobs", o.jobs},
                   {"verified", o.verify ? json(s.verified) : json(nullptr)},
                   {"rerun", rerun_command()}});
    if (!compiler_switches_.is_null()) report["compiler_switches"] = compiler_switches_;
    bundle_.write("report.json", report.dump(2) + "\n");
    std::string summary = fmt::format(
        "reprokit minify: {} -> {} ops, {} -> {} input elements, {} -> {} passes, {} queries ({} answered from cache), {:.1f}s\nfailure: {}\n{}\n"
        "rerun: {}\n{}\n{}",
        b_.graph.num_ops(), r.best.graph.num_ops(), input_elements(b_.graph), input_elements(r.best.graph), enabled_passes(b_.spec),
        enabled_passes(final_spec), r.queries, r.cache_hits, s.seconds, expected_.label(),
        o.verify ? (s.verified ? "verified: REPRODUCED in a fresh process" : "verified: NOT REPRODUCED (see the warning above)") : "not verified",
        rerun_command(), r.twin ? "passing twin (twin.rk): " + s.twin_difference + "\n" : std::string(), print_graph(r.best.graph));
    bundle_.write("SUMMARY.txt", summary);
    fmt::print("{}", summary);
    fmt::print("\nfiles: {}/repro.rk repro.onnx repro_test.cpp repro_torch.py BUG_REPORT.md report.json{}\n", o_.bundle_dir,
               r.twin ? " twin.rk" : "");
  }

 private:
  // What write_final wrote, kept so the files can be written again with the repro's own failure.
  struct FinalRepro {
    Graph graph;
    std::vector<Tensor> inputs;
    ReproSpec spec;
    std::string how;
    std::optional<PassingTwin> twin;
    std::optional<std::vector<Tensor>> compiled;
  };
  std::optional<FinalRepro> final_;
  void write_final_files() {
    write_repro_files(dir_.string(), final_->graph, final_->inputs, final_->spec, final_->how, final_->twin ? &*final_->twin : nullptr,
                      final_->compiled ? &*final_->compiled : nullptr, compiler_switches_.is_null() ? nullptr : &compiler_switches_);
  }
  json compiler_switches_;  // the search of a foreign compiler's optimisers, when one ran
  bool hang() const { return b_.spec.expected.kind == FailureKind::timeout; }
  std::string repro_path() const { return (dir_ / "repro.rk").string(); }
  std::string rerun_command() const { return shell_quote_command({o_.reprokit_exe, "repro", repro_path()}); }

  const MinifyCommandOptions& o_;
  Bundle b_;
  fs::path dir_;
  Dir bundle_, work_;
  KnownValues values_;
  Failure expected_;  // the failure sought: the bundle's, or (level 3) the first the probe sees
  Failure other_;     // the probe's last failure that did not count as the one sought, if any
  ReproSpec spec_;    // the bundle's, with the failure sought and the tries a flaky one needs
  WorkerPoolOptions wo_;
  bool probed_ = false;
};

}  // namespace

int minify_bundle(const MinifyCommandOptions& o) {
  MinifyFrontEnd front(o);
  adopt_orphans();  // a daemon a worker leaves behind is stopped, not left running (subprocess.h)
  return run_session(front, o.session);
}

}  // namespace reprokit
