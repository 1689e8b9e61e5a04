// The reduction engine: owns the whole search (binary prefix search, delta debugging with
// complements, memoisation, fixpoint over strategies), the validity of candidates (each is
// verified; an invalid one is never sent to the oracle) and the fresh re-searches a flaky oracle
// needs. Strategies only enumerate units and apply removals; see strategies.h.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "reprokit/minifier/oracle.h"
#include "reprokit/minifier/strategies.h"

namespace reprokit {

// The first round's one guess, counted under this name (--only / --skip take it).
inline constexpr const char* kSimplifyAll = "simplify-all";
inline constexpr const char* kSimplifyAllDescription =
    "every strategy that changes rather than removes, each at its simplest, in one candidate (once, after the first removals)";

struct MinifyOptions {
  int max_rounds = 8;      // fixpoint rounds over all strategies
  int flaky_attempts = 1;  // query each candidate up to this many times (flaky failures)
  // Fresh searches (new memo, new luck) from the result while they still shrink it, at most
  // this many: a flaky oracle can wrongly say "passes", and a re-search removes what that left.
  int restarts = 0;
  // The oracle may read node names (a user's check that greps the file): candidates that differ
  // only in them are not one candidate to the memo.
  bool names_matter = false;
  // Candidates tried one by one before any strategy searches, under `first_guesses_name`; the
  // first that is interesting is taken (the front end's guesses from what the failure says).
  std::vector<Candidate> first_guesses;
  std::string first_guesses_name = "first-guess";
  bool simplify_all = true;  // the first round's one guess of every simplification at once
};

struct StrategyStats {
  int queries = 0, successes = 0;
  int timeouts = 0, unknown = 0;  // queries that ran past their limit; candidates left unjudged
};

struct MinifyProgress {
  int nodes = 0, queries = 0, cache_hits = 0;
  int timeouts = 0, unknown = 0;
  int in_flight = 0;     // candidates being judged now
  int64_t elements = 0;  // input elements of the best candidate
  double elapsed_s = 0;
  std::string strategy;
};

struct MinifyResult {
  Candidate best;
  // The passing twin: a candidate one unit away from `best` (one pass, rewrite, dimension,
  // attribute, value or node) that passed, and the strategy that made it.
  std::optional<Candidate> twin;
  std::string twin_strategy;
  int queries = 0, cache_hits = 0;
  // Queries that ran past their time limit, and candidates that could not be judged at all
  // (unknown: kept out of the result, which may therefore be larger than it could be).
  int timeouts = 0, unknown = 0;
  std::map<std::string, StrategyStats> per_strategy;
  std::vector<MinifyProgress> history;  // one entry per success
  double seconds = 0;
};

// Called after every success (with the new best) and now and then with progress.
struct MinifyCallbacks {
  std::function<void(const Candidate&, const MinifyProgress&)> on_success;
  std::function<void(const MinifyProgress&)> on_progress;
};

// Reduces `start` (known to be interesting) with `strategies` (in order) to a 1-minimal candidate.
MinifyResult reduce(const Candidate& start, const std::vector<Strategy>& strategies, Oracle& oracle, const MinifyOptions& options,
                    const MinifyCallbacks& callbacks = {});

}  // namespace reprokit
