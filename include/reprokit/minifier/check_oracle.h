// The oracle of `reprokit reduce`: a user's check command decides, as in Polygraphy's `debug
// reduce --check`, llvm-reduce's `--test` and C-Vise's interestingness test. Each candidate is
// written to its own directory (the model as .rk or .onnx plus inputs/<name>.npy) and the check
// runs there from an argv (no shell), up to `jobs` at once, each in its own process group.
#pragma once
#include <memory>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "reprokit/minifier/session.h"
#include "reprokit/onnx/onnx_original_nodes.h"
#include "reprokit/minifier/query_limit.h"
#include "reprokit/minifier/verdict_details.h"
#include "reprokit/runtime/tensor.h"
#include "reprokit/support/files.h"
#include "reprokit/support/regex.h"

namespace reprokit {

enum class ModelFormat { rk, onnx };
std::string_view model_extension(ModelFormat f);  // ".rk", ".onnx"

// Writes dir/model.rk or dir/model.onnx and dir/inputs/<input>.npy, and returns the model's path.
// In ONNX, inputs named in `weights` become initializers (an imported model's weights stay
// weights) and get no .npy file. With `original`, the ONNX model is g written as the original
// model's own nodes (onnx_original_nodes.h) in `form`, and only the inputs it takes get a .npy file.
std::string write_model_files(const Dir& dir, const Graph& g, const std::vector<Tensor>& inputs, ModelFormat format,
                              const std::set<std::string>& weights, const OriginalOnnxModel* original = nullptr, OnnxNodesForm form = {});

struct CheckOptions {
  std::vector<std::string> check;   // argv; "{}" and $REPRO_CANDIDATE name the candidate's model
  std::vector<std::string> prefix;  // a launcher every check runs under (srun ..., ssh HOST)
  ModelFormat format = ModelFormat::rk;
  std::set<std::string> weights;  // ONNX initializers (see write_model_files)
  // An ONNX model reduced in its own nodes: candidates are written as its nodes.
  std::shared_ptr<const OriginalOnnxModel> original_onnx;
  std::string work_dir;         // candidates go to work_dir/candidates/c<N>/
  int64_t first_candidate = 1;  // a resumed run numbers on after the earlier candidates
  int jobs = 1;
  double timeout_s = 60;             // the floor of QueryLimit (with hang_is_interesting: the hang threshold)
  std::string fail_regex;            // non-empty: interesting when the output matches (else: exit status != 0)
  bool hang_is_interesting = false;  // a check killed at the timeout counts as interesting
  bool keep_candidates = false;      // else a candidate's directory goes once its check is judged
  // A candidate is interesting only when the check fails the way it first failed (same exit status
  // or signal, same message class: failure.h's signature of its first line or of the regex's
  // match), so a reduction cannot slide to another bug; `reduce --allow-drift` turns it off.
  bool keep_first_failure = false;
  // Where that first failure is kept: shared by every oracle made from these options (the probe's
  // and the reduction's are two).
  std::shared_ptr<std::optional<Failure>> first_failure = std::make_shared<std::optional<Failure>>();
};

// Checks run in each candidate's directory, so a relative path the user wrote (`check.py`,
// `./check.sh`) would not be found there: words naming an existing file or directory relative to
// the current directory become absolute. Left alone: a command name without '/' (PATH finds it),
// words holding {} or the candidate variable, and the names a candidate directory has (inputs,
// model.rk, model.onnx). `changed` receives "word -> path" for each word made absolute.
std::vector<std::string> absolute_check_paths(const std::vector<std::string>& words, std::vector<std::string>* changed = nullptr);

// Exit statuses that mean the check itself could not run (126: not executable, 127: not found, as
// sh reports them; under a worker prefix also 125, a launcher's own failure, as nice, env and
// timeout report it): an error (UserError), never an answer.
bool check_could_not_run(int exit_code, bool under_prefix = false);

// The argv of one check of the model at `model_path` (prefix, then the check with it substituted).
std::vector<std::string> check_argv(const CheckOptions& o, const std::string& model_path);
// The same before substitution ({} and $REPRO_CANDIDATE as written), for messages and reports.
std::vector<std::string> check_argv_as_written(const CheckOptions& o);

// UserError when a reprokit process inside the check failed on its own account (VerdictDetails::tool_failure).
void stop_on_tool_failure(const Verdict& v, const CheckOptions& o);

// The candidate's input values (UserError when they cannot be made: then it is invalid).
using CandidateInputs = std::function<std::vector<Tensor>(const Candidate&)>;

class CheckOracle : public TimedOracle {
 public:
  CheckOracle(CheckOptions options, CandidateInputs inputs);
  std::vector<Verdict> judge(const std::vector<Candidate>& candidates) override;
  int parallelism() const override { return options_.jobs; }
  // Runs the check once on the model files in `dir` (the final verification, the original),
  // within limit_s (0: the options' timeout).
  Verdict run_in(const Dir& dir, const std::string& model_path, double limit_s = 0) const;
  const CheckOptions& options() const { return options_; }
  // With keep_first_failure: the first interesting verdict sets the failure every later one must
  // match; one that fails otherwise is made not interesting, saying so. judge() applies it.
  void keep_to_the_first_failure(Verdict& v);
  const QueryLimit& limit() const override { return limit_; }

 private:
  // One check per candidate (at most `jobs`), all running at once.
  std::vector<Verdict> run_side_by_side(std::span<const Candidate> candidates, std::span<const double> limits);
  std::string new_candidate_dir();

  CheckOptions options_;
  CandidateInputs inputs_;
  QueryLimit limit_;
  std::optional<Regex> regex_;
  std::optional<Dir> candidates_;
  int64_t counter_;
};

}  // namespace reprokit
