// The oracle interface: "does this candidate still fail the same way?" The engine only talks to
// this; tests use an in-process fake, `reprokit minify` subprocess workers, `reprokit reduce` a
// user's check.
#pragma once
#include <any>
#include <vector>

#include "reprokit/minifier/candidate.h"

namespace reprokit {

struct Verdict {
  bool interesting = false;  // fails the same way as the original
  bool failed = false;       // failed at all, the same way or not: a passing twin did not
  // Not judged: it ran out of time (twice, see query_limit.h) while a hang is not what is sought,
  // or its launcher failed. Never an answer: the engine neither takes it nor remembers it.
  bool unknown = false;
  int timeouts = 0;    // times it ran past its limit
  double seconds = 0;  // how long the query ran
  // The front end's account of the run (its failure, a check's output: verdict_details.h),
  // carried along untouched: the engine judges by the fields above alone.
  std::any details{};
};

class Oracle {
 public:
  virtual ~Oracle() = default;
  // Judges candidates; may run them in parallel. Returns one verdict per candidate, in order.
  virtual std::vector<Verdict> judge(const std::vector<Candidate>& candidates) = 0;
  virtual int parallelism() const { return 1; }
};

}  // namespace reprokit
