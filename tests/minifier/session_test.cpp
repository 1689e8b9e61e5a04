// The reduction session with a fake front end: the order of its steps (probe, oracle, reduce,
// final files, verify, report), what it writes when the original is not interesting, the exit
// status of an unverified repro, resume from the saved best, and the one batch loop (in_slices).
#include <gtest/gtest.h>

#include "../harness/cli_util.h"
#include "fake_oracle.h"
#include "reprokit/minifier/compiler_decisions.h"
#include "reprokit/minifier/session.h"
#include "reprokit/support/errors.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

class PredicateOracle : public TimedOracle {
 public:
  PredicateOracle(std::function<bool(const Candidate&)> pred, double floor_s) : pred_(std::move(pred)), limit_(floor_s, false) {}
  std::vector<Verdict> judge(const std::vector<Candidate>& cs) override {
    std::vector<Verdict> out;
    for (auto& c : cs) out.push_back(Verdict{pred_(c), {}});
    return out;
  }
  const QueryLimit& limit() const override { return limit_; }

 private:
  std::function<bool(const Candidate&)> pred_;
  QueryLimit limit_;
};

// Records what the session asked of it, in order.
class FakeFrontEnd : public ReductionFrontEnd {
 public:
  FakeFrontEnd(Graph g, std::function<bool(const Candidate&)> pred, const fs::path& state, const SessionOptions& o)
      : graph_(std::move(g)), pred_(std::move(pred)), state_(Dir::create(state.string())) {
    options_.tool = "fake";
    options_.original = &graph_;
    for (auto& s : strategy_table())
      if (!s.compiler_only) options_.strategies.push_back(s);
    options_.probe.runs = options_.probe.look_until = o.flaky_checks;
    options_.untimed_limit_s = 300;
    options_.state_dir = &state_;
    options_.passes = &reprokit_passes();
    options_.interrupted_message = "interrupted\n";
  }

  std::unique_ptr<TimedOracle> make_oracle(double floor_s) override {
    steps.push_back(fmt::format("oracle {:g}", floor_s));
    return std::make_unique<PredicateOracle>(pred_, floor_s);
  }
  Verdict probe_once(TimedOracle& oracle, const Candidate& c) override {
    ++probe_runs;
    return oracle.judge({c}).at(0);
  }
  bool probed(const ProbeResult& pr) override {
    steps.push_back(fmt::format("probed {} of {}", pr.fails, pr.runs));
    return pr.fails > 0;
  }
  void ready(const TimedOracle&, const ProbeResult&, const SessionOptions&) override { steps.push_back("ready"); }
  void check_resumed(const Candidate& c) override {
    if (refuse_resumed) throw UserError("a window does not fit");
    resumed_ops = c.graph.num_ops();
  }
  void save(const Candidate& c) override { saved.push_back(c.graph.num_ops()); }
  std::string write_final(const MinifyResult& r) override {
    steps.push_back(fmt::format("final {}", r.best.graph.num_ops()));
    return r.twin ? "a twin" : "";
  }
  bool verify(const Candidate&) override {
    steps.push_back("verify");
    return verifies;
  }
  void report(const SessionResult& s, const SessionOptions&) override {
    steps.push_back("report");
    reported = s;
  }

  std::vector<std::string> steps;
  std::vector<int> saved;  // ops of each candidate saved, in order
  int probe_runs = 0, resumed_ops = -1;
  bool verifies = true, refuse_resumed = false;
  std::optional<SessionResult> reported;

 private:
  Graph graph_;
  std::function<bool(const Candidate&)> pred_;
  Dir state_;
};

}  // namespace

TEST(Session, RunsEachStepOnceInOrderAndSavesEverySuccess) {
  const fs::path dir = fresh_dir("session_steps");
  SessionOptions o;
  o.flaky_checks = 2;
  o.timeout_s = 12;  // the reduction's floor; the probe's is the front end's own (300 here)
  FakeFrontEnd front(
      unary_chain(20), [](const Candidate& c) { return has_op(c.graph, "n7"); }, dir, o);
  EXPECT_EQ(run_session(front, o), 0);
  const std::vector<std::string> steps = {"oracle 300", "probed 2 of 2", "oracle 12", "ready", "final 1", "verify", "report"};
  EXPECT_EQ(front.steps, steps);
  EXPECT_EQ(front.probe_runs, 2);
  ASSERT_GE(front.saved.size(), 2u);
  EXPECT_EQ(front.saved.front(), 20);  // the start is on disk before the first query
  EXPECT_EQ(front.saved.back(), 1);    // and every success after it
  EXPECT_TRUE(std::is_sorted(front.saved.rbegin(), front.saved.rend()));
  ASSERT_TRUE(front.reported);
  EXPECT_TRUE(front.reported->verified);
  EXPECT_EQ(front.reported->reduction.best.graph.num_ops(), 1);
  EXPECT_DOUBLE_EQ(front.reported->failure_rate, 1);
  // state.json holds the final best, so --resume of a finished run starts there.
  EXPECT_EQ(read_best_candidate(Dir::open(dir.string()), reprokit_passes()).graph.num_ops(), 1);
}

TEST(Session, WithoutATimeoutTheProbeIsGenerousAndTheReductionTakesThreeTimesTheSlowestRun) {
  SessionOptions o;
  o.flaky_checks = 1;
  FakeFrontEnd front(
      unary_chain(4), [](const Candidate& c) { return has_op(c.graph, "n2"); }, fresh_dir("session_limits"), o);
  EXPECT_EQ(run_session(front, o), 0);
  EXPECT_EQ(front.steps.at(0), "oracle 300");
  EXPECT_EQ(front.steps.at(2), "oracle 10");  // max(10, 3 x ~0 s + 5)
}

TEST(Session, AnOriginalThatIsNotInterestingSavesNothing) {
  const fs::path dir = fresh_dir("session_not_interesting");
  SessionOptions o;
  o.flaky_checks = 3;
  FakeFrontEnd front(
      unary_chain(5), [](const Candidate&) { return false; }, dir, o);
  EXPECT_EQ(run_session(front, o), 1);
  EXPECT_EQ(front.probe_runs, 3);
  EXPECT_TRUE(front.saved.empty());
  EXPECT_FALSE(fs::exists(dir / "state.json"));
  EXPECT_FALSE(front.reported);
}

TEST(Session, AFinalReproThatDoesNotVerifyIsExitOneAndReportedSo) {
  SessionOptions o;
  o.flaky_checks = 1;
  FakeFrontEnd front(
      unary_chain(6), [](const Candidate& c) { return has_op(c.graph, "n3"); }, fresh_dir("session_unverified"), o);
  front.verifies = false;
  EXPECT_EQ(run_session(front, o), 1);
  ASSERT_TRUE(front.reported);
  EXPECT_FALSE(front.reported->verified);

  FakeFrontEnd unchecked(
      unary_chain(6), [](const Candidate& c) { return has_op(c.graph, "n3"); }, fresh_dir("session_no_verify"), o);
  unchecked.verifies = false;
  o.verify = false;  // --no-verify: never asked
  EXPECT_EQ(run_session(unchecked, o), 0);
  EXPECT_EQ(std::count(unchecked.steps.begin(), unchecked.steps.end(), "verify"), 0);
}

TEST(Session, ResumeStartsFromTheSavedBestAndARefusedStateNamesTheFile) {
  const fs::path dir = fresh_dir("session_resume");
  auto pred = [](const Candidate& c) { return has_op(c.graph, "n4") && has_op(c.graph, "n9"); };
  SessionOptions o;
  o.flaky_checks = 1;
  {
    FakeFrontEnd first(unary_chain(12), pred, dir, o);
    ASSERT_EQ(run_session(first, o), 0);
  }
  const int best_ops = read_best_candidate(Dir::open(dir.string()), reprokit_passes()).graph.num_ops();
  EXPECT_LT(best_ops, 12);

  o.resume = true;
  FakeFrontEnd resumed(unary_chain(12), pred, dir, o);
  EXPECT_EQ(run_session(resumed, o), 0);
  EXPECT_EQ(resumed.resumed_ops, best_ops);
  EXPECT_EQ(resumed.saved.front(), best_ops);  // it starts there, not from the 12-op original

  FakeFrontEnd tampered(unary_chain(12), pred, dir, o);
  tampered.refuse_resumed = true;
  try {
    run_session(tampered, o);
    FAIL() << "a resumed candidate the front end refuses must stop the run";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find((dir / "state.json").string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("a window does not fit"), std::string::npos) << e.what();
  }
}

TEST(Session, SlicesHoldAtMostJobsCandidatesAndVerdictsKeepTheirOrder) {
  std::vector<Candidate> cands(7);
  for (int i = 0; i < 7; ++i) cands[static_cast<size_t>(i)].graph = unary_chain(i + 1);
  const std::vector<double> limits = {1, 2, 3, 4, 5, 6, 7};
  std::vector<size_t> sizes;
  auto verdicts = in_slices(3, cands, limits, [&](std::span<const Candidate> slice, std::span<const double> l) {
    sizes.push_back(slice.size());
    std::vector<Verdict> out;
    for (size_t k = 0; k < slice.size(); ++k) out.push_back(Verdict{slice[k].graph.num_ops() % 2 == 1, {}, false, 0, l[k]});
    return out;
  });
  EXPECT_EQ(sizes, (std::vector<size_t>{3, 3, 1}));
  ASSERT_EQ(verdicts.size(), 7u);
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(verdicts[static_cast<size_t>(i)].interesting, (i + 1) % 2 == 1);
    EXPECT_DOUBLE_EQ(verdicts[static_cast<size_t>(i)].seconds, i + 1);  // each candidate got its own limit
  }
}
