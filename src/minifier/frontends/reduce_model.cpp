// `reprokit reduce` (see reduce_model.h).
#include "reprokit/minifier/reduce_model.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <chrono>
#include <filesystem>
#include <optional>

#include "reprokit/harness/bundle.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/minifier/candidate_values.h"
#include "reprokit/minifier/check_oracle.h"
#include "reprokit/minifier/original_node_strategies.h"
#include "reprokit/minifier/compiler_decisions.h"
#include "reprokit/minifier/failure_named_guesses.h"
#include "reprokit/minifier/probe.h"
#include "reprokit/minifier/progress_printer.h"
#include "reprokit/minifier/reducer.h"
#include "reprokit/minifier/session.h"
#include "reprokit/minifier/report_json.h"
#include "reprokit/minifier/twin.h"
#include "reprokit/onnx/onnx_export.h"
#include "reprokit/onnx/onnx_import.h"
#include "reprokit/process/subprocess.h"
#include "reprokit/runtime/input_gen.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/runtime/templates.h"
#include "reprokit/runtime/torch_emitter.h"
#include "reprokit/support/command_words.h"
#include "reprokit/support/regex.h"

namespace reprokit {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The highest c<N> an earlier run left in candidates/ (kept with --keep-candidates), so a resumed
// run never reuses a directory.
int64_t next_candidate_number(const std::string& work_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(fs::path(work_dir) / "candidates", ec)) names.push_back(e.path().filename().string());
  return next_number_after(names, "c", "");
}

// <stem>.reduced, with what a shell would act on in the model's name made '_': the candidates'
// paths lie under it and reach launchers that may re-parse them.
std::string default_out_dir(const std::string& model) {
  std::string stem = fs::path(model).stem().string();
  for (char& c : stem)
    if (kShellActiveCharacters.find(c) != std::string_view::npos) c = '_';
  return stem + ".reduced";
}

std::string out_dir_of(const ReduceCommandOptions& o) { return o.out_dir.empty() ? default_out_dir(o.model) : o.out_dir; }

// The directories a run creates before its first repro (OUT, OUT/reduce_work, --work-dir), noted
// before it starts. A run refused before it wrote a repro (a check that cannot run, a launcher
// that cannot take a path) removes those it created, so the corrected command is not told that
// OUT "already exists"; a directory that was there before is never removed.
class CreatedByThisRun {
 public:
  explicit CreatedByThisRun(const ReduceCommandOptions& o) : out_(fs::absolute(out_dir_of(o))) {
    for (const fs::path& d : {out_, out_ / "reduce_work"})
      if (missing(d)) created_.push_back(d);
    if (!o.session.work_dir.empty() && missing(fs::absolute(o.session.work_dir))) created_.push_back(fs::absolute(o.session.work_dir));
  }
  void remove_unless_a_repro_was_written() const {
    std::error_code ec;
    if (fs::exists(out_ / "reduce_work" / "state.json", ec)) return;  // --resume continues from it
    for (auto d = created_.rbegin(); d != created_.rend(); ++d) fs::remove_all(*d, ec);
  }

 private:
  static bool missing(const fs::path& p) {
    std::error_code ec;
    return !fs::exists(fs::symlink_status(p, ec));
  }
  fs::path out_;
  std::vector<fs::path> created_;
};

// Whether OUT is a reduction's output: its state file is there, or (a run interrupted before its
// first repro) reduce_work/ is all it holds.
bool holds_a_reduction(const fs::path& out) {
  std::error_code ec;
  if (fs::is_regular_file(out / "reduce_work" / "state.json", ec)) return true;
  fs::directory_iterator it(out, ec), end;
  if (ec || it == end || it->path().filename() != "reduce_work" || !it->is_directory(ec)) return false;
  it.increment(ec);
  return !ec && it == end;
}

// The repro in OUT: the model in the check's format as repro.<ext> with inputs/ (the check reruns
// there exactly as it ran on candidates), the other format when it can hold the graph (every
// input as a .npy, so `reprokit run repro.rk --inputs inputs` works too), and repro_torch.py.
void write_repro(const Dir& out, const Graph& g, const std::vector<Tensor>& inputs, const CheckOptions& co, OnnxNodesForm form = {}) {
  Dir in = out.sub("inputs", true);
  for (auto& name : in.list()) in.remove_file(name);  // the inputs of an earlier, bigger repro
  for (int i = 0; i < g.num_inputs(); ++i) in.write(g.node(i).name + ".npy", encode_npy(inputs.at(static_cast<size_t>(i))));
  std::map<std::string, Tensor> initializers;
  for (int i = 0; i < g.num_inputs(); ++i)
    if (co.weights.count(g.node(i).name)) initializers.emplace(g.node(i).name, inputs[static_cast<size_t>(i)]);
  out.write("repro.rk", print_graph(g));
  try {
    if (co.original_onnx && co.format == ModelFormat::onnx) out.write("repro.onnx", co.original_onnx->write(g, inputs, co.weights, form).model);
    else out.write("repro.onnx", export_onnx(g, co.format == ModelFormat::onnx ? initializers : std::map<std::string, Tensor>{}));
  } catch (const UserError&) {
    if (co.format == ModelFormat::onnx) throw;
    out.remove_file("repro.onnx");  // ONNX cannot hold this graph; the check reads .rk anyway
  }
  // Its inputs are OUT/inputs/ (where the check reads them), not the bundles' repro_inputs/.
  out.write("repro_torch.py", emit_torch_program(g, "repro", nullptr, "inputs"));
}

std::string repro_path(const Dir& out, const CheckOptions& co) { return out.path("repro" + std::string(model_extension(co.format))); }

// `reprokit reduce` as a front end of the session: a model (.rk or .onnx) with its values, judged
// by the user's check in each candidate's directory; the repro goes to OUT.
class ReduceFrontEnd : public ReductionFrontEnd {
 public:
  // Bad input (the model, its values, the options, an OUT in the way) is refused before anything is written.
  explicit ReduceFrontEnd(const ReduceCommandOptions& o)
      : o_(o), b_(load(o, co_.weights, co_.original_onnx)), out_(open_out(o)), state_(out_.sub("reduce_work", true)), values_(b_) {
    std::vector<std::string> resolved;
    co_.check = absolute_check_paths(o.check, &resolved);
    co_.prefix = o.session.worker_prefix;  // a launcher's words as given: "nice -n 5" never becomes a path to a file named 5
    const bool onnx = o.format.empty() ? is_onnx_path(o.model) : o.format == "onnx";
    co_.format = onnx ? ModelFormat::onnx : ModelFormat::rk;
    co_.jobs = o.session.jobs;
    co_.fail_regex = o.fail_regex;
    co_.hang_is_interesting = o.hang_is_interesting;
    co_.keep_candidates = o.keep_candidates;
    co_.keep_first_failure = !o.allow_drift;
    // A state.json symlink or reduce_work/ outside OUT is refused by Dir, never followed.
    co_.work_dir = o.session.work_dir.empty() ? fs::absolute(state_.path()).string() : fs::absolute(o.session.work_dir).string();
    co_.first_candidate = next_candidate_number(co_.work_dir);
    refuse_path_under_launcher(co_.prefix, co_.work_dir, "the work directory");  // before any check runs, not at the first candidate
    for (size_t i = 0; i < co_.check.size(); ++i)  // the words reprokit made absolute; the user's own words are theirs to mean
      if (co_.check[i] != o.check[i]) refuse_path_under_launcher(co_.prefix, co_.check[i], "the check's path");
    fmt::print(stderr, "[reduce] model {}: graph {} ({} ops, {} inputs), candidates as {} in {}\n[reduce] check: {}\n", o.model, b_.graph.name,
               b_.graph.num_ops(), b_.graph.num_inputs(), model_extension(co_.format), co_.work_dir, shell_quote_command(check_argv_as_written(co_)));
    for (auto& r : resolved) fmt::print(stderr, "[reduce] checks run in each candidate's directory: {}\n", r);

    options_.tool = "reduce";
    options_.original = &b_.graph;
    if (co_.original_onnx && !onnx) co_.original_onnx.reset();  // --format rk: the check reads reprokit's graph
    if (co_.original_onnx) {
      if (auto why = co_.original_onnx->why_not_writable(b_.graph)) {
        fmt::print(stderr, "[reduce] candidates are exported from reprokit's reading of the model, not as its own nodes ({})\n", *why);
        co_.original_onnx.reset();
      } else {
        fmt::print(stderr, "[reduce] candidates hold only the model's own nodes ({} nodes; reprokit reads them as {} ops)\n",
                   co_.original_onnx->op_types(b_.graph).size(), b_.graph.num_ops());
      }
    }
    // No compiler strategies: they switch reprokit's own passes.
    options_.strategies = co_.original_onnx ? original_node_strategies(co_.original_onnx) : strategy_table_with({});
    options_.first_guesses_name = kNamedInFailure;
    options_.passes = &reprokit_passes();
    options_.oracle_reads_names = true;  // the check sees the file: it may key on a node's name
    options_.probe.runs = std::max(1, o.session.flaky_checks);
    options_.probe.look_until = options_.probe.runs;  // no recorded failure to look for: the check says what it says
    options_.probing_message = fmt::format("[reduce] checking that the original is interesting (up to {} runs)...\n", options_.probe.runs);
    options_.untimed_limit_s = o.session.timeout_s > 0 ? o.session.timeout_s : 300;  // generous until timed
    options_.say_when_interrupted = on_termination_signal;
    options_.state_dir = &state_;
    options_.interrupted_message =
        fmt::format("\n[reduce] interrupted: the best repro so far is in {}\n[reduce] continue with the same command and --resume\n", out_.path());
  }

  std::unique_ptr<TimedOracle> make_oracle(double floor_s) override {
    co_.timeout_s = floor_s;
    auto oracle = std::make_unique<CheckOracle>(co_, [this](const Candidate& c) { return checked_values(c); });
    oracle_ = oracle.get();
    return oracle;
  }
  Verdict probe_once(TimedOracle& oracle, const Candidate& original) override {
    Verdict v = oracle.judge({original}).at(0);
    if (v.interesting && !first_interesting_.interesting) first_interesting_ = v;
    if (!v.interesting && failure_of(v).failed()) other_ = failure_of(v);
    return v;
  }
  bool probed(const ProbeResult& pr) override {
    if (pr.fails == 0) {
      fmt::print(stderr, "[reduce] the original model is not interesting in {} run{}: {}: nothing to reduce.\n", pr.runs, pr.runs == 1 ? "" : "s",
                 other_.failed()         ? other_.message
                 : o_.fail_regex.empty() ? std::string("the check exited with status 0")
                                         : "the check's output does not match --fail-regex");
      return false;
    }
    // What made it interesting, so a check that fails for the wrong reason (a missing file, a
    // typo) shows at once.
    fmt::print(stderr, "[reduce] the original is interesting: {}\n",
               failure_of(first_interesting_).failed() ? failure_of(first_interesting_).message : "(the check said so)");
    if (co_.keep_first_failure && failure_of(first_interesting_).failed())
      fmt::print(stderr, "[reduce] candidates must fail the same way ({}); --allow-drift takes any failure\n",
                 failure_of(first_interesting_).signature);
    co_.first_candidate += pr.runs;  // after the probe's
    if (pr.rate() < 1)
      fmt::print(stderr, "[reduce] the check is flaky: interesting in {} of {} runs ({:.0f}%); each candidate gets up to {} tries\n", pr.fails,
                 pr.runs, pr.rate() * 100, pr.attempts_per_candidate());
    return true;
  }
  // The nodes the failure names, tried alone first (failure_named_guesses.h).
  std::vector<Candidate> first_guesses(const Candidate& start) override {
    if (!co_.original_onnx || !failure_of(first_interesting_).failed()) return {};
    std::vector<NamedNodeGuess> guesses = failure_named_guesses(start, *co_.original_onnx, failure_of(first_interesting_).message);
    for (const std::string& line : describe_named_guesses(guesses)) fmt::print(stderr, "[reduce] the failure names {}\n", line);
    std::vector<Candidate> out;
    for (NamedNodeGuess& g : guesses) out.push_back(std::move(g.candidate));
    return out;
  }
  void ready(const TimedOracle& oracle, const ProbeResult&, const SessionOptions& o) override {
    fmt::print(stderr, "[reduce] per-check time limit {}, {} job{}\n", oracle.limit().describe("a hang is interesting"), o.jobs,
               o.jobs == 1 ? "" : "s");
  }

  void check_resumed(const Candidate& c) override { candidate_values(c); }

  void save(const Candidate& c) override { write_repro(out_, c.graph, candidate_values(c), co_); }
  // The repro, and the passing twin in the check's format, for the bug report.
  std::string write_final(const MinifyResult& r) override {
    form_ = plainest_form(r.best);
    write_repro(out_, r.best.graph, candidate_values(r.best), co_, form_);
    out_.remove_tree("twin");
    if (!r.twin) return "";
    const std::string difference = describe_difference(r.best, *r.twin, {"interesting", "not interesting"});
    write_model_files(out_.sub("twin", true), r.twin->graph, candidate_values(*r.twin), co_.format, co_.weights, co_.original_onnx.get());
    fmt::print(stderr, "[reduce] nearest variant that is not interesting (twin/): {}\n", difference);
    return difference;
  }

  // The check once more, in a copy of the repro's files under the work directory, as every
  // candidate ran: a check that cleans its directory ($REPRO_CANDIDATE_DIR) must not clean OUT.
  bool verify(const Candidate& best) override {
    final_verdict_ = final_form_verdict_ ? *final_form_verdict_ : check_once(best, "verify", form_);
    if (!final_verdict_.interesting)
      fmt::print(stderr,
                 "\n[reduce] !!! WARNING: the check does NOT find the final repro interesting in a fresh run !!!\n[reduce] !!! (cd {} && {})\n",
                 out_.path(), rerun_command());
    return final_verdict_.interesting;
  }

  void report(const SessionResult& s, const SessionOptions& o) override {
    const MinifyResult& r = s.reduction;
    const int start_nodes = b_.graph.num_ops();
    const std::string model_file = repro_path(out_, co_);
    const std::string interesting_rule = !o_.fail_regex.empty() ? fmt::format("interesting when its output matches /{}/", o_.fail_regex)
                                                                : "interesting when it exits with a non-zero status";
    const std::string said = failure_of(final_verdict_).failed() ? failure_of(final_verdict_).message : "(not verified)";
    json report = reduction_report(r, b_.graph, s.failure_rate, s.twin_difference);
    if (co_.original_onnx) {
      report["model_nodes"] = co_.original_onnx->op_types(r.best.graph, form_);
      report["constants_folded"] = form_.constants_as_initializers;
      report["noops_dropped"] = form_.without_noops;
    }
    report.update({{"model", o_.model},
                   {"check", check_argv_as_written(co_)},
                   {"interesting", interesting_rule},
                   {"format", std::string(model_extension(co_.format)).substr(1)},
                   {"seconds", s.seconds},
                   {"jobs", o.jobs},
                   {"verified", o.verify ? json(s.verified) : json(nullptr)},
                   {"final_check_said", said},
                   {"rerun", rerun_command()}});
    out_.write("report.json", report.dump(2) + "\n");
    const int final_ops = r.best.graph.num_ops();
    const std::string twin_text =
        !r.twin ? "" : fmt::format("## The nearest variant that is not interesting\n\n`twin/` holds it: {}.\n", s.twin_difference);
    out_.write("BUG_REPORT.md",
               render_template("REDUCE_REPORT.md", {{"MODEL", fs::path(o_.model).filename().string()},
                                                    {"NODES", fmt::format("{} op{}", final_ops, final_ops == 1 ? "" : "s")},
                                                    {"ORIGINAL_OPS", std::to_string(start_nodes)},
                                                    {"ORIGINAL_ELEMENTS", std::to_string(input_elements(b_.graph))},
                                                    {"ELEMENTS", std::to_string(input_elements(r.best.graph))},
                                                    {"QUERIES", std::to_string(r.queries)},
                                                    {"SECONDS", fmt::format("{:.1f}", r.seconds)},
                                                    {"FAILURE", said},
                                                    {"INTERESTING", interesting_rule},
                                                    {"RERUN", shell_quote_command(check_argv(co_, fs::path(model_file).filename().string()))},
                                                    {"REPRO", fs::path(model_file).filename().string()},
                                                    {"GRAPH_TEXT", print_graph(r.best.graph)},
                                                    {"TWIN", twin_text}}));
    fmt::print(
        "reprokit reduce: {} -> {} ops, {} -> {} input elements, {} checks ({} answered from cache), {:.1f}s\n{}\nrerun: (cd {} && {})\n{}{}\n",
        start_nodes, final_ops, input_elements(b_.graph), input_elements(r.best.graph), r.queries, r.cache_hits, s.seconds,
        !o.verify    ? "not verified"
        : s.verified ? "verified: the check still finds it interesting in a fresh run"
                     : "verified: NOT interesting (see the warning above)",
        out_.path(), rerun_command(), r.twin ? "twin/ (not interesting): " + s.twin_difference + "\n" : std::string(), print_graph(r.best.graph));
    if (co_.original_onnx) {
      const auto types = co_.original_onnx->op_types(r.best.graph, form_);
      fmt::print("repro.onnx holds {} of the model's nodes: {}\n", types.size(), fmt::join(types, ", "));
    }
    std::string files;
    for (const char* f : {"repro.rk", "repro.onnx", "inputs/", "repro_torch.py", "BUG_REPORT.md", "report.json", "twin/"})
      if (out_.exists(std::string(f).substr(0, std::string(f).find('/')))) files += std::string(" ") + f;
    fmt::print("\nfiles in {}:{}\n", out_.path(), files);
  }

 private:
  // An in-memory bundle: the original graph and values, for the cut points' values; `weights`
  // receives the names of an ONNX model's initializers (they stay initializers in candidates).
  // An ONNX model handed to its check as ONNX is imported keeping its nodes apart (`original`).
  static Bundle load(const ReduceCommandOptions& o, std::set<std::string>& weights, std::shared_ptr<const OriginalOnnxModel>& original) {
    Bundle b;
    std::map<std::string, Tensor> known;
    GivenInputs given;  // an ONNX model's files are named after its ONNX inputs, as for `reprokit run`
    given.dir = o.inputs_dir;
    OnnxOrigins origins;
    const bool own_nodes = is_onnx_path(o.model) && o.format != "rk";
    Module m = load_model(o.model, o.shapes, &known, given, own_nodes ? &origins : nullptr);
    b.graph = m.entry();
    if (own_nodes)
      original = std::make_shared<const OriginalOnnxModel>(read_file(o.model, (size_t{2} << 30) - 1), b.graph, std::move(origins), o.model);
    b.inputs = assemble_inputs(b.graph, known, o.seed, given);
    for (auto& [name, t] : known) weights.insert(name);
    return b;
  }
  // OUT: never over an earlier run's files unless resuming it; checks run in it, so an absolute path.
  static Dir open_out(const ReduceCommandOptions& o) {
    if (!o.format.empty() && o.format != "onnx" && o.format != "rk") throw UserError("--format must be rk or onnx; got '" + o.format + "'");
    if (!o.fail_regex.empty()) Regex(o.fail_regex, "--fail-regex");  // a pattern RE2 refuses: before anything is written
    const std::string out_path = out_dir_of(o);
    std::error_code ec;
    const bool empty_out = fs::is_directory(out_path, ec) && fs::is_empty(out_path, ec);
    if (!o.session.resume && fs::exists(out_path, ec) && !empty_out)
      throw UserError(fmt::format("'{}' already exists: pass --resume to continue the reduction it holds, or -o a new directory", out_path));
    if (o.session.resume && fs::exists(out_path, ec) && !empty_out && !holds_a_reduction(out_path))  // else its inputs/*.npy would be replaced
      throw UserError(
          fmt::format("'{}' holds no reduction to resume (no reduce_work/state.json in it) and is never written into: -o a new directory", out_path));
    return Dir::create(fs::absolute(out_path).string());
  }
  std::vector<Tensor> candidate_values(const Candidate& c) { return candidate_inputs(c, b_, values_); }
  // What the check is shown: a value edit that drives an op out of its domain is never asked about.
  std::vector<Tensor> checked_values(const Candidate& c) {
    if (auto why = value_edit_leaves_domain(c, b_, values_)) throw UserError(*why);
    return candidate_inputs(c, b_, values_);
  }
  // The check once more on `c` written in `form`, in reduce_work/`dir` (removed after), as every
  // candidate ran: a check that cleans its directory ($REPRO_CANDIDATE_DIR) must not clean OUT.
  Verdict check_once(const Candidate& c, const std::string& dir, OnnxNodesForm form) {
    state_.remove_tree(dir);
    const std::string model =
        write_model_files(state_.sub(dir, true), c.graph, candidate_values(c), co_.format, co_.weights, co_.original_onnx.get(), form);
    Verdict v = oracle_->run_in(state_.sub(dir, false), model, oracle_->limit().for_candidate(c));
    stop_on_tool_failure(v, oracle_->options());
    oracle_->keep_to_the_first_failure(v);
    state_.remove_tree(dir);
    return v;
  }
  // The repro in a plainer form, each step kept when the check still finds it interesting, so a
  // check keyed to such a node keeps it: values known when the model loads (Constant, a shape
  // computation) as initializers, as Polygraphy's `surgeon sanitize --fold-constants` writes them;
  // nodes that compute nothing left out. Both steps are tried at once first (one check where the
  // check cares about neither), then one by one. The check of the form kept is a fresh run of the
  // final repro's files, so verify() takes its verdict rather than running it again.
  OnnxNodesForm plainest_form(const Candidate& best) {
    OnnxNodesForm form;
    final_form_verdict_.reset();
    if (!co_.original_onnx) return form;
    struct Step {
      bool OnnxNodesForm::*flag;
      const char* what;
    };
    const auto nodes_in = [&](OnnxNodesForm f) { return co_.original_onnx->op_types(best.graph, f); };
    std::vector<Step> steps;  // those that change what is written
    for (const Step& step : {Step{&OnnxNodesForm::constants_as_initializers,
                                  "values known when the model loads, as initializers instead of the nodes that compute them"},
                             Step{&OnnxNodesForm::without_noops, "without the nodes that compute nothing (Identity, a zero Pad)"}}) {
      OnnxNodesForm plainer;
      plainer.*step.flag = true;
      if (nodes_in(plainer) != nodes_in(form)) steps.push_back(step);
    }
    const auto say = [](const Step& step, bool kept) {
      fmt::print(stderr, "[reduce] {}: {}\n", step.what, kept ? "still interesting, kept" : "not interesting, the nodes stay");
    };
    if (steps.size() > 1) {
      OnnxNodesForm all;
      for (const Step& step : steps) all.*step.flag = true;
      if (Verdict v = check_once(best, "plainer", all); v.interesting) {
        for (const Step& step : steps) say(step, true);
        final_form_verdict_ = v;
        return all;
      }
    }
    for (const Step& step : steps) {
      OnnxNodesForm plainer = form;
      plainer.*step.flag = true;
      if (steps.size() > 1 && &step == &steps.back() && !(form == OnnxNodesForm{})) {
        say(step, false);  // on top of the steps kept, it is the all-at-once form, found not interesting
        continue;
      }
      const Verdict v = check_once(best, "plainer", plainer);
      say(step, v.interesting);
      if (!v.interesting) continue;
      form = plainer;
      final_form_verdict_ = v;
    }
    return form;
  }
  std::string rerun_command() const { return shell_quote_command(check_argv(co_, repro_path(out_, co_))); }

  const ReduceCommandOptions& o_;
  CheckOptions co_;  // first: load() fills its weights
  Bundle b_;
  Dir out_, state_;
  KnownValues values_;
  CheckOracle* oracle_ = nullptr;  // the reduction's, once made (the session keeps it until the report)
  Verdict first_interesting_;
  Failure other_;  // the probe's last failure that was not interesting, if any
  Verdict final_verdict_;
  OnnxNodesForm form_;                         // how the repro's nodes are written (plainest_form)
  std::optional<Verdict> final_form_verdict_;  // plainest_form's check of form_, a fresh run of the final files
};

}  // namespace

int reduce_model(const ReduceCommandOptions& o) {
  const CreatedByThisRun created(o);
  try {
    ReduceFrontEnd front(o);
    adopt_orphans();  // a daemon a check leaves behind is stopped, not left running (subprocess.h)
    return run_session(front, o.session);
  } catch (const UserError&) {
    created.remove_unless_a_repro_was_written();
    throw;
  }
}

}  // namespace reprokit
