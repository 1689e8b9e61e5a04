#include <gtest/gtest.h>

#include "reprokit/codegen/compiled_graph.h"
#include "reprokit/harness/warm_runs.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/runtime/input_gen.h"

namespace reprokit {
namespace {

TEST(WarmRuns, MedianAndMinimumOfTheTimedRuns) {
  WarmRunTimes t;
  t.run_ms = {4.0, 1.0, 3.0, 10.0};
  EXPECT_DOUBLE_EQ(t.median_ms(), 3.5);
  EXPECT_DOUBLE_EQ(t.min_ms(), 1.0);
  t.run_ms = {5.0, 2.0, 9.0};
  EXPECT_DOUBLE_EQ(t.median_ms(), 5.0);
}

const char* kGraph = "graph g(%x: f32[4, 8] grad, %w: f32[8, 3] grad) {\n  %h = matmul(%x, %w)\n  %y = tanh(%h)\n  return (%y)\n}\n";

// Each timed run is one run of the whole stack: forward-only and, with train, forward and backward.
TEST(WarmRuns, TimesTheRequestedNumberOfRunsForwardAndTraining) {
  Graph g = parse_graph(kGraph);
  std::vector<Tensor> inputs = generate_inputs(g, 1);
  for (bool train : {false, true}) {
    StackOptions o;
    o.compile.backend = "eager";
    o.train = train;
    WarmRunTimes t = time_warm_runs(g, inputs, o, 5);
    ASSERT_EQ(t.run_ms.size(), 5u) << train;
    for (double ms : t.run_ms) EXPECT_GE(ms, 0.0);
    EXPECT_LE(t.min_ms(), t.median_ms());
  }
}

// A fault the compiled code raises in a timed run surfaces as the stage's CompileFailure.
TEST(WarmRuns, AFailingRunRaisesItsFailure) {
  Graph g = parse_graph(kGraph);
  StackOptions o;
  o.compile.backend = "cpp";
  o.compile.injections.push_back(parse_fault_injection("tanh:runtime_error"));
  EXPECT_THROW(time_warm_runs(g, generate_inputs(g, 1), o, 2), CompileFailure);
}

}  // namespace
}  // namespace reprokit
