// The check-command oracle of `reprokit reduce` (see check_oracle.h).
#include "reprokit/minifier/check_oracle.h"

#include <fmt/format.h>

#include <filesystem>
#include <future>

#include "reprokit/process/self_executable.h"
#include "reprokit/support/errors.h"
#include "reprokit/support/tool_failure.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/onnx/onnx_export.h"
#include "reprokit/process/child_end.h"
#include "reprokit/process/subprocess.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/support/command_words.h"

namespace reprokit {

std::string_view model_extension(ModelFormat f) { return f == ModelFormat::onnx ? ".onnx" : ".rk"; }

std::string write_model_files(const Dir& dir, const Graph& g, const std::vector<Tensor>& inputs, ModelFormat format,
                              const std::set<std::string>& weights, const OriginalOnnxModel* original, OnnxNodesForm form) {
  Dir in = dir.sub("inputs", true);
  if (original && format == ModelFormat::onnx) {
    OriginalOnnxModel::Written w = original->write(g, inputs, weights, form);
    for (int i : w.fed_inputs) in.write(g.node(i).name + ".npy", encode_npy(inputs.at(static_cast<size_t>(i))));
    dir.write("model.onnx", w.model);
    return dir.path("model.onnx");
  }
  std::map<std::string, Tensor> initializers;
  for (int i = 0; i < g.num_inputs(); ++i) {
    const std::string& name = g.node(i).name;
    if (format == ModelFormat::onnx && weights.count(name)) initializers.emplace(name, inputs.at(static_cast<size_t>(i)));
    else in.write(name + ".npy", encode_npy(inputs.at(static_cast<size_t>(i))));
  }
  std::string file = "model" + std::string(model_extension(format));
  dir.write(file, format == ModelFormat::onnx ? export_onnx(g, initializers) : print_graph(g));
  return dir.path(file);
}

std::vector<std::string> absolute_check_paths(const std::vector<std::string>& words, std::vector<std::string>* changed) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    const bool candidate_name = w == "inputs" || w == "model.rk" || w == "model.onnx";
    const bool names_candidate = substitute_candidate({w}, "") != std::vector<std::string>{w};
    std::error_code ec;
    if (w.empty() || w[0] == '/' || w[0] == '-' || candidate_name || names_candidate || (i == 0 && w.find('/') == std::string::npos) ||
        !fs::exists(w, ec)) {
      out.push_back(w);
      continue;
    }
    out.push_back(fs::absolute(w).lexically_normal().string());
    if (changed) changed->push_back(w + " -> " + out.back());
  }
  return out;
}

bool check_could_not_run(int exit_code, bool under_prefix) { return exit_code == 126 || exit_code == 127 || (under_prefix && exit_code == 125); }

std::vector<std::string> check_argv_as_written(const CheckOptions& o) { return argv_under_launcher(o.prefix, o.check); }

std::vector<std::string> check_argv(const CheckOptions& o, const std::string& model_path) {
  refuse_path_under_launcher(o.prefix, model_path, "the candidate's path");
  return argv_under_launcher(o.prefix, substitute_candidate(o.check, model_path));
}

CheckOracle::CheckOracle(CheckOptions options, CandidateInputs inputs)
    : options_(std::move(options)),
      inputs_(std::move(inputs)),
      limit_(options_.timeout_s, options_.hang_is_interesting),
      counter_(options_.first_candidate - 1) {
  if (!options_.fail_regex.empty()) { regex_.emplace(options_.fail_regex, "--fail-regex"); }
  candidates_.emplace(Dir::create(options_.work_dir).sub("candidates", true));
}

namespace {

// The first non-empty line of s (for a one-line verdict).
std::string first_line(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, std::min(s.find('\n', b), b + 300) - b);
}

// ": <first line>" of what the check printed, or nothing.
std::string said(const std::string& output) {
  std::string l = first_line(output);
  return l.empty() ? "" : ": " + l;
}

}  // namespace

Verdict CheckOracle::run_in(const Dir& dir, const std::string& model_path, double limit_s) const {
  if (limit_s <= 0) limit_s = options_.timeout_s;
  ProcessSpec ps;
  ps.argv = check_argv(options_, model_path);
  ps.cwd = dir.path();
  // Beside the candidate's directory, not in it: the check sees only the candidate's files.
  const std::string tool_log = dir.path() + ".tool-failures";
  std::error_code ec;
  std::filesystem::remove(tool_log, ec);
  const std::string exe = self_executable();
  ps.env_set = tool_failure_environment(tool_log, exe.front() == '/' ? exe : "");
  ps.env_set.insert({{"REPRO_CANDIDATE", model_path}, {"REPRO_CANDIDATE_DIR", dir.path()}});
  ps.timeout_s = limit_s;
  ProcessResult r;
  try {
    r = run_process(ps);
  } catch (const std::runtime_error& e) {
    throw UserError(fmt::format("the check '{}' cannot be started: {}", shell_quote_command(ps.argv), e.what()));
  }
  const std::string tool_failed = recorded_tool_failures(tool_log);
  std::filesystem::remove(tool_log, ec);
  if (!tool_failed.empty()) {  // reprokit's own bug inside the check: no answer about the candidate
    Verdict v;
    v.unknown = true;
    v.seconds = r.seconds;
    details(v).output = r.out + r.err;
    details(v).tool_failure = tool_failed;
    return v;
  }
  const ChildEnd end = child_end(r);
  if (end.how == ChildEnd::How::exited && check_could_not_run(end.exit_code, !options_.prefix.empty()))  // not an answer: stop rather than guess
    throw UserError(fmt::format("the check could not run (exit status {}: {}){}: {}", end.exit_code,
                                end.exit_code == 127   ? "command not found"
                                : end.exit_code == 126 ? "not executable"
                                                       : "the launcher itself failed",
                                options_.prefix.empty() ? "" : " under the worker prefix", shell_quote_command(ps.argv)) +
                    said(r.err));
  Verdict v;
  v.seconds = r.seconds;
  if (end.how == ChildEnd::How::timed_out) {
    set_failure(v, failure_from(FailureKind::timeout, fmt::format("the check ran past {:g} s and was stopped", limit_s)));
    v.interesting = options_.hang_is_interesting;
    v.timeouts = 1;
    return v;
  }
  std::string output = r.out + r.err;
  details(v).output = output;
  bool nonzero = !end.exited_with(0);
  std::optional<std::string> match = regex_ ? regex_->search(output) : std::nullopt;
  bool matched = match.has_value();
  v.interesting = regex_ ? matched : nonzero;
  if (end.how == ChildEnd::How::signalled) {
    Failure crash = failure_from(FailureKind::crash, fmt::format("the check died of signal {}{}", end.signal, said(r.err)));
    crash.signal = end.signal;
    set_failure(v, crash);
  } else if (matched) {
    set_failure(v, failure_from(FailureKind::runtime_error, fmt::format("the check's output matches: {}", first_line(*match))));
  } else if (nonzero) {
    Failure exited = failure_from(FailureKind::runtime_error,
                                  fmt::format("the check exited with status {}{}", end.exit_code, said(r.err.empty() ? r.out : r.err)));
    exited.signature += fmt::format(" [exit status {}]", end.exit_code);  // the number is the check's answer: kept through normalisation
    set_failure(v, exited);
  }
  return v;
}

std::vector<Verdict> CheckOracle::judge(const std::vector<Candidate>& cands) {
  return judge_within_limits(cands, limit_, [this](const std::vector<Candidate>& batch, const std::vector<double>& limits) {
    return in_slices(options_.jobs, batch, limits, [this](auto slice, auto slice_limits) { return run_side_by_side(slice, slice_limits); });
  });
}

// The next c<N> that names nothing yet, created: an earlier run's directory (kept with
// --keep-candidates, or left by an interrupted run) is never removed nor written into; the
// count skips past it.
std::string CheckOracle::new_candidate_dir() {
  for (;;) {
    std::string name = fmt::format("c{:05d}", ++counter_);
    if (candidates_->make_new_dir(name)) return name;
  }
}

std::vector<Verdict> CheckOracle::run_side_by_side(std::span<const Candidate> cands, std::span<const double> limits) {
  std::vector<Verdict> out(cands.size());
  // Files are written here, one after another (input values come from a shared cache); the
  // checks then run side by side.
  std::vector<std::optional<std::pair<std::string, std::string>>> made(cands.size());  // (dir name, model path)
  for (size_t i = 0; i < cands.size(); ++i) {
    std::string name = new_candidate_dir();
    Dir d = candidates_->sub(name);
    try {
      made[i] = {{name, write_model_files(d, cands[i].graph, inputs_(cands[i]), options_.format, options_.weights, options_.original_onnx.get())}};
    } catch (const UserError& e) {  // inputs that do not fit, a graph ONNX cannot hold: never shown to the check
      set_failure(out[i], failure_from(FailureKind::invalid_candidate, e.what()));
      candidates_->remove_tree(name);  // its number goes to the next check that runs: dirs count runs
      --counter_;
    }
  }
  std::vector<std::future<Verdict>> running(cands.size());
  for (size_t k = 0; k < made.size(); ++k)
    if (made[k])
      running[k] = std::async(std::launch::async,
                              [this, k, &made, limit = limits[k]] { return run_in(candidates_->sub(made[k]->first), made[k]->second, limit); });
  for (size_t k = 0; k < made.size(); ++k) {
    if (!made[k]) continue;
    out[k] = running[k].get();
    if (!options_.keep_candidates) candidates_->remove_tree(made[k]->first);
  }
  for (Verdict& v : out) {
    stop_on_tool_failure(v, options_);
    keep_to_the_first_failure(v);
  }
  return out;
}

void CheckOracle::keep_to_the_first_failure(Verdict& v) {
  if (!options_.keep_first_failure || !v.interesting) return;
  std::optional<Failure>& first = *options_.first_failure;
  if (!first) {
    first = failure_of(v);
    return;
  }
  if (same_failure(*first, failure_of(v))) return;
  v.interesting = false;
  details(v).got.message = fmt::format("another failure than the original's ({}; the original's: {})", failure_of(v).message, first->message);
}

void stop_on_tool_failure(const Verdict& v, const CheckOptions& o) {
  if (details(v).tool_failure.empty()) return;
  throw UserError(
      fmt::format("the check ran reprokit, and reprokit itself failed: a tool failure, not the check's answer, so nothing is "
                  "concluded from it (report it as reprokit's bug): {}the check: {}",
                  details(v).tool_failure, shell_quote_command(check_argv_as_written(o))));
}

}  // namespace reprokit
