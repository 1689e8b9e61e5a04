// A fuzzing campaign (`reprokit fuzz`): generated graphs (graph_generator.h) run through the
// stack under the harness at level 4 (or through a user's check command), every finding is
// minified in the same run (`reprokit minify`, or `reprokit reduce` for a check), and the
// findings are grouped into distinct bugs (triage.h). Children run from argv, never a shell.
//
// CAMPAIGN/ holds:
//   state.json          the options and how far the campaign got (written when it starts, then
//                       after every graph; compact JSON)
//   report.json         graphs, rates, findings and distinct bugs (rewritten with state.json)
//   SUMMARY.txt         the same as a table
//   findings/<id>/      one per finding: finding.json, model.rk (+ inputs/), and bundles/<bundle>/
//                       (minified in place) or reduced/ (a `reduce` OUT); an internal failure
//                       (reprokit itself exited 3 or died with no bundle) keeps just the graph
//   graphs/             scratch: the graphs of the batch under way (removed once judged)
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "reprokit/campaign/graph_generator.h"

namespace reprokit {

struct CampaignOptions {
  std::string dir;                           // CAMPAIGN
  double budget_s = 60;                      // no new batch starts after this many seconds
  uint64_t seed = 1;                         // graph i of the campaign: generate_case(seed * 1000003 + i)
  GeneratorOptions generator;                // max_nodes, ops, train
  std::vector<std::string> backends{"cpp"};  // each graph runs on each (internal mode)
  int jobs = 1;                              // graphs judged at once; also each minification's --jobs
  double timeout_s = 30;                     // REPRO_TIMEOUT of each run / the check's limit
  // External mode (check non-empty): the check's words as the user wrote them, as `reduce` takes them.
  std::string check;
  std::string format = "onnx";  // "rk" or "onnx": what the check is handed
  std::string fail_regex;
  std::string unsupported_regex;  // a check that passes with output matching it: "unsupported", not "passed"
  bool minify = true;             // minify each finding in the same run
  bool resume = false;
  long max_graphs = 0;  // stop after this many graphs (0: the budget decides)
};

// Runs the campaign; returns 0 (whether or not it found anything; the report says what it found).
// UserError for bad input: an existing CAMPAIGN without --resume, a --resume of a directory that
// holds no campaign, a check that cannot run (126/127), a backend that cannot run on this machine
// (refused before any graph is judged).
int run_campaign(const CampaignOptions& options);

}  // namespace reprokit
