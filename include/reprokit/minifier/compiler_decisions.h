// A candidate's compiler decisions (disabled passes, rewrite limits) for reprokit's own compiler:
// its passes as the engine sees them, the strategies that decide them, and the repro's spec.
#pragma once
#include <vector>

#include "reprokit/harness/repro_spec.h"
#include "reprokit/minifier/candidate.h"
#include "reprokit/minifier/strategies.h"

namespace reprokit {

// reprokit's passes (pass_manager.h), for reading candidates' decisions.
const CompilerPasses& reprokit_passes();

// disable-passes: the fewest compiler passes; limit-rewrites: within each, the fewest rewrites.
Strategy disable_passes_strategy();
Strategy limit_rewrites_strategy();
// Every strategy in run order, with reprokit's compiler's (--list-strategies, --only, --skip).
const std::vector<Strategy>& strategy_table();

// The bundle's spec with the candidate's compiler decisions (disabled passes, rewrite limits).
ReproSpec candidate_spec(const ReproSpec& base, const Candidate& c);

}  // namespace reprokit
