// Before reducing, the original must be interesting: it is run several times, which also measures
// how often a flaky failure shows and how long one run takes (the per-query timeout follows).
// Shared by `reprokit minify` (worker oracles) and `reprokit reduce` (a user's check command).
#pragma once
#include <functional>

#include "reprokit/minifier/oracle.h"

namespace reprokit {

struct ProbeOptions {
  int runs = 8;      // at most this many runs to measure the rate...
  int min_runs = 3;  // ...and after this many, only runs that end within budget_s
  double budget_s = 15;
  // When one run takes more than budget_s / min_runs (a model through a compiler that needs
  // seconds a graph), this many runs suffice: the third sample of such an original costs as much
  // as several queries of the search, and a flaky failure still shows as one in two.
  int min_runs_when_slow = 2;
  // A failure that does not show in the first runs may be flaky: keep looking up to this many
  // runs before saying the original is not interesting (a 50% flake then goes unseen 0.1% of the time).
  int look_until = 10;
};

struct ProbeResult {
  int runs = 0, fails = 0;
  double slowest_s = 0;
  double rate() const { return runs ? static_cast<double>(fails) / runs : 0; }
  // Tries per candidate so that one that still fails is missed at most 0.1% of the time, from a
  // cautious estimate of the rate (7 of 8 runs is often a coin toss); 1 when it always failed.
  int attempts_per_candidate() const;
};

ProbeResult probe_original(const ProbeOptions& options, const std::function<Verdict()>& run_once);

}  // namespace reprokit
