// `reprokit minify`: minifies a saved failure with subprocess oracles, keeps the best repro on
// disk after every success, verifies the final repro in a fresh process and writes report.json.
#pragma once
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "reprokit/harness/bundle.h"
#include "reprokit/minifier/candidate.h"
#include "reprokit/minifier/session.h"

namespace reprokit {

struct MinifyCommandOptions {
  std::string bundle_dir;
  std::string reprokit_exe;
  SessionOptions session;  // --jobs, --timeout, --only/--skip, --flaky-checks (default 8), --worker-prefix, --work-dir (default BUNDLE/minify_work), --resume
  long memory_limit_mb = 0;
  bool any_accuracy = false;
};

// Returns the exit status: 0 minified and verified; 1 the original does not fail, or the final
// repro does not reproduce. Throws UserError for a bad bundle.
int minify_bundle(const MinifyCommandOptions& options);

// The values cut points carry: each node's value in the original run (reference interpreter,
// original precision), computed on first use and only as far back as needed.
class KnownValues {
 public:
  explicit KnownValues(const Bundle& b);
  const Tensor& of(int node_id);

 private:
  const Bundle& b_;
  std::vector<std::optional<Tensor>> values_;
};

// The inputs of a candidate: original inputs and cut-point values (by node name), windowed to
// the declared shapes, with the candidate's edits. UserError when they do not fit.
std::vector<Tensor> candidate_inputs(const Candidate& c, const Bundle& b, KnownValues& known);
// Why an input-value edit of c (zeros, ones, integers, zeroed elements) is not allowed: it makes
// some value NaN or infinite in float64 where c on its unedited values keeps it finite (a 0 into
// reciprocal, log or rsqrt); nullopt when c has no value edit or the edit stays in every op's domain.
std::optional<std::string> value_edit_leaves_domain(const Candidate& c, const Bundle& b, KnownValues& known);
// The bundle's spec with the candidate's compiler decisions (disabled passes, rewrite limits).
ReproSpec candidate_spec(const ReproSpec& base, const Candidate& c);
// One line on what a passing twin changed: "fails with pass X on, passes without it", "fails
// with %x: f32[4, 3] (dim 0 = 4), passes with f32[2, 3]", ...
// `words` name the two sides: minify says "fails"/"passes", reduce "interesting"/"not interesting".
struct DifferenceWords {
  std::string_view bad = "fails", good = "passes";
};
std::string describe_difference(const Candidate& failing, const Candidate& passing, const DifferenceWords& words = {});

// The worker loop of `reprokit minify-worker BUNDLE`: one JSON candidate per stdin line, one
// "VERDICT {failure json}" line per answer. With query_file, answers that one query and exits.
int run_minify_worker(const std::string& bundle_dir, const std::string& query_file);

}  // namespace reprokit
