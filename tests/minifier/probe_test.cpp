// How many times the probe runs the original: enough to see a flaky failure, no more than an
// expensive original's runs are worth.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "reprokit/minifier/probe.h"

namespace reprokit {
namespace {

Verdict failing() {
  Verdict v;
  v.interesting = true;
  return v;
}

// Each run sleeps `seconds` (the probe's clock only ever sees at least that much).
std::function<Verdict()> runs_taking(double seconds, int* count) {
  return [seconds, count] {
    ++*count;
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    return failing();
  };
}

TEST(Probe, ACheapOriginalRunsAtLeastTheMinimum) {
  ProbeOptions o;
  o.runs = 3;
  o.budget_s = 100;
  int count = 0;
  ProbeResult r = probe_original(o, runs_taking(0, &count));
  EXPECT_EQ(r.runs, 3);
  EXPECT_EQ(r.fails, 3);
  EXPECT_EQ(count, 3);
}

TEST(Probe, ASlowOriginalRunsTwiceNotThreeTimes) {
  // One run takes more than a third of the budget: two runs, and no third that would end past it.
  ProbeOptions o;
  o.budget_s = 0.3;
  int count = 0;
  ProbeResult r = probe_original(o, runs_taking(0.12, &count));
  EXPECT_EQ(r.runs, 2);
  EXPECT_EQ(r.fails, 2);
  EXPECT_EQ(r.attempts_per_candidate(), 1);
}

TEST(Probe, ARunThatWouldEndPastTheBudgetIsNotStarted) {
  // Cheap enough for the minimum of three, but a fourth would end past the budget.
  ProbeOptions o;
  o.budget_s = 0.6;
  o.min_runs_when_slow = 3;
  int count = 0;
  ProbeResult r = probe_original(o, runs_taking(0.15, &count));
  EXPECT_EQ(r.runs, 3);
}

TEST(Probe, AFailureNotYetSeenIsLookedForPastTheBudget) {
  // A flaky original that passes its first runs: slow runs do not stop the search for a failure.
  ProbeOptions o;
  o.budget_s = 0.1;
  int count = 0;
  ProbeResult r = probe_original(o, [&] {
    ++count;
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    Verdict v;
    v.interesting = count == 4;
    return v;
  });
  EXPECT_EQ(r.fails, 1);
  EXPECT_EQ(r.runs, 4);
  EXPECT_GT(r.attempts_per_candidate(), 1);
}

}  // namespace
}  // namespace reprokit
