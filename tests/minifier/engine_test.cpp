// The engine's search: query counts on the chain benchmarks (one culprit; a pair), 1-minimality,
// determinism under parallel judging, and progress reporting.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "fake_oracle.h"
#include "reprokit/minifier/reducer.h"

using namespace reprokit;
using namespace reprokit::testing;

static MinifyResult minify_chain(int n, const std::function<bool(const Candidate&)>& pred, int parallel = 1) {
  Candidate start;
  start.graph = unary_chain(n);
  FakeOracle oracle(pred, parallel);
  return reduce(start, strategy_table(), oracle, {});
}

TEST(Engine, OneCulpritInAtMostTwoLog2NPlusTenQueries) {
  for (int n : {100, 1000, 5000}) {
    for (int c : {0, n / 3, n - 1}) {
      std::string culprit = fmt::format("n{}", c);
      auto r = minify_chain(n, [&](const Candidate& cand) { return has_op(cand.graph, culprit); });
      EXPECT_EQ(r.best.graph.num_ops(), 1) << print_graph(r.best.graph);
      EXPECT_TRUE(has_op(r.best.graph, culprit));
      EXPECT_LE(r.queries, 2 * std::log2(n) + 10) << "n=" << n << " culprit=" << c;
    }
  }
}

TEST(Engine, PairReducedToExactlyItsTwoOpsInUnder300Queries) {
  int n = 1000;
  auto r = minify_chain(n, [](const Candidate& c) { return has_op(c.graph, "n300") && has_op(c.graph, "n550"); });
  EXPECT_EQ(r.best.graph.num_ops(), 2) << print_graph(r.best.graph);
  EXPECT_LT(r.queries, 300);
}

TEST(Engine, ParallelJudgingGivesTheSameResult) {
  auto pred = [](const Candidate& c) { return has_op(c.graph, "n123") && has_op(c.graph, "n400"); };
  auto a = minify_chain(600, pred, 1), b = minify_chain(600, pred, 4);
  EXPECT_EQ(print_graph(a.best.graph), print_graph(b.best.graph));
}

TEST(Engine, ReportsEverySuccessWithAShrinkingGraph) {
  Candidate start;
  start.graph = unary_chain(200);
  FakeOracle oracle([](const Candidate& c) { return has_op(c.graph, "n77"); });
  std::vector<int> sizes;
  MinifyCallbacks cb;
  cb.on_success = [&](const Candidate& c, const MinifyProgress&) { sizes.push_back(c.graph.num_ops()); };
  auto r = reduce(start, strategy_table(), oracle, {}, cb);
  ASSERT_FALSE(sizes.empty());
  for (size_t i = 1; i < sizes.size(); ++i) EXPECT_LE(sizes[i], sizes[i - 1]);
  EXPECT_EQ(sizes.back(), 1);
  EXPECT_EQ(static_cast<int>(r.history.size()), static_cast<int>(sizes.size()));
}

TEST(Engine, NeverAsksTheSameCandidateTwice) {
  Candidate start;
  start.graph = unary_chain(64);
  std::set<uint64_t> seen;
  int repeats = 0;
  FakeOracle oracle([&](const Candidate& c) {
    repeats += !seen.insert(c.key()).second;
    return has_op(c.graph, "n10") && has_op(c.graph, "n40");
  });
  auto r = reduce(start, strategy_table(), oracle, {});
  EXPECT_EQ(repeats, 0);
  EXPECT_EQ(oracle.calls, r.queries);
}
