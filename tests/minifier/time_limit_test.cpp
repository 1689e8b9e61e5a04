// Timeouts that never lie: a query that runs out of time while a hang is not sought is asked again
// with twice the limit, and one that runs out again is unknown — not an answer, not remembered,
// counted. Pinned in-process (judge_within_limits, the engine) and end to end with a compiler made
// slow by REPRO_TEST_COMPILE_DELAY and a check that is slow on some candidates.
#include <gtest/gtest.h>
#include <fmt/core.h>

#include <fstream>

#include "../harness/cli_util.h"
#include "fake_oracle.h"
#include "reprokit/harness/repro_file.h"
#include "reprokit/minifier/query_limit.h"
#include "reprokit/minifier/reducer.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

Candidate chain(int n, const char* culprit_op = nullptr, int culprit = -1) {
  std::string s = "graph chain(%x: f32[4]) {\n";
  for (int i = 0; i < n; ++i) s += fmt::format("  %n{} = {}(%{})\n", i, i == culprit ? culprit_op : "neg", i ? fmt::format("n{}", i - 1) : "x");
  s += fmt::format("  return (%n{})\n}}\n", n - 1);
  Candidate c;
  c.graph = parse_graph(s);
  return c;
}

// An attempt whose candidates of more than `slow_above` ops take `slow_s` seconds (judged
// interesting when they finish); every call is recorded with its limits.
struct SlowAttempt {
  int slow_above;
  double slow_s;
  std::vector<std::vector<double>> calls;
  std::vector<Verdict> operator()(const std::vector<Candidate>& cs, const std::vector<double>& limits) {
    calls.push_back(limits);
    std::vector<Verdict> out;
    for (size_t i = 0; i < cs.size(); ++i) {
      double cost = cs[i].graph.num_ops() > slow_above ? slow_s : 0.01;
      Verdict v;
      v.seconds = std::min(cost, limits[i]);
      if (cost > limits[i]) {
        v.timeouts = 1;
        v.failed = true;  // it ran out of time
      } else {
        v.interesting = true;
      }
      out.push_back(v);
    }
    return out;
  }
};

}  // namespace

TEST(TimeLimit, ATimeoutIsAskedAgainWithTwiceTheLimit) {
  QueryLimit limit(1, false);
  SlowAttempt slow{5, 1.5, {}};
  auto v = judge_within_limits({chain(10)}, limit, std::ref(slow));
  ASSERT_EQ(slow.calls.size(), 2u);
  EXPECT_DOUBLE_EQ(slow.calls[1][0], 2 * slow.calls[0][0]);
  EXPECT_TRUE(v[0].interesting);
  EXPECT_FALSE(v[0].unknown);
  EXPECT_EQ(v[0].timeouts, 1);
}

TEST(TimeLimit, TwoTimeoutsMakeItUnknownNeverNotInteresting) {
  QueryLimit limit(1, false);
  SlowAttempt slow{5, 100, {}};
  auto v = judge_within_limits({chain(10), chain(3)}, limit, std::ref(slow));
  EXPECT_TRUE(v[0].unknown);
  EXPECT_EQ(v[0].timeouts, 2);
  EXPECT_FALSE(v[1].unknown);
  EXPECT_TRUE(v[1].interesting);
  ASSERT_EQ(slow.calls.size(), 2u);
  EXPECT_EQ(slow.calls[1].size(), 1u) << "only the candidate that ran out of time is asked again";
}

TEST(TimeLimit, WhenAHangIsSoughtRunningOutOfTimeIsTheAnswer) {
  QueryLimit limit(1, true);
  SlowAttempt slow{5, 100, {}};
  auto v = judge_within_limits({chain(10)}, limit, std::ref(slow));
  EXPECT_EQ(slow.calls.size(), 1u);
  EXPECT_FALSE(v[0].unknown);
  EXPECT_EQ(limit.for_candidate(chain(10000)), 1) << "the hang threshold never grows";
}

TEST(TimeLimit, TheLimitGrowsWithWhatCandidatesCostAndTheirSize) {
  QueryLimit limit(10, false);
  EXPECT_EQ(limit.for_candidate(chain(1000)), 10);
  limit.answered(chain(1000), 8);  // 8 ms per op, measured
  EXPECT_GE(limit.for_candidate(chain(1000)), 3 * 8.0);
  EXPECT_LT(limit.for_candidate(chain(100)), limit.for_candidate(chain(1000)));
  EXPECT_EQ(limit.for_candidate(chain(10)), 10) << "never below the floor";
}

// An oracle that cannot judge the middle-sized candidates holding %n5 (4 to 7 ops): unknown.
class UnknownOracle : public Oracle {
 public:
  static bool unjudged(const Candidate& c) { return has_op(c.graph, "n5") && c.graph.num_ops() > 3 && c.graph.num_ops() < 8; }
  std::vector<Verdict> judge(const std::vector<Candidate>& cs) override {
    std::vector<Verdict> out;
    for (auto& c : cs) {
      ++asked[c.key()];
      Verdict v;
      if (unjudged(c)) {
        v.unknown = true;
        v.timeouts = 2;
        v.failed = true;  // it ran out of time
      } else {
        v.interesting = has_op(c.graph, "n5");
      }
      out.push_back(v);
    }
    return out;
  }
  std::map<uint64_t, int> asked;
};

TEST(TimeLimit, TheEngineNeitherTakesNorRemembersUnknown) {
  UnknownOracle oracle;
  std::vector<Strategy> strategies;
  for (auto& s : strategy_table())
    if (s.removes_nodes) strategies.push_back(s);
  MinifyResult r = reduce(chain(12), strategies, oracle, {});
  EXPECT_TRUE(has_op(r.best.graph, "n5"));
  EXPECT_FALSE(UnknownOracle::unjudged(r.best)) << print_graph(r.best.graph);
  for (auto& h : r.history) EXPECT_TRUE(h.nodes <= 3 || h.nodes >= 8) << "an unknown candidate was taken: " << h.nodes << " ops";
  EXPECT_GT(r.unknown, 0);
  EXPECT_EQ(r.timeouts, 2 * r.unknown);
  int repeated = 0;
  for (auto& [key, n] : oracle.asked) repeated += n > 1;
  EXPECT_GT(repeated, 0) << "an unknown candidate met again is asked again, not answered from memory";
  if (r.twin) { EXPECT_FALSE(UnknownOracle::unjudged(*r.twin)) << "an unknown candidate is no passing twin"; }
}

// End to end: the cpp backend's compiler made slow. Candidates compile (cache misses) for 2.2 s
// more under a 2 s limit; each is asked again within 4 s and answered, so the reduction still ends
// at the one culprit op, and report.json counts the timeouts. (With 1.5 s under 1 s the retry had
// half a second for the real compile and link: under ctest -j2 on two cores that was not enough.)
TEST(TimeLimit, MinifyWithASlowCompilerStillFindsTheCulprit) {
  auto dir = fresh_dir("slow_compiler");
  std::ofstream(dir / "chain.rk") << print_graph(chain(6, "erf", 3).graph);
  std::map<std::string, std::string> env = {{"REPRO_CACHE_DIR", (dir / "cache").string()}};  // cold: every candidate compiles
  reprokit_cli({"run", "chain.rk", "--inject", "erf:runtime_error"}, dir, {{"REPRO_AFTER", "dynamo"}, {"REPRO_DIR", "out"}, *env.begin()});
  auto b = bundles_in(dir / "out").at(0);
  env["REPRO_TEST_COMPILE_DELAY"] = "2.2";
  auto m = reprokit_cli({"minify", b.string(), "--timeout", "2", "--only", "truncate,cut-front"}, dir, env);
  ASSERT_EQ(m.exit_code, 0) << m.out << m.err;
  EXPECT_EQ(load_repro_file((b / "repro.rk").string()).graph.num_ops(), 1) << m.err;
  auto report = read_json(b / "report.json");
  EXPECT_GT(report["timeouts"].get<int>(), 0) << m.err;
  EXPECT_EQ(report["unknown"].get<int>(), 0) << m.err;
  EXPECT_NE(m.err.find("ran past its time limit"), std::string::npos) << m.err;
}

// Too slow even for twice the limit: unknown, reported, and never taken as "not interesting" —
// the repro stays one the check has really seen fail.
TEST(TimeLimit, ReduceReportsCandidatesItCouldNotJudge) {
  auto dir = fresh_dir("reduce_unknown");
  std::ofstream(dir / "chain.rk") << print_graph(chain(6, "erf", 3).graph);
  // Interesting while erf is there; candidates of 2 to 5 ops take 5 s (past 1 s and 2 s).
  std::ofstream(dir / "check.sh") << "n=$(grep -c ' = ' \"$1\")\n"
                                  << "if [ \"$n\" -ge 2 ] && [ \"$n\" -le 5 ]; then sleep 5; fi\n"
                                  << "grep -q '= erf(' \"$1\" && exit 1\nexit 0\n";
  auto r = reprokit_cli({"reduce", "chain.rk", "--check", "sh check.sh {}", "--timeout", "1", "--only", "truncate,cut-front", "-o", "out"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto report = read_json(dir / "out" / "report.json");
  EXPECT_GT(report["unknown"].get<int>(), 0) << r.err;
  EXPECT_EQ(report["timeouts"].get<int>(), 2 * report["unknown"].get<int>()) << r.err;
  EXPECT_NE(r.err.find("could not be judged"), std::string::npos) << r.err;
  EXPECT_EQ(report["verified"], true);
}
