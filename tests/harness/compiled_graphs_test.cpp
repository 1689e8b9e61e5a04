// Graphs compiled for one question and run again (compiled_graphs.h): the same question compiles
// each graph once, another question compiles again, and a compile that failed is not kept.
#include <gtest/gtest.h>

#include "cli_util.h"
#include "reprokit/codegen/compiler.h"
#include "reprokit/harness/compiled_graphs.h"
#include "reprokit/harness/stack.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/runtime/input_gen.h"
#include "reprokit/support/errors.h"

using namespace reprokit;

namespace {

StackOptions cpp_options(CompiledGraphs* kept) {
  StackOptions o;
  o.compile.backend = "cpp";
  o.compile.cache_dir = std::string(REPROKIT_BINARY_DIR) + "/test-cache";
  o.compiled = kept;
  return o;
}

const char* kGraph = "graph g(%x: f32[4, 8], %w: f32[8, 3]) {\n  %m = matmul(%x, %w)\n  %t = tanh(%m)\n  return (%t)\n}";

TEST(CompiledGraphs, TheSameQuestionCompilesOnceAndRunsAgain) {
  const Graph g = parse_graph(kGraph);
  const auto inputs = generate_inputs(g, 1);
  CompiledGraphs kept;
  kept.ask("q1");
  const StackResult first = run_stage("dynamo", g, inputs, cpp_options(&kept));
  const StackResult again = run_stage("dynamo", g, inputs, cpp_options(&kept));
  EXPECT_EQ(kept.compiles(), 1u);
  ASSERT_EQ(first.outputs.size(), 1u);
  EXPECT_EQ(first.outputs[0].to_doubles(), again.outputs[0].to_doubles());
  // Other inputs on the same compiled graph (the samples of one question).
  const StackResult other = run_stage("dynamo", g, generate_inputs(g, 2), cpp_options(&kept));
  EXPECT_EQ(kept.compiles(), 1u);
  EXPECT_NE(other.outputs[0].to_doubles(), first.outputs[0].to_doubles());
  kept.ask("q1");  // the same question again
  run_stage("dynamo", g, inputs, cpp_options(&kept));
  EXPECT_EQ(kept.compiles(), 1u);
  kept.ask("q2");  // another question: compiled again, under its own options
  run_stage("dynamo", g, inputs, cpp_options(&kept));
  EXPECT_EQ(kept.compiles(), 2u);
}

TEST(CompiledGraphs, TrainingKeepsTheForwardAndTheBackwardGraphApart) {
  const Graph g = parse_graph("graph g(%x: f32[4, 8], %w: f32[8, 3] grad) {\n  %m = matmul(%x, %w)\n  %t = tanh(%m)\n  return (%t)\n}");
  const auto inputs = generate_inputs(g, 1);
  CompiledGraphs kept;
  kept.ask("q");
  StackOptions o = cpp_options(&kept);
  o.train = true;
  const StackResult first = run_stage("dynamo", g, inputs, o);
  const StackResult again = run_stage("dynamo", g, inputs, o);
  EXPECT_EQ(kept.compiles(), 2u);
  ASSERT_EQ(first.grads.size(), 1u);
  EXPECT_EQ(first.grads[0].to_doubles(), again.grads[0].to_doubles());
  StackOptions fresh = cpp_options(nullptr);
  fresh.train = true;
  EXPECT_EQ(run_stage("dynamo", g, inputs, fresh).grads[0].to_doubles(), first.grads[0].to_doubles());
}

TEST(CompiledGraphs, AFailedCompileIsTriedAgainAndARuntimeErrorSeenOnEveryRun) {
  const Graph g = parse_graph(kGraph);
  const auto inputs = generate_inputs(g, 1);
  CompiledGraphs kept;
  kept.ask("q");
  StackOptions o = cpp_options(&kept);
  o.compile.injections = {parse_fault_injection("tanh:compile_error")};
  size_t failed = 0;
  for (int i = 0; i < 2; ++i) try {
      run_stage("dynamo", g, inputs, o);
    } catch (const CompileFailure& e) { failed += e.kind == FailureKind::compile_error; }
  EXPECT_EQ(failed, 2u);
  EXPECT_EQ(kept.compiles(), 2u);
  CompiledGraphs runtime;
  runtime.ask("r");
  StackOptions r = cpp_options(&runtime);
  r.compile.injections = {parse_fault_injection("tanh:runtime_error")};
  for (int i = 0; i < 2; ++i) EXPECT_THROW(run_stage("dynamo", g, inputs, r), CompileFailure);
  EXPECT_EQ(runtime.compiles(), 1u);
}

TEST(CompiledGraphs, OptionsWithFrozenInputsAreNeverKept) {
  const Graph g = parse_graph(kGraph);
  const auto inputs = generate_inputs(g, 1);
  CompiledGraphs kept;
  kept.ask("q");
  StackOptions o = cpp_options(&kept);
  o.compile.frozen_inputs = {"w"};
  run_stage("dynamo", g, inputs, o);
  run_stage("dynamo", g, inputs, o);
  EXPECT_EQ(kept.compiles(), 2u);
}

}  // namespace
