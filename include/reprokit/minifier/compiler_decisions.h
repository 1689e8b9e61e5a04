// A candidate's compiler decisions (disabled passes, rewrite limits) for reprokit's own compiler.
#pragma once
#include "reprokit/harness/repro_spec.h"
#include "reprokit/minifier/candidate.h"

namespace reprokit {

// The bundle's spec with the candidate's compiler decisions (disabled passes, rewrite limits).
ReproSpec candidate_spec(const ReproSpec& base, const Candidate& c);

}  // namespace reprokit
