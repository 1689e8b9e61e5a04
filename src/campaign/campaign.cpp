// The campaign loop of `reprokit fuzz` (campaign.h): generate a batch of graphs, judge them at
// once (one thread per graph, each running its children), then, in graph order, record and
// minify the findings and write state.json, so an interrupted campaign resumes after the last
// graph it finished.
#include "reprokit/campaign/campaign.h"

#include <fmt/core.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>

#include "campaign_state.h"
#include "reprokit/codegen/unsupported.h"
#include "reprokit/harness/bundle.h"
#include "reprokit/process/child_end.h"
#include "reprokit/process/self_executable.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/names.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/minifier/check_oracle.h"
#include "reprokit/process/subprocess.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/support/command_words.h"

namespace reprokit {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint64_t kSeedStride = 1000003;  // as `reprokit generate`: graph i of seed S is S * stride + i
constexpr size_t kRejectedExamples = 5;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string last_line(const std::string& text) {
  size_t end = text.find_last_not_of("\n\r ");
  if (end == std::string::npos) return "";
  size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
}

// One run of a graph: a backend and mode of the stack, or the user's check.
struct RunOutcome {
  enum What { pass, unsupported, not_exportable, timeout, rejected, finding } what = pass;
  std::string backend, mode, kind, message;
  std::string bundles;  // the scratch directory holding the run's bundles (internal mode)
};

struct Judged {
  int64_t index = 0;
  GeneratedCase c;
  std::vector<RunOutcome> runs;
};

// The bundles under `dir` that record a failure (a level-4 bundle is written before compiling and
// removed when the graph passes; one left without a failure was cut short).
std::vector<Bundle> failed_bundles(const fs::path& dir) {
  std::vector<Bundle> out;
  std::error_code ec;
  std::vector<fs::path> subs;
  for (auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory(ec) && !e.is_symlink(ec)) subs.push_back(e.path());
  std::sort(subs.begin(), subs.end());
  for (auto& s : subs) {
    try {
      Bundle b = load_bundle(s.string());
      if (b.spec.expected.failed()) out.push_back(std::move(b));
    } catch (const std::exception&) {
      // A bundle cut short mid-write is not a finding of its own; the run's status says what happened.
    }
  }
  return out;
}

std::vector<std::string> modes_of(const CampaignOptions& o) {
  if (!o.check.empty()) return {"check"};
  if (o.generator.train) return {"forward", "train"};
  return {"forward"};
}

std::vector<std::string> run_argv(const std::string& model, const std::string& inputs, const std::string& backend, const std::string& mode) {
  std::vector<std::string> argv{self_executable(), "run", model, "--inputs", inputs, "--backend", backend};
  if (mode == "train") argv.push_back("--train");
  return argv;
}

std::map<std::string, std::string> harness_env(const std::string& bundles, double timeout_s) {
  return {
      {"REPRO_AFTER", "aot"}, {"REPRO_LEVEL", "4"}, {"REPRO_DIR", bundles}, {"REPRO_TIMEOUT", fmt::format("{}", timeout_s)}, {"REPRO_MINIFY", "0"}};
}

// Every backend and mode of the graph in `scratch` through `reprokit run` under the harness.
std::vector<RunOutcome> judge_on_stack(const CampaignOptions& o, const Dir& scratch) {
  std::vector<RunOutcome> outs;
  for (const std::string& backend : o.backends)
    for (const std::string& mode : modes_of(o)) {
      RunOutcome out;
      out.backend = backend;
      out.mode = mode;
      out.bundles = scratch.path("bundles-" + backend + "-" + mode);
      ProcessSpec ps;
      ps.argv = run_argv(scratch.path("model.rk"), scratch.path("inputs"), backend, mode);
      ps.env_set = harness_env(out.bundles, o.timeout_s);
      ps.timeout_s = 4 * o.timeout_s + 60;  // the harness's watchdog ends a hang; this only ends a stuck harness
      ProcessResult r;
      try {
        r = run_process(ps);
      } catch (const std::runtime_error& e) { throw UserError(fmt::format("cannot start {}: {}", ps.argv[0], e.what())); }
      std::vector<Bundle> failed = failed_bundles(out.bundles);
      const ChildEnd end = child_end(r);
      if (end.exited_with(0) && failed.empty()) {
        out.what = RunOutcome::pass;
      } else if (end.refused()) {
        // The backend's compiler lacks an op or a type of the graph: a limitation, not a finding.
        out.message = last_line(r.err);
        out.what = is_unsupported_line(out.message) ? RunOutcome::unsupported : RunOutcome::rejected;
      } else if (!failed.empty()) {
        out.what = RunOutcome::finding;
        out.kind = std::string(failed.front().spec.expected.kind_name());
        out.message = failed.front().spec.expected.message;
      } else {
        out.what = RunOutcome::finding;
        out.kind = "internal";
        out.message = end.how == ChildEnd::How::timed_out   ? fmt::format("reprokit run did not finish within {:g} s", ps.timeout_s)
                      : end.how == ChildEnd::How::signalled ? fmt::format("reprokit run died of signal {}: {}", end.signal, last_line(r.err))
                                                            : fmt::format("reprokit run exited with status {}: {}", end.exit_code, last_line(r.err));
      }
      outs.push_back(std::move(out));
    }
  return outs;
}

// The graph through the user's check (as `reprokit reduce` runs it).
RunOutcome judge_by_check(const CheckOracle& oracle, const std::optional<Regex>& unsupported, ModelFormat format, const Dir& scratch,
                          const GeneratedCase& c) {
  RunOutcome out;
  out.mode = "check";
  std::string model;
  try {
    model = write_model_files(scratch, c.graph, c.inputs, format, {});
  } catch (const UserError& e) {  // an op or dtype ONNX has no form for
    out.what = RunOutcome::not_exportable;
    out.message = e.what();
    return out;
  } catch (const std::exception& e) {  // the exporter wrote a model ONNX's checker refuses: reprokit's bug
    out.what = RunOutcome::finding;
    out.backend = "onnx_export";
    out.kind = "internal";
    out.message = e.what();
    return out;
  }
  Verdict v = oracle.run_in(scratch, model);
  if (!details(v).tool_failure.empty()) {  // reprokit's own bug inside the check: a finding of its own, never the compiler's
    out.what = RunOutcome::finding;
    out.backend = "reprokit";
    out.kind = "internal";
    out.message = details(v).tool_failure;
  } else if (v.timeouts && !v.interesting) {
    out.what = RunOutcome::timeout;
  } else if (v.interesting) {
    out.what = RunOutcome::finding;
    out.kind = "check";
    out.message = failure_of(v).message;
  } else if (unsupported) {
    if (auto m = unsupported->search(details(v).output)) {
      out.what = RunOutcome::unsupported;
      out.message = *m;
    }
  }
  return out;
}

class Campaign {
 public:
  Campaign(CampaignOptions options, Dir dir, CampaignState state) : o_(std::move(options)), dir_(std::move(dir)), st_(std::move(state)) {
    if (!o_.check.empty()) {
      CheckOptions co;
      co.check = absolute_check_paths(split_command_words(o_.check, "--check"));
      co.format = o_.format == "rk" ? ModelFormat::rk : ModelFormat::onnx;
      co.timeout_s = o_.timeout_s;
      co.fail_regex = o_.fail_regex;
      co.work_dir = dir_.path("graphs/check");  // the oracle's candidate area (unused: whole graphs are judged in graphs/<name>)
      if (!o_.unsupported_regex.empty()) unsupported_.emplace(o_.unsupported_regex, "--unsupported-regex");
      oracle_.emplace(co, [](const Candidate&) -> std::vector<Tensor> { throw UserError("a campaign's check judges whole graphs only"); });
    }
  }

  void run() {
    const auto start = Clock::now();
    const double elapsed_before = st_.elapsed_s;
    auto checkpoint = [&] {
      st_.elapsed_s = elapsed_before + since(start);
      write_state(dir_, st_);
    };
    for (auto& f : st_.findings)
      if (f.minify == "pending") {  // an interrupted campaign: finish what it was minifying
        minify(f, /*resume=*/true);
        checkpoint();
      }
    int64_t judged_now = 0;
    while (since(start) < o_.budget_s && (o_.max_graphs == 0 || judged_now < o_.max_graphs)) {
      std::vector<Judged> batch = generate_batch(o_.max_graphs ? std::min<int64_t>(o_.jobs, o_.max_graphs - judged_now) : o_.jobs);
      const auto t_judge = Clock::now();
      std::vector<std::future<std::vector<RunOutcome>>> running;
      for (auto& j : batch) running.push_back(std::async(std::launch::async, [this, &j] { return judge(j); }));
      for (size_t k = 0; k < batch.size(); ++k) batch[k].runs = running[k].get();
      st_.judge_s += since(t_judge);
      for (auto& j : batch) {
        record(j);
        dir_.sub("graphs").remove_tree(j.c.graph.name);
        st_.next_index = j.index + 1;
        ++judged_now;
        checkpoint();
        for (auto& f : st_.findings)
          if (f.minify == "pending") {
            minify(f, false);
            checkpoint();
          }
        progress(start, false);
      }
      if (batch.empty()) checkpoint();  // every seed of the batch gave no case
    }
    checkpoint();
    if (dir_.is_dir("graphs")) dir_.remove_tree("graphs");  // scratch: every graph in it has been judged
    progress(start, true);
    std::vector<BugGroup> bugs = campaign_bugs(dir_);
    fmt::print("{}", write_report(dir_, st_, bugs));
  }

 private:
  // The next `want` graphs of the campaign (seeds that give none are counted and skipped).
  std::vector<Judged> generate_batch(int64_t want) {
    std::vector<Judged> batch;
    const auto t = Clock::now();
    int64_t index = st_.next_index;
    for (int tries = 0; static_cast<int64_t>(batch.size()) < want && tries < 100 * want; ++tries, ++index) {
      GenerateOutcome why;
      auto c = generate_case(o_.seed * kSeedStride + static_cast<uint64_t>(index), o_.generator, &why);
      if (!c) {
        (why == GenerateOutcome::no_graph ? st_.counts.no_graph : st_.counts.no_values)++;
        st_.next_index = index + 1;  // counted: never counted again
        continue;
      }
      batch.push_back({index, std::move(*c), {}});
    }
    st_.generate_s += since(t);
    return batch;
  }

  std::vector<RunOutcome> judge(const Judged& j) {
    Dir scratch = dir_.sub("graphs/" + j.c.graph.name, true);
    if (oracle_) return {judge_by_check(*oracle_, unsupported_, oracle_->options().format, scratch, j.c)};
    write_graph(scratch, j.c);
    return judge_on_stack(o_, scratch);
  }

  static void write_graph(const Dir& d, const GeneratedCase& c) {
    d.write("model.rk", print_graph(c.graph));
    Dir in = d.sub("inputs", true);
    for (int k = 0; k < c.graph.num_inputs(); ++k) in.write(c.graph.node(k).name + ".npy", encode_npy(c.inputs[static_cast<size_t>(k)]));
  }

  void record(const Judged& j) {
    ++st_.counts.graphs;
    for (const RunOutcome& r : j.runs) {
      ++st_.counts.runs;
      switch (r.what) {
        case RunOutcome::pass: ++st_.counts.passed; break;
        case RunOutcome::timeout: ++st_.counts.timeouts; break;
        case RunOutcome::not_exportable: ++st_.counts.not_exportable; break;
        case RunOutcome::unsupported: ++st_.counts.unsupported; break;
        case RunOutcome::rejected:
          ++st_.counts.rejected;
          if (st_.rejected_examples.size() < kRejectedExamples)
            st_.rejected_examples.push_back(fmt::format("{} ({}, {}): {}", j.c.graph.name, r.backend, r.mode, r.message));
          break;
        case RunOutcome::finding:
          ++st_.counts.findings;
          add_finding(j, r);
          break;
      }
    }
  }

  // findings/<id>/: the graph (model.rk, inputs/, and the check's format), finding.json, and the
  // run's bundles moved out of the scratch directory.
  void add_finding(const Judged& j, const RunOutcome& r) {
    Dir findings = dir_.sub("findings", true);
    std::string id = r.mode == "check" ? j.c.graph.name : fmt::format("{}-{}-{}", j.c.graph.name, r.backend, r.mode);
    for (int n = 2; !findings.make_new_dir(id); ++n)  // left by a campaign cut short before it recorded it
      id = fmt::format("{}-{}", r.mode == "check" ? j.c.graph.name : fmt::format("{}-{}-{}", j.c.graph.name, r.backend, r.mode), n);
    Dir d = findings.sub(id);
    write_graph(d, j.c);
    std::vector<std::string> rerun;
    std::map<std::string, std::string> env;
    if (oracle_ && r.backend == "onnx_export") {
      rerun = {self_executable(), "export", d.path("model.rk"), "-o", d.path("model.onnx")};
    } else if (oracle_) {
      std::string model = write_model_files(d, j.c.graph, j.c.inputs, oracle_->options().format, {});
      rerun = check_argv(oracle_->options(), model);
    } else {
      if (fs::is_directory(r.bundles)) fs::rename(r.bundles, d.path("bundles"));
      rerun = run_argv(d.path("model.rk"), d.path("inputs"), r.backend, r.mode);
      env = {{"REPRO_AFTER", "aot"}, {"REPRO_LEVEL", "4"}};
    }
    nlohmann::json fj = {{"graph", j.c.graph.name},
                         {"index", j.index},
                         {"seed", o_.seed * kSeedStride + static_cast<uint64_t>(j.index)},
                         {"backend", r.backend},
                         {"mode", r.mode},
                         {"kind", r.kind},
                         {"message", r.message},
                         {"rerun", shell_quote_command(rerun, env)}};
    d.write("finding.json", fj.dump(2) + "\n");
    CampaignFinding f{id, j.c.graph.name, j.index, r.backend, r.mode, r.kind, r.message};
    const bool has_bundles = (oracle_ && r.backend != "onnx_export") || d.is_dir("bundles");
    f.minify = !o_.minify ? "off" : has_bundles ? "pending" : "not needed";
    st_.findings.push_back(std::move(f));
  }

  // Minifies a finding in child processes (`reprokit minify` per bundle, or `reprokit reduce`);
  // their output goes to findings/<id>/minify.log.
  void minify(CampaignFinding& f, bool resume) {
    const auto t = Clock::now();
    Dir d = dir_.sub("findings/" + f.id);
    // The children are handed paths, which they open as a user's paths (following symlinks): none
    // of these may be a symlink a tampered campaign planted, or its writes would land outside it.
    for (const char* rel : {"model.rk", "inputs", "reduced", "bundles"}) {
      std::error_code ec;
      if (fs::is_symlink(fs::symlink_status(d.path(rel), ec)))
        throw UserError(fmt::format("{}: is a symbolic link; a campaign's files are its own, so nothing was written through it", d.path(rel)));
    }
    std::vector<std::vector<std::string>> commands;
    const std::string jobs = std::to_string(o_.jobs);
    if (oracle_) {
      // The generated graph itself is reduced (its candidates written in the check's format): an
      // ONNX model read back would be the importer's rendering of it, and could be refused by it.
      std::vector<std::string> argv{self_executable(),
                                    "reduce",
                                    d.path("model.rk"),
                                    "--format",
                                    o_.format,
                                    "--check",
                                    o_.check,
                                    "--inputs",
                                    d.path("inputs"),
                                    "-o",
                                    d.path("reduced"),
                                    "--jobs",
                                    jobs,
                                    "--timeout",
                                    fmt::format("{}", o_.timeout_s)};
      if (!o_.fail_regex.empty()) argv.insert(argv.end(), {"--fail-regex", o_.fail_regex});
      if (resume && d.is_dir("reduced")) argv.push_back("--resume");
      commands.push_back(std::move(argv));
    } else if (d.is_dir("bundles")) {
      for (const Bundle& b : failed_bundles(d.path("bundles"))) {
        std::vector<std::string> argv{self_executable(), "minify", b.dir, "--jobs", jobs};
        if (resume && fs::is_directory(fs::path(b.dir) / "minify_work")) argv.push_back("--resume");
        commands.push_back(std::move(argv));
      }
    }
    std::string log;
    bool ok = !commands.empty();
    for (auto& argv : commands) {
      progress_note(fmt::format("minifying {} ...", f.id));
      ProcessSpec ps;
      ps.argv = argv;
      ProcessResult r;
      try {
        r = run_process(ps);
      } catch (const std::runtime_error& e) { throw UserError(fmt::format("cannot start {}: {}", argv[0], e.what())); }
      log += fmt::format("$ {}\n{}{}[exit status {}{}]\n\n", shell_quote_command(argv), r.out, r.err, r.exit_code,
                         r.signal ? fmt::format(", signal {}", r.signal) : "");
      ok = ok && child_end(r).exited_with(0);
    }
    d.write("minify.log", log);
    f.minify = ok ? "minimized" : "failed";
    f.minify_s += since(t);
    st_.minify_s += since(t);
  }

  // The progress line: rewritten in place on a terminal, a line a minute otherwise.
  void progress(Clock::time_point start, bool final) {
    const double s = since(start);
    const bool tty = isatty(2);
    if (!final && !tty && s - last_progress_s_ < 60) return;
    last_progress_s_ = s;
    const CampaignCounts& c = st_.counts;
    std::string line =
        fmt::format("reprokit fuzz: {} graphs, {} runs ({:.2f} graphs/s), {} passed, {} findings, {} rejected, {:.0f} s left", c.graphs, c.runs,
                    s > 0 ? static_cast<double>(c.graphs) / st_.elapsed_s : 0, c.passed, c.findings, c.rejected, std::max(0.0, o_.budget_s - s));
    if (tty) fmt::print(stderr, "\r{}\x1b[K{}", line, final ? "\n" : "");
    else fmt::print(stderr, "{}\n", line);
  }
  void progress_note(const std::string& what) {
    if (isatty(2)) fmt::print(stderr, "\r{}\x1b[K", what);
  }

  CampaignOptions o_;
  Dir dir_;
  CampaignState st_;
  std::optional<CheckOracle> oracle_;
  std::optional<Regex> unsupported_;
  double last_progress_s_ = -1e9;
};

}  // namespace

// A resumed campaign runs no command read from its state.json (anyone who could write the file
// would choose what runs): the check is given again on the command line and must be the one the
// campaign started with; the stored one is only shown, escaped.
static void check_resumed_check(const std::string& stored, const std::string& given, const std::string& state_file) {
  if (stored == given) return;
  if (given.empty())
    throw UserError(
        fmt::format("{}: this campaign judges graphs by a check command, and reprokit runs no command read from a file: "
                    "give it again with --check to resume (state.json says {})",
                    state_file, c_string_literal(stored)));
  if (stored.empty()) throw UserError(fmt::format("{}: this campaign runs reprokit's own stack, not a check: resume it without --check", state_file));
  throw UserError(fmt::format("{}: --check {} is not the check this campaign started with ({}); nothing was run", state_file, c_string_literal(given),
                              c_string_literal(stored)));
}

// What `reprokit run` said when it refused its input: its error, without the command's prefix
// (the notes before it are not the reason).
static std::string refusal_text(const std::string& err) {
  const std::string mark = "reprokit run: error: ";
  const size_t at = err.rfind(mark);
  std::string text = at == std::string::npos ? err : err.substr(at + mark.size());
  text.erase(text.find_last_not_of("\n\r ") + 1);
  return text;
}

// A backend that cannot run at all on this machine (no CUDA driver, no Node.js, no Python with
// torch) makes every run of every graph exit 2, which a campaign counts as a graph reprokit
// refused (a generator bug): a campaign of nothing but noise. Each backend runs a one-op graph
// first, as the campaign's runs do (`reprokit run`, here without the harness); a backend that
// refuses it (exit 2) is refused with its own message before any graph is judged.
static void refuse_unavailable_backends(const std::vector<std::string>& backends) {
  const ScratchDir scratch_dir("reprokit-backend-check-");
  const std::string& scratch = scratch_dir.path();
  scratch_dir.dir().write("model.rk", "graph backend_check(%x: f32[4]) {\n  %y = relu(%x)\n  return (%y)\n}\n");
  for (const std::string& backend : backends) {
    ProcessSpec ps;
    ps.argv = {self_executable(), "run", scratch + "/model.rk", "--backend", backend};
    ps.env_unset = {"REPRO_AFTER"};  // a harness the user's environment turns on would write bundles
    ps.timeout_s = 600;              // a backend that starts slowly (torch) is not refused for it
    ProcessResult r;
    try {
      r = run_process(ps);
    } catch (const std::runtime_error& e) { throw UserError(fmt::format("cannot start {}: {}", ps.argv[0], e.what())); }
    if (child_end(r).refused())
      throw UserError(fmt::format("--backend {}: the backend cannot run on this machine: {}\nno graph was judged", backend, refusal_text(r.err)));
  }
}

int run_campaign(const CampaignOptions& given) {
  // Absolute: a check runs in its graph's directory, so a relative model path would name nothing there.
  CampaignOptions options = given;
  options.dir = fs::absolute(given.dir).lexically_normal().string();
  CampaignState state;
  std::optional<Dir> dir;
  bool fresh = false;
  if (options.resume) {
    std::error_code ec;
    if (!fs::is_directory(options.dir, ec)) throw UserError(fmt::format("{}: no such campaign to resume", options.dir));
    dir.emplace(Dir::open(options.dir));
    if (!dir->exists("state.json")) throw UserError(fmt::format("{}: holds no campaign (no state.json); nothing was written", options.dir));
    state = read_state(*dir);
    check_resumed_check(state.options.check, options.check, dir->path("state.json"));
    state.options.budget_s = options.budget_s;  // this run's
    state.options.jobs = options.jobs;
    state.options.max_graphs = options.max_graphs;
    state.options.dir = options.dir;
    state.options.resume = true;
    if (state.options.check.empty()) refuse_unavailable_backends(state.options.backends);
    if (dir->exists("graphs")) dir->remove_tree("graphs");  // the scratch of the batch that was cut short
  } else {
    std::error_code ec;
    if (fs::exists(fs::symlink_status(options.dir, ec)))
      throw UserError(
          fmt::format("{}: already exists; continue that campaign with --resume or name a new directory (nothing was overwritten)", options.dir));
    if (options.check.empty()) refuse_unavailable_backends(options.backends);
    dir.emplace(Dir::create(options.dir));
    fresh = true;
    state.options = options;
    // Before the first batch: a campaign interrupted in it is then one --resume continues, as
    // the interruption message says (and not a directory that neither --resume nor a new run takes).
    write_state(*dir, state);
  }
  adopt_orphans();  // a daemon a run or check leaves behind is stopped, not left running (subprocess.h)
  on_termination_signal(fmt::format("\nreprokit fuzz: interrupted; {}/state.json holds the campaign: continue with `reprokit fuzz -o {} --resume`\n",
                                    options.dir, options.dir));
  try {
    Campaign(state.options, std::move(*dir), state).run();
  } catch (const UserError&) {
    // A check that cannot run ends a campaign that has judged nothing: leave no directory behind.
    if (fresh && !fs::exists(fs::path(options.dir) / "findings")) {
      std::error_code ec;
      fs::remove_all(options.dir, ec);
    }
    throw;
  }
  return 0;
}

}  // namespace reprokit
