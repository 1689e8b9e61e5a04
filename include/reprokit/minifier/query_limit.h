// The time one query may take, and what a query that runs out of it means.
//
// A limit learned from the probe alone lies: the probe runs the original against a warm compile
// cache, and a fresh candidate of thousands of ops then takes longer to compile than the probe's
// whole run (a whole truncation was once lost that way). So the limit follows what candidates
// cost: the slowest answered query per op so far (a cold compile included), times a margin,
// scaled by the candidate's size, never below the floor the probe (or --timeout) set. A candidate
// that runs out of time while a hang is not what is sought is asked again once with twice the
// limit; if it runs out again it is *unknown* — never an answer, never remembered as "not
// interesting", counted and reported.
#pragma once
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "reprokit/minifier/oracle.h"

namespace reprokit {

class QueryLimit {
 public:
  // floor_s: the least any query gets. hang_sought: the failure is a hang, so running out of
  // time is the answer (the limit is then the hang threshold and never grows).
  QueryLimit(double floor_s, bool hang_sought) : floor_s_(floor_s), hang_sought_(hang_sought) {}
  double for_candidate(const Candidate& c) const;
  // A query of `c` answered in `seconds`: the cost per op learned so far may grow.
  void answered(const Candidate& c, double seconds);
  bool hang_sought() const { return hang_sought_; }
  // For the start-up line: "3s (a hang)" or "at least 10s, growing with what candidates cost".
  std::string describe(const std::string& hang_is) const;
  double largest_given_s() const { return largest_given_s_; }
  void note_given(double s) { largest_given_s_ = std::max(largest_given_s_, s); }

 private:
  double floor_s_;
  bool hang_sought_;
  double seconds_per_op_ = 0;
  double largest_given_s_ = 0;
};

// One try of a batch: verdicts in order, each run within limits[i]; a verdict that ran out of
// time has timeouts = 1 and its seconds set to the limit.
using LimitedAttempt = std::function<std::vector<Verdict>(const std::vector<Candidate>&, const std::vector<double>& limits)>;

// Runs `attempt` on the batch, then once more, with doubled limits, on the candidates that ran
// out of time while a hang is not sought; those that run out again come back unknown.
std::vector<Verdict> judge_within_limits(const std::vector<Candidate>& candidates, QueryLimit& limit, const LimitedAttempt& attempt);

// How many queries may run at once (--jobs of minify, reduce and fuzz, checked where the flag is
// read): 1 to kMaxJobs.
constexpr int kMaxJobs = 64;

// Runs `side_by_side` on consecutive slices of at most `jobs` candidates, whose queries run at
// once, and returns the verdicts in order: the one batch loop of every oracle (--jobs).
using SideBySide = std::function<std::vector<Verdict>(std::span<const Candidate>, std::span<const double> limits)>;
std::vector<Verdict> in_slices(int jobs, const std::vector<Candidate>& candidates, const std::vector<double>& limits, const SideBySide& side_by_side);

}  // namespace reprokit
