// What a front end's oracle saw of one run beyond the engine's verdict: the failure (failure.h),
// and for a check run by CheckOracle::run_in its output and reprokit's own failure inside it. It
// travels in Verdict::details, which the engine carries and never reads.
#pragma once
#include <string>

#include "reprokit/harness/failure.h"
#include "reprokit/minifier/oracle.h"

namespace reprokit {

struct VerdictDetails {
  Failure got;         // what happened (empty: it passed)
  std::string output;  // CheckOracle::run_in only: the check's stdout + stderr (tails)
  // CheckOracle::run_in only: what a reprokit process inside the check recorded of its own failure
  // (tool_failure.h); the verdict is then unknown, and `reduce` stops with it.
  std::string tool_failure;
};

// The details of v: empty ones when its oracle left none.
const VerdictDetails& details(const Verdict& v);
VerdictDetails& details(Verdict& v);  // made on first use
// The failure v saw: details(v).got.
const Failure& failure_of(const Verdict& v);
// Records the failure v saw; v.failed follows it.
void set_failure(Verdict& v, Failure got);
// A verdict, interesting or not, that saw `got`.
Verdict verdict_of(bool interesting, Failure got);

}  // namespace reprokit
