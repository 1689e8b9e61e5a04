// The oracle interface: "does this candidate still fail the same way?" The engine only talks to
// this; tests use an in-process fake, `reprokit minify` uses subprocess workers.
#pragma once
#include <string>
#include <vector>

#include "reprokit/harness/failure.h"
#include "reprokit/minifier/candidate.h"

namespace reprokit {

struct Verdict {
  bool interesting = false;  // fails the same way as the original
  Failure got;               // what happened (empty: it passed)
  // Not judged: it ran out of time (twice, see query_limit.h) while a hang is not what is sought,
  // or its launcher failed. Never an answer: the engine neither takes it nor remembers it.
  bool unknown = false;
  int timeouts = 0;          // times it ran past its limit
  double seconds = 0;        // how long the query ran
  std::string output{};      // CheckOracle::run_in only: the check's stdout + stderr (tails)
  // CheckOracle::run_in only: what a reprokit process inside the check recorded of its own failure
  // (tool_failure.h); the verdict is then unknown, and `reduce` stops with it.
  std::string tool_failure{};
};

class Oracle {
 public:
  virtual ~Oracle() = default;
  // Judges candidates; may run them in parallel. Returns one verdict per candidate, in order.
  virtual std::vector<Verdict> judge(const std::vector<Candidate>& candidates) = 0;
  virtual int parallelism() const { return 1; }
};

}  // namespace reprokit
