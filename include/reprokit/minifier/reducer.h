// The reduction engine: owns the whole search (binary prefix search, delta debugging with
// complements, memoisation, fixpoint over strategies). Strategies only enumerate units and apply
// removals; see strategies.h.
#pragma once
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "reprokit/minifier/oracle.h"

namespace reprokit {

struct MinifyOptions {
  std::set<std::string> only;   // run only these strategies (empty: all)
  std::set<std::string> skip;   // never run these
  int max_rounds = 8;           // fixpoint rounds over all strategies
  int flaky_attempts = 1;       // query each candidate up to this many times (flaky failures)
};

struct StrategyStats {
  int queries = 0, successes = 0;
};

struct MinifyProgress {
  int nodes = 0, queries = 0, cache_hits = 0;
  double elapsed_s = 0;
  std::string strategy;
};

struct MinifyResult {
  Candidate best;
  int queries = 0, cache_hits = 0;
  std::map<std::string, StrategyStats> per_strategy;
  std::vector<MinifyProgress> history;  // one entry per success
  double seconds = 0;
};

// Called after every success (with the new best) and now and then with progress.
struct MinifyCallbacks {
  std::function<void(const Candidate&, const MinifyProgress&)> on_success;
  std::function<void(const MinifyProgress&)> on_progress;
};

// Reduces `start` (known to be interesting) to a 1-minimal candidate.
MinifyResult reduce(const Candidate& start, Oracle& oracle, const MinifyOptions& options, const MinifyCallbacks& callbacks = {});

}  // namespace reprokit
