// A campaign's record: its options, how far it got and what it found. state.json is what --resume
// reads back (untrusted: every field is checked); report.json and SUMMARY.txt are what a user reads.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "reprokit/campaign/campaign.h"
#include "reprokit/campaign/triage.h"
#include "reprokit/support/files.h"

namespace reprokit {

struct CampaignFinding {
  std::string id;       // findings/<id>
  std::string graph;    // the generated graph's name
  int64_t index = 0;    // its number in the campaign
  std::string backend;  // "" for a check
  std::string mode;     // "forward", "train" or "check"
  std::string kind;     // accuracy, crash, ... from the bundle; "internal" when reprokit itself failed; "check"
  std::string message;
  // "pending" (not yet), "minimized", "failed" (the minifier did not finish with a verified repro:
  // see minify.log), "not needed" (an internal failure has no bundle to minify).
  std::string minify = "pending";
  double minify_s = 0;
};

struct CampaignCounts {
  int64_t graphs = 0;  // generated and judged
  int64_t runs = 0;    // runs of the stack (graphs x backends x modes) or checks
  int64_t passed = 0;
  int64_t findings = 0;
  int64_t rejected = 0;        // reprokit refused the generated graph (exit 2): a generator bug
  int64_t timeouts = 0;        // a check past its limit: neither a pass nor a finding
  int64_t not_exportable = 0;  // no ONNX for the graph (external mode)
  int64_t unsupported = 0;  // the check passed saying it cannot compile the graph (--unsupported-regex), or the backend lacks an op or a type of it
  int64_t no_graph = 0, no_values = 0;  // seeds that gave no case
};

struct CampaignState {
  CampaignOptions options;  // as the campaign was started (budget/jobs are this run's)
  int64_t next_index = 0;   // the next graph to generate
  double elapsed_s = 0;     // over every session
  double generate_s = 0, judge_s = 0, minify_s = 0;
  CampaignCounts counts;
  std::vector<CampaignFinding> findings;
  std::vector<std::string> rejected_examples;  // the first few refusals, to fix the generator
};

// state.json: written atomically after every graph, as compact JSON. UserError naming the file,
// with the earlier state.json kept, when it would be larger than `max_bytes` (what read_state
// reads back; a parameter so that tests can use small sizes).
void write_state(const Dir& campaign, const CampaignState& s, size_t max_bytes = kMaxTextFileBytes);
// Reads CAMPAIGN/state.json; UserError naming the file for anything malformed.
CampaignState read_state(const Dir& campaign);

// The distinct bugs among the campaign's findings (triage.h's grouping).
std::vector<BugGroup> campaign_bugs(const Dir& campaign);

// report.json and SUMMARY.txt; returns the summary's text.
std::string write_report(const Dir& campaign, const CampaignState& s, const std::vector<BugGroup>& bugs);

}  // namespace reprokit
