// `reprokit minify`: minifies a saved failure with subprocess oracles, keeps the best repro on
// disk after every success, verifies the final repro in a fresh process and writes report.json.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "reprokit/harness/bundle.h"
#include "reprokit/minifier/candidate.h"

namespace reprokit {

struct MinifyCommandOptions {
  std::string bundle_dir;
  std::string reprokit_exe;
  int jobs = 1;
  double timeout_s = 0;    // 0: derived from the original run
  long memory_limit_mb = 0;
  bool resume = false;
  bool any_accuracy = false;
  int flaky_checks = 8;    // most runs of the original to measure how often it fails (after 3, at most 15 s)
  std::set<std::string> only, skip;
  bool verify = true;
};

// Returns the exit status: 0 minified and verified; 1 the original does not fail, or the final
// repro does not reproduce. Throws UserError for a bad bundle.
int minify_bundle(const MinifyCommandOptions& options);

// The inputs of a candidate: original inputs, cut-point values (by node name) and fills.
std::vector<Tensor> candidate_inputs(const Candidate& c, const Bundle& b, const std::vector<Tensor>& node_values);

// The worker loop of `reprokit minify-worker BUNDLE`: one JSON candidate per stdin line, one
// "VERDICT {failure json}" line per answer. With query_file, answers that one query and exits.
int run_minify_worker(const std::string& bundle_dir, const std::string& query_file);

}  // namespace reprokit
