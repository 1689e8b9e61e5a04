// The reduction engine (see reducer.h): k-ary prefix search and delta debugging with
// complements, memoised by candidate key, with every success reported at once. A node a search's
// boundary shows to be needed is remembered, and a later candidate without it is not asked about.
#include "reprokit/minifier/reducer.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "reprokit/support/errors.h"
#include "reprokit/ir/verifier.h"
#include "reprokit/minifier/strategies.h"

namespace reprokit {

namespace {

using Clock = std::chrono::steady_clock;

class Engine {
 public:
  Engine(const Candidate& start, const std::vector<Strategy>& strategies, Oracle& oracle, const MinifyOptions& options,
         const MinifyCallbacks& callbacks)
      : strategies_(strategies), oracle_(oracle), options_(options), callbacks_(callbacks), t0_(Clock::now()) {
    result_.best = start;
    memo_[start.key(options_.names_matter)] = {true, false};
  }

  MinifyResult run() {
    try_first_guesses();
    search();
    for (int again = 0; again < options_.restarts; ++again) {
      int before = result_.best.graph.num_ops();
      memo_.clear();
      needed_.clear();
      memo_[result_.best.key(options_.names_matter)] = {true, false};
      search();
      if (result_.best.graph.num_ops() >= before) break;
    }
    pick_twin();
    result_.seconds = elapsed();
    return result_;
  }

 private:
  void search() {
    auto run = [&](const Strategy& s) {
      strategy_ = s.name;
      return s.search == SearchKind::prefix ? prefix_search(s) : delta_debug(s);
    };
    for (int round = 0; round < options_.max_rounds; ++round) {
      bool changed = false;
      // Fewest ops first: the node-removing strategies to their fixpoint, then the rest.
      for (int inner = 0; inner < options_.max_rounds; ++inner) {
        bool removed = false;
        for (const Strategy& s : strategies_)
          if (s.removes_nodes) removed |= run(s);
        changed |= removed;
        if (!removed) break;
      }
      if (round == 0 && options_.simplify_all) changed |= simplify_everything_at_once();
      for (const Strategy& s : strategies_)
        if (!s.removes_nodes) changed |= run(s);
      if (!changed) break;  // a full round without progress: 1-minimal for every strategy
    }
  }

  // The front end's guesses, in its order, until one is interesting (each a query of its own).
  void try_first_guesses() {
    strategy_ = options_.first_guesses_name;
    for (const Candidate& guess : options_.first_guesses) {
      const size_t removed = static_cast<size_t>(result_.best.graph.num_ops() - guess.graph.num_ops());
      if (removed == 0 || guess.graph.num_ops() > result_.best.graph.num_ops()) continue;
      if (!judge({guess}, {removed})[0]) continue;
      accept(guess);
      return;
    }
  }

  // One guess before the other strategies search one by one: every pass off, every shape, attribute
  // and value at its simplest, all in one candidate. Often the bug does not care, and one query
  // does what would take each strategy at least one (a passing guess costs one query).
  bool simplify_everything_at_once() {
    std::optional<Candidate> all = result_.best;
    for (const Strategy& s : strategies_) {
      if (s.removes_nodes) continue;
      auto units = s.units(*all);
      if (units.empty()) continue;
      if (auto next = try_apply(s, *all, units)) all = next;
    }
    if (all->key(options_.names_matter) == result_.best.key(options_.names_matter)) return false;
    strategy_ = kSimplifyAll;
    if (!judge({all}, {2})[0]) return false;
    accept(*all);
    return true;
  }

  // The strategy's edit, if it gives a valid graph that still computes something.
  static std::optional<Candidate> try_apply(const Strategy& s, const Candidate& c, const std::vector<int>& units) {
    try {
      Candidate r = s.apply(c, units);
      verify(r.graph);
      if (r.graph.num_ops() == 0 || r.graph.outputs.empty()) return std::nullopt;
      return r;
    } catch (const UserError&) {  // VerifyError and ParseError included
      return std::nullopt;
    }
  }
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }

  MinifyProgress progress() const {
    MinifyProgress p;
    p.nodes = result_.best.graph.num_ops();
    p.queries = result_.queries;
    p.cache_hits = result_.cache_hits;
    p.timeouts = result_.timeouts;
    p.unknown = result_.unknown;
    p.in_flight = in_flight_;
    for (int i = 0; i < result_.best.graph.num_inputs(); ++i) p.elements += result_.best.graph.node(i).type.numel();
    p.elapsed_s = elapsed();
    p.strategy = strategy_;
    return p;
  }

  struct Outcome {
    bool interesting = false;
    bool passed = false;  // no failure at all (not: failed differently)
  };

  // A candidate one unit away from the best that passes: a passing twin of the best.
  void note(const std::optional<Candidate>& c, const Outcome& o, size_t units) {
    if (c && units == 1 && o.passed && passing_.size() < kMaxTwins) passing_.push_back({strategy_, *c});
  }

  // The nearest passing candidate: one pass, rewrite, dimension, attribute or value away before
  // one node away (those say most about the bug).
  void pick_twin() {
    static const char* kPreference[] = {"disable-passes", "limit-rewrites", "halve-shapes",   "shrink-shapes", "simplify-attributes",
                                        "zero-inputs",    "one-inputs",     "integer-inputs", "zero-elements"};
    for (const char* want : kPreference)
      for (auto& [strategy, c] : passing_)
        if (strategy == want) {
          result_.twin = c;
          result_.twin_strategy = strategy;
          return;
        }
    if (!passing_.empty()) {
      result_.twin = passing_.front().second;
      result_.twin_strategy = passing_.front().first;
    }
  }

  // Judges candidates (nullopt = invalid = not interesting), answering from the memo when it can.
  // `units[i]`: how many units candidate i removes (a one-unit step that passes is a twin).
  std::vector<bool> judge(const std::vector<std::optional<Candidate>>& cands, const std::vector<size_t>& units) {
    std::vector<bool> out(cands.size(), false);
    definite_.assign(cands.size(), false);
    std::vector<Candidate> batch;
    std::vector<size_t> where;
    std::unordered_map<uint64_t, size_t> in_batch;
    std::vector<std::pair<size_t, size_t>> dup;  // (index, batch position) for repeated candidates
    for (size_t i = 0; i < cands.size(); ++i) {
      if (!cands[i]) continue;
      uint64_t k = cands[i]->key(options_.names_matter);
      if (auto it = memo_.find(k); it != memo_.end()) {
        out[i] = it->second.interesting;
        definite_[i] = true;
        note(cands[i], it->second, units[i]);
        ++result_.cache_hits;
        continue;
      }
      if (drops_a_needed_node(*cands[i])) {  // not interesting, known without a query
        definite_[i] = true;
        ++result_.cache_hits;
        continue;
      }
      if (auto it = in_batch.find(k); it != in_batch.end()) {
        dup.push_back({i, it->second});
        continue;
      }
      in_batch[k] = batch.size();
      batch.push_back(*cands[i]);
      where.push_back(i);
    }
    if (!batch.empty()) {
      std::vector<bool> verdict(batch.size(), false), passed(batch.size(), true), unknown(batch.size(), false);
      StrategyStats& stats = result_.per_strategy[strategy_];
      // A flaky failure shows up only sometimes: a candidate counts as failing if any attempt fails.
      for (int attempt = 0; attempt < std::max(1, options_.flaky_attempts); ++attempt) {
        std::vector<Candidate> again;
        std::vector<size_t> pos;
        for (size_t b = 0; b < batch.size(); ++b)
          if (!verdict[b]) {
            again.push_back(batch[b]);
            pos.push_back(b);
          }
        if (again.empty()) break;
        in_flight_ = static_cast<int>(again.size());
        if (callbacks_.on_progress) callbacks_.on_progress(progress());  // the heartbeat says what runs
        auto v = oracle_.judge(again);
        in_flight_ = 0;
        result_.queries += static_cast<int>(again.size());
        stats.queries += static_cast<int>(again.size());
        for (size_t j = 0; j < v.size(); ++j) {
          verdict[pos[j]] = v[j].interesting && !v[j].unknown;
          passed[pos[j]] = passed[pos[j]] && !v[j].failed && !v[j].unknown;
          unknown[pos[j]] = unknown[pos[j]] || v[j].unknown;
          result_.timeouts += v[j].timeouts;
          stats.timeouts += v[j].timeouts;
        }
      }
      for (size_t b = 0; b < batch.size(); ++b) {
        Outcome o{verdict[b], !verdict[b] && passed[b]};
        out[where[b]] = verdict[b];
        definite_[where[b]] = verdict[b] || !unknown[b];
        if (unknown[b] && !verdict[b]) {  // not an answer: not taken, not remembered, no twin
          ++result_.unknown;
          ++stats.unknown;
          continue;
        }
        memo_[batch[b].key(options_.names_matter)] = o;
        note(cands[where[b]], o, units[where[b]]);
      }
      for (auto& [i, b] : dup) out[i] = verdict[b], definite_[i] = definite_[where[b]];
    }
    if (callbacks_.on_progress) callbacks_.on_progress(progress());
    return out;
  }

  void accept(Candidate c) {
    result_.best = std::move(c);
    passing_.clear();  // twins are one step from the best
    ++result_.per_strategy[strategy_].successes;
    auto p = progress();
    result_.history.push_back(p);
    if (callbacks_.on_success) callbacks_.on_success(result_.best, p);
  }

  static std::vector<int> first(const std::vector<int>& units, int k) { return {units.begin(), units.begin() + k}; }

  // The largest k in [lo, hi] for which removing units [from, from + k) of the best stays
  // interesting (k = lo taken to be so), by binary search with `parallelism` points per step, so
  // the answer does not depend on timing; monotonicity assumed. The candidate is set when k > lo.
  // `failing`: a candidate that removes hi + 1 units and is known not to be interesting, if any.
  // When removing k + 1 is seen to fail, the unit after the k is needed (learn_needed).
  std::pair<int, std::optional<Candidate>> largest_removable(const Strategy& s, const std::vector<int>& units, int from, int lo, int hi,
                                                             std::optional<Candidate> failing = std::nullopt) {
    const int par = std::max(1, oracle_.parallelism());
    std::optional<Candidate> lo_cand;
    int fails_at = hi + 1;
    auto run = [&](int k) { return std::vector<int>(units.begin() + from, units.begin() + from + k); };
    while (lo < hi) {
      const int span = hi - lo, j = std::min(par, span);
      std::vector<int> points;
      for (int i = 1; i <= j; ++i) points.push_back(lo + (span * i + j) / (j + 1));  // j points splitting (lo, hi] into j + 1 parts
      points.erase(std::unique(points.begin(), points.end()), points.end());
      std::vector<std::optional<Candidate>> cands;
      std::vector<size_t> sizes;
      for (int p : points) cands.push_back(try_apply(s, result_.best, run(p))), sizes.push_back(static_cast<size_t>(p));
      auto v = judge(cands, sizes);
      int new_lo = lo, new_hi = hi;
      for (size_t i = 0; i < points.size(); ++i) {
        if (v[i]) {
          new_lo = points[i];
          lo_cand = cands[i];
        } else {
          new_hi = points[i] - 1;
          if (points[i] < fails_at) fails_at = points[i], failing = definite_[i] ? cands[i] : std::nullopt;
          break;
        }
      }
      lo = new_lo;
      hi = std::max(new_hi, lo);
    }
    if (fails_at == lo + 1 && failing) learn_needed(lo_cand ? *lo_cand : result_.best, *failing);
    return {lo, lo_cand};
  }

  // The names of a graph's op nodes.
  static std::unordered_set<std::string> op_names(const Graph& g) {
    std::unordered_set<std::string> names;
    for (int id = g.num_inputs(); id < g.size(); ++id) names.insert(g.node(id).name);
    return names;
  }

  // `kept` is interesting and `dropped`, which removes one unit more, is not: given monotonicity
  // (what the binary searches assume), every smaller candidate without the op node that unit
  // held fails too, so later candidates that drop it are answered without a query (a chain's two
  // culprits: the fixpoint round re-tried each one, four queries of a pair's 26). Learnt only
  // when the two differ by exactly one op node, and never from a flaky failure.
  void learn_needed(const Candidate& kept, const Candidate& dropped) {
    // A flaky failure's "not interesting" can be wrong, and a node wrongly taken for needed would
    // stop every smaller candidate: nothing is learnt from it.
    if (options_.flaky_attempts > 1) return;
    const auto there = op_names(dropped.graph);
    const std::string* missing = nullptr;
    for (int id = kept.graph.num_inputs(); id < kept.graph.size(); ++id)
      if (!there.count(kept.graph.node(id).name)) {
        if (missing) return;
        missing = &kept.graph.node(id).name;
      }
    if (missing) needed_.insert(*missing);
  }

  bool drops_a_needed_node(const Candidate& c) const {
    if (needed_.empty()) return false;
    const auto there = op_names(c.graph);
    for (const std::string& n : needed_)
      if (!there.count(n)) return true;
    return false;
  }

  // The guess after "the last unit alone": it with the units nearest above it (through nodes
  // that are not units), every other unit removed. Not a prefix: its answer tells the binary
  // search nothing, so it is one query that pays only when it is right.
  bool last_with_its_feeders(const Strategy& s, const std::vector<int>& units) {
    const Graph& g = result_.best.graph;
    const std::unordered_set<int> unit_set(units.begin(), units.end());
    std::unordered_set<int> keep{units.back()}, seen;
    std::vector<int> stack{units.back()};
    while (!stack.empty()) {
      const int at = stack.back();
      stack.pop_back();
      for (const Operand& o : g.node(at).operands) {
        if (!o.is_value() || !seen.insert(o.value).second || g.node(o.value).is_input()) continue;
        if (unit_set.count(o.value)) keep.insert(o.value);
        else stack.push_back(o.value);
      }
    }
    if (keep.size() < 2) return false;  // nothing feeds it but inputs: the guess was "it alone"
    std::vector<int> removed;
    for (int u : units)
      if (!keep.count(u)) removed.push_back(u);
    if (removed.empty()) return false;
    auto guess = try_apply(s, result_.best, removed);
    if (!guess || !judge({guess}, {removed.size()})[0]) return false;
    accept(*guess);
    return true;
  }

  // Largest k with "remove the first k units" interesting.
  bool prefix_search(const Strategy& s) {
    auto units = s.units(result_.best);
    int hi = static_cast<int>(units.size());
    std::optional<Candidate> failing;
    if (s.guess_ends && hi >= 2) {  // all but the last unit first (see Strategy::guess_ends)
      if (auto all_but_last = try_apply(s, result_.best, first(units, hi - 1))) {
        if (judge({all_but_last}, {static_cast<size_t>(hi - 1)})[0]) {
          accept(*all_but_last);
          return true;
        }
        if (definite_[0]) failing = all_but_last;
        hi -= 2;  // removing that many (or more) no longer fails
        if (s.units_are_nodes && last_with_its_feeders(s, units)) return true;
      }
    }
    auto [k, cand] = largest_removable(s, units, 0, 0, hi, failing);
    if (k == 0 || !cand) return false;
    accept(*cand);
    return true;
  }

  // The largest k in [0, limit] for which removing units [from, from + k) of the best stays
  // interesting, and its candidate; `limit_fails`: removing all `limit` is already known to fail.
  std::pair<int, std::optional<Candidate>> longest_removable_run(const Strategy& s, const std::vector<int>& units, int from, int limit,
                                                                 bool limit_fails) {
    int hi = limit_fails ? limit - 1 : limit;
    if (!limit_fails && limit > 1) {  // the whole rest first: after the last needed unit it all goes, in one query
      auto all = try_apply(s, result_.best, std::vector<int>(units.begin() + from, units.begin() + from + limit));
      if (judge({all}, {static_cast<size_t>(limit)})[0]) return {limit, all};
      hi = limit - 1;
      if (all && definite_[0]) return largest_removable(s, units, from, 0, hi, all);
    }
    return largest_removable(s, units, from, 0, hi);
  }

  // After a failed ends guess: the needed units between the ends, one at a time. From the first
  // unit not yet settled, the longest run that can go is removed and the unit after it is needed;
  // each needed unit costs about log2 of the units left, near the information bound, where
  // delta debugging splits around every needed unit again and again. True when it ran to the end
  // (every unit left is needed, given monotonicity).
  bool scan_for_needed_units(const Strategy& s, bool& progress) {
    int settled = 1;  // the first unit is needed (what the prefix searches left)
    bool first = true;
    for (;;) {
      auto units = s.units(result_.best);
      const int last = static_cast<int>(units.size()) - 1;  // needed too: kept
      if (settled >= last) return true;
      auto [k, cand] = longest_removable_run(s, units, settled, last - settled, first);
      first = false;
      if (k > 0) {
        if (!cand) return false;
        accept(*cand);
        progress = true;
      }
      ++settled;
    }
  }

  // ddmin: remove chunks, then (at finer granularity) keep only one chunk; on success go on with
  // the smaller candidate, otherwise double the granularity until single units were tried.
  bool delta_debug(const Strategy& s) {
    bool progress = false;
    int n = 2;
    int par = std::max(1, oracle_.parallelism());
    if (auto units = s.units(result_.best); s.guess_ends && units.size() > 2) {  // only the ends first (Strategy::guess_ends)
      std::vector<int> middle(units.begin() + 1, units.end() - 1);
      auto ends = try_apply(s, result_.best, middle);
      if (ends && judge({ends}, {middle.size()})[0]) {
        accept(*ends);
        return true;  // the ends are needed (what the prefix searches left): nothing else to remove
      }
      if (ends && scan_for_needed_units(s, progress)) return progress;
    }
    for (;;) {
      auto units = s.units(result_.best);
      int size = static_cast<int>(units.size());
      if (size == 0) break;
      n = std::min(n, size);
      std::vector<std::vector<int>> chunks;
      for (int i = 0; i < n; ++i) chunks.emplace_back(units.begin() + size * i / n, units.begin() + size * (i + 1) / n);
      std::vector<std::vector<int>> removals = chunks;  // remove one chunk
      if (n > 2)
        for (auto& c : chunks) {  // keep only one chunk
          std::vector<int> rest;
          for (int u : units)
            if (std::find(c.begin(), c.end(), u) == c.end()) rest.push_back(u);
          removals.push_back(rest);
        }
      std::optional<Candidate> found;
      size_t found_at = 0;
      for (size_t start = 0; start < removals.size() && !found; start += static_cast<size_t>(par)) {
        std::vector<std::optional<Candidate>> cands;
        std::vector<size_t> sizes;
        for (size_t i = start; i < std::min(removals.size(), start + static_cast<size_t>(par)); ++i)
          cands.push_back(try_apply(s, result_.best, removals[i])), sizes.push_back(removals[i].size());
        auto v = judge(cands, sizes);
        for (size_t i = 0; i < v.size(); ++i)
          if (v[i]) {
            found = cands[i];
            found_at = start + i;
            break;
          }
      }
      if (found) {
        accept(*found);
        progress = true;
        n = found_at < chunks.size() ? std::max(n - 1, 2) : 2;
        continue;
      }
      if (n >= size) break;
      n = std::min(2 * n, size);
    }
    return progress;
  }

  const std::vector<Strategy>& strategies_;
  Oracle& oracle_;
  const MinifyOptions& options_;
  const MinifyCallbacks& callbacks_;
  Clock::time_point t0_;
  MinifyResult result_;
  int in_flight_ = 0;
  std::unordered_map<uint64_t, Outcome> memo_;
  std::unordered_set<std::string> needed_;  // op nodes every smaller interesting candidate keeps (learn_needed)
  std::vector<bool> definite_;              // of the last judge's candidates: whether "not interesting" was an answer
  std::string strategy_;
  static constexpr size_t kMaxTwins = 64;
  std::vector<std::pair<std::string, Candidate>> passing_;  // (strategy, candidate) one unit from the best
};

}  // namespace

MinifyResult reduce(const Candidate& start, const std::vector<Strategy>& strategies, Oracle& oracle, const MinifyOptions& options,
                    const MinifyCallbacks& callbacks) {
  return Engine(start, strategies, oracle, options, callbacks).run();
}

}  // namespace reprokit
