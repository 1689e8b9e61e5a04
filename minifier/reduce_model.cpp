// `reprokit reduce` (see reduce_model.h).
#include "reprokit/minifier/reduce_model.h"

#include <fmt/core.h>

#include <chrono>
#include <filesystem>

#include "reprokit/harness/bundle.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/minifier/check_oracle.h"
#include "reprokit/minifier/minify_bundle.h"
#include "reprokit/minifier/probe.h"
#include "reprokit/minifier/progress_printer.h"
#include "reprokit/minifier/reducer.h"
#include "reprokit/minifier/report_json.h"
#include "reprokit/onnx/onnx_export.h"
#include "reprokit/onnx/onnx_import.h"
#include "reprokit/process/subprocess.h"
#include "reprokit/runtime/input_gen.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/runtime/templates.h"
#include "reprokit/runtime/torch_emitter.h"
#include "reprokit/support/regex.h"

namespace reprokit {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// The highest c<N> an earlier run left in candidates/ (kept with --keep-candidates), so a resumed
// run never reuses a directory.
int64_t next_candidate_number(const std::string& work_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(fs::path(work_dir) / "candidates", ec)) names.push_back(e.path().filename().string());
  return next_number_after(names, "c", "");
}

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

std::vector<Strategy> selected_strategies(const ReduceCommandOptions& o) {
  std::vector<Strategy> out;
  for (auto& s : strategy_table())  // compiler strategies switch reprokit's own passes: not here
    if (!s.compiler_only && (o.only.empty() || o.only.count(s.name)) && !o.skip.count(s.name)) out.push_back(s);
  return out;
}

// The repro in OUT: the model in the check's format as repro.<ext> with inputs/ (the check reruns
// there exactly as it ran on candidates), the other format when it can hold the graph (every
// input as a .npy, so `reprokit run repro.rk --inputs inputs` works too), and repro_torch.py.
void write_repro(const Dir& out, const Graph& g, const std::vector<Tensor>& inputs, const CheckOptions& co) {
  Dir in = out.sub("inputs", true);
  for (auto& name : in.list()) in.remove_file(name);  // the inputs of an earlier, bigger repro
  for (int i = 0; i < g.num_inputs(); ++i) in.write(g.node(i).name + ".npy", encode_npy(inputs.at(static_cast<size_t>(i))));
  std::map<std::string, Tensor> initializers;
  for (int i = 0; i < g.num_inputs(); ++i)
    if (co.weights.count(g.node(i).name)) initializers.emplace(g.node(i).name, inputs[static_cast<size_t>(i)]);
  out.write("repro.rk", print_graph(g));
  try {
    out.write("repro.onnx", export_onnx(g, co.format == ModelFormat::onnx ? initializers : std::map<std::string, Tensor>{}));
  } catch (const UserError&) {
    if (co.format == ModelFormat::onnx) throw;
    out.remove_file("repro.onnx");  // ONNX cannot hold this graph; the check reads .rk anyway
  }
  out.write("repro_torch.py", emit_torch_program(g));
}

std::string repro_path(const Dir& out, const CheckOptions& co) { return out.path("repro" + std::string(model_extension(co.format))); }

}  // namespace

int reduce_model(const ReduceCommandOptions& o) {
  auto t0 = Clock::now();
  std::map<std::string, Tensor> known;  // an ONNX model's initializers
  Module m = load_model(o.model, o.shapes, &known);
  Bundle b;  // an in-memory bundle: the original graph and values, for the cut points' values
  b.graph = m.entry();
  b.inputs = assemble_inputs(b.graph, known, o.inputs_dir, o.seed);
  KnownValues values(b);

  CheckOptions co;
  std::vector<std::string> resolved;
  co.check = absolute_check_paths(o.check, &resolved);
  co.prefix = absolute_check_paths(o.worker_prefix, &resolved);
  if (!o.format.empty() && o.format != "onnx" && o.format != "rk") throw UserError("--format must be rk or onnx; got '" + o.format + "'");
  const bool onnx = o.format.empty() ? is_onnx_path(o.model) : o.format == "onnx";
  co.format = onnx ? ModelFormat::onnx : ModelFormat::rk;
  for (auto& [name, t] : known) co.weights.insert(name);
  co.jobs = std::max(1, o.jobs);
  co.fail_regex = o.fail_regex;
  if (!co.fail_regex.empty()) Regex(co.fail_regex, "--fail-regex");  // a pattern RE2 refuses: before anything is written
  co.hang_is_interesting = o.hang_is_interesting;
  co.keep_candidates = o.keep_candidates;

  // OUT: never over an earlier run's files unless resuming it.
  std::string out_path = o.out_dir.empty() ? fs::path(o.model).stem().string() + ".reduced" : o.out_dir;
  std::error_code ec;
  const bool empty_out = fs::is_directory(out_path, ec) && fs::is_empty(out_path, ec);
  if (!o.resume && fs::exists(out_path, ec) && !empty_out)
    throw UserError(fmt::format("'{}' already exists: pass --resume to continue the reduction it holds, or -o a new directory", out_path));
  if (o.resume && fs::exists(out_path, ec) && !empty_out && !holds_a_reduction(out_path))  // else its inputs/*.npy would be replaced
    throw UserError(fmt::format("'{}' holds no reduction to resume (no reduce_work/state.json in it) and is never written into: -o a new directory",
                                out_path));
  Dir out = Dir::create(fs::absolute(out_path).string());  // checks run in it: an absolute path
  Dir state_dir = out.sub("reduce_work", true);  // a symlink there is refused, never followed
  co.work_dir = o.work_dir.empty() ? fs::absolute(state_dir.path()).string() : fs::absolute(o.work_dir).string();
  co.first_candidate = next_candidate_number(co.work_dir);
  on_termination_signal("\n[reduce] interrupted before any repro was written: nothing to resume\n");
  adopt_orphans();  // a daemon a check or worker leaves behind is stopped, not left running (subprocess.h)

  auto candidate_values = [&](const Candidate& c) { return candidate_inputs(c, b, values); };
  // What the check is shown: a value edit that drives an op out of its domain is never asked about.
  auto checked_values = [&](const Candidate& c) {
    if (auto why = value_edit_leaves_domain(c, b, values)) throw UserError(*why);
    return candidate_inputs(c, b, values);
  };
  fmt::print(stderr, "[reduce] model {}: graph {} ({} ops, {} inputs), candidates as {} in {}\n[reduce] check: {}\n", o.model, b.graph.name,
             b.graph.num_ops(), b.graph.num_inputs(), model_extension(co.format), co.work_dir,
             shell_quote_command(check_argv_as_written(co)));

  for (auto& r : resolved) fmt::print(stderr, "[reduce] checks run in each candidate's directory: {}\n", r);

  // 1. The original must be interesting (several runs: a flaky check is measured).
  co.timeout_s = o.timeout_s > 0 ? o.timeout_s : 300;  // generous until the original is timed
  Candidate original;
  original.graph = b.graph;
  ProbeOptions po;
  po.runs = std::max(1, o.flaky_checks);
  po.look_until = po.runs;  // no recorded failure to look for: the check says what it says
  fmt::print(stderr, "[reduce] checking that the original is interesting (up to {} runs)...\n", po.runs);
  CheckOracle probe(co, checked_values);
  Verdict first_interesting;
  ProbeResult pr = probe_original(po, [&] {
    Verdict v = probe.judge({original}).at(0);
    if (v.interesting && !first_interesting.interesting) first_interesting = v;
    return v;
  });
  if (pr.fails == 0) {
    fmt::print(stderr, "[reduce] the original model is not interesting in {} run{}: {}: nothing to reduce.\n", pr.runs, pr.runs == 1 ? "" : "s",
               pr.other.failed() ? pr.other.message : o.fail_regex.empty() ? std::string("the check exited with status 0") : "the check's output does not match --fail-regex");
    return 1;
  }
  // What made it interesting, so a check that fails for the wrong reason (a missing file, a
  // typo) shows at once.
  fmt::print(stderr, "[reduce] the original is interesting: {}\n", first_interesting.got.failed() ? first_interesting.got.message : "(the check said so)");
  co.first_candidate += pr.runs;  // after the probe's
  if (o.timeout_s <= 0) co.timeout_s = std::max(10.0, 3 * pr.slowest_s + 5);
  const int attempts = pr.attempts_per_candidate();
  const double rate = pr.rate();
  if (rate < 1)
    fmt::print(stderr, "[reduce] the check is flaky: interesting in {} of {} runs ({:.0f}%); each candidate gets up to {} tries\n", pr.fails, pr.runs,
               rate * 100, attempts);
  CheckOracle oracle(co, checked_values);
  fmt::print(stderr, "[reduce] per-check time limit {}, {} job{}\n", oracle.limit().describe("a hang is interesting"), co.jobs, co.jobs == 1 ? "" : "s");

  // 2. Resume from the best candidate an earlier run left behind.
  Candidate start = original;
  if (o.resume && state_dir.exists("state.json")) {
    start = read_best_candidate(state_dir);
    try {  // untrusted: every window and index must fit
      candidate_values(start);
    } catch (const UserError& e) {
      throw UserError(fmt::format("{}: {}", state_dir.path("state.json"), e.what()));
    }
    fmt::print(stderr, "[reduce] resuming from {} ({} ops)\n", state_dir.path("state.json"), start.graph.num_ops());
  }

  // 3. Reduce; after every success the best repro so far is in OUT.
  const int start_nodes = b.graph.num_ops();
  auto save = [&](const Candidate& c) {
    write_repro(out, c.graph, candidate_values(c), co);
    state_dir.write("state.json", json{{"best", c.to_json()}}.dump());
  };
  save(start);
  on_termination_signal(fmt::format("\n[reduce] interrupted: the best repro so far is in {}\n[reduce] continue with the same command and --resume\n", out.path()));
  ProgressPrinter printer("reduce", start_nodes);
  MinifyCallbacks cb;
  cb.on_success = [&](const Candidate& c, const MinifyProgress& p) {
    save(c);
    printer.line(p, true);
  };
  cb.on_progress = [&](const MinifyProgress& p) { printer.line(p, false); };
  MinifyOptions mo;
  mo.flaky_attempts = attempts;
  if (rate < 1) mo.restarts = 2;  // a flaky check can still say "not interesting" wrongly
  MinifyResult r = reduce(start, selected_strategies(o), oracle, mo, cb);
  printer.done();
  report_time_limits("reduce", r, oracle.limit().largest_given_s());
  save(r.best);

  // The passing twin, in the check's format, for the bug report.
  std::string twin_text;
  std::string difference;
  if (r.twin) {
    difference = describe_difference(r.best, *r.twin, {"interesting", "not interesting"});
    out.remove_tree("twin");
    write_model_files(out.sub("twin", true), r.twin->graph, candidate_values(*r.twin), co.format, co.weights);
    twin_text = fmt::format("## The nearest variant that is not interesting\n\n`twin/` holds it: {}.\n", difference);
    fmt::print(stderr, "[reduce] nearest variant that is not interesting (twin/): {}\n", difference);
  } else {
    out.remove_tree("twin");
  }

  // 4. Verify: the check once more, on the files in OUT.
  const std::string model_file = repro_path(out, co);
  const std::string rerun = shell_quote_command(check_argv(co, model_file));
  Verdict final_verdict;
  if (o.verify) {
    // In a copy of the repro's files under the work directory, as every candidate ran: a check
    // that cleans its directory ($REPRO_CANDIDATE_DIR) must not clean OUT.
    state_dir.remove_tree("verify");
    Dir verify = state_dir.sub("verify", true);
    const std::string copy = write_model_files(verify, r.best.graph, candidate_values(r.best), co.format, co.weights);
    final_verdict = oracle.run_in(verify, copy, oracle.limit().for_candidate(r.best));
    state_dir.remove_tree("verify");
    if (!final_verdict.interesting)
      fmt::print(stderr, "\n[reduce] !!! WARNING: the check does NOT find the final repro interesting in a fresh run !!!\n[reduce] !!! (cd {} && {})\n",
                 out.path(), rerun);
  }
  const bool reproduced = !o.verify || final_verdict.interesting;

  // 5. Report.
  const std::string interesting_rule = !o.fail_regex.empty() ? fmt::format("interesting when its output matches /{}/", o.fail_regex)
                                                              : "interesting when it exits with a non-zero status";
  const std::string said = final_verdict.got.failed() ? final_verdict.got.message : "(not verified)";
  json report = reduction_report(r, b.graph, rate, difference);
  report.update({{"model", o.model},
                 {"check", check_argv_as_written(co)},
                 {"interesting", interesting_rule},
                 {"format", std::string(model_extension(co.format)).substr(1)},
                 {"seconds", std::chrono::duration<double>(Clock::now() - t0).count()},
                 {"jobs", co.jobs},
                 {"verified", o.verify ? json(reproduced) : json(nullptr)},
                 {"final_check_said", said},
                 {"rerun", rerun}});
  out.write("report.json", report.dump(2) + "\n");
  const int final_ops = r.best.graph.num_ops();
  out.write("BUG_REPORT.md", render_template("REDUCE_REPORT.md", {{"MODEL", fs::path(o.model).filename().string()},
                                                                {"NODES", fmt::format("{} op{}", final_ops, final_ops == 1 ? "" : "s")},
                                                                {"ORIGINAL_OPS", std::to_string(start_nodes)},
                                                                {"ORIGINAL_ELEMENTS", std::to_string(input_elements(b.graph))},
                                                                {"ELEMENTS", std::to_string(input_elements(r.best.graph))},
                                                                {"QUERIES", std::to_string(r.queries)},
                                                                {"SECONDS", fmt::format("{:.1f}", r.seconds)},
                                                                {"FAILURE", said},
                                                                {"INTERESTING", interesting_rule},
                                                                {"RERUN", shell_quote_command(check_argv(co, fs::path(model_file).filename().string()))},
                                                                {"REPRO", fs::path(model_file).filename().string()},
                                                                {"GRAPH_TEXT", print_graph(r.best.graph)},
                                                                {"TWIN", twin_text}}));
  fmt::print("reprokit reduce: {} -> {} ops, {} -> {} input elements, {} checks ({} answered from cache), {:.1f}s\n{}\nrerun: (cd {} && {})\n{}{}\n",
             start_nodes, r.best.graph.num_ops(), input_elements(b.graph), input_elements(r.best.graph), r.queries, r.cache_hits,
             report["seconds"].get<double>(),
             !o.verify ? "not verified" : reproduced ? "verified: the check still finds it interesting in a fresh run" : "verified: NOT interesting (see the warning above)",
             out.path(), rerun, r.twin ? "twin/ (not interesting): " + difference + "\n" : std::string(), print_graph(r.best.graph));
  std::string files;
  for (const char* f : {"repro.rk", "repro.onnx", "inputs/", "repro_torch.py", "BUG_REPORT.md", "report.json", "twin/"})
    if (out.exists(std::string(f).substr(0, std::string(f).find('/')))) files += std::string(" ") + f;
  fmt::print("\nfiles in {}:{}\n", out.path(), files);
  return reproduced ? 0 : 1;
}

}  // namespace reprokit
