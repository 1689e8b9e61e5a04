// pointwise-duplication: a one-instruction pointwise op read by several kernels is computed again
// in each of them; only where each copy reads no more than its user read before and fuses with it.
#include <gtest/gtest.h>

#include "backend_test_util.h"
#include "pass_test_util.h"
#include "reprokit/codegen/lowering.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

// A softmax of scaled scores, as the ONNX import writes it: the scaled scores feed the row max
// and the exp.
const char* kSoftmax = R"(graph g(%s: f32[4, 16]) {
  %ss = mul(%s, 0.125)
  %m = amax(%ss, dims=[1], keepdim=true)
  %d = sub(%ss, %m)
  %e = exp(%d)
  %z = sum(%e, dims=[1], keepdim=true)
  %p = div(%e, %z)
  return (%p)
}
)";

// A layer norm's x - mean feeds its variance (through a square) and its output.
const char* kLayerNorm = R"(graph g(%x: f32[6, 32], %w: f32[32]) {
  %s = sum(%x, dims=[1], keepdim=true)
  %mean = div(%s, 32.0)
  %d = sub(%x, %mean)
  %sq = mul(%d, %d)
  %v = sum(%sq, dims=[1], keepdim=true)
  %ve = add(%v, 0.00001)
  %r = rsqrt(%ve)
  %n = mul(%d, %r)
  %o = mul(%n, %w)
  return (%o)
}
)";

std::string text_of(const Graph& g) { return print_graph(g); }

// The graph after pointwise fusion and then this pass.
PassRun fused_then_duplicated(const std::string& text, int64_t limit = -1, int64_t inject_at = 0) {
  auto fused = run_one_pass("pointwise-fusion", text);
  PassRun r;
  r.graph = fused.graph;
  RewriteBudget budget("pointwise-duplication", limit, inject_at);
  r.changed = find_pass("pointwise-duplication")->run(r.graph, budget);
  r.applied = budget.applied();
  r.wanted = budget.wanted();
  return r;
}

int kernels_with(const Graph& g, const std::string& name) {
  int n = 0;
  for (auto& node : g.nodes) n += node.name == name || node.name.rfind(name + "_", 0) == 0;
  return n;
}

}  // namespace

TEST(PointwiseDuplicationPass, TheScaledScoresAreComputedInTheRowMaxAndInTheExp) {
  auto r = fused_then_duplicated(kSoftmax);
  EXPECT_EQ(r.applied, 1);
  EXPECT_TRUE(has(r.graph, "%ss = mul(%s, 0.125)\n  %m = amax(%ss")) << text_of(r.graph);
  EXPECT_TRUE(has(r.graph, "%ss_1 = mul(%s, 0.125, group=0)\n  %d = sub(%ss_1, %m, group=0)")) << text_of(r.graph);
  Graph g = parse_graph(kSoftmax);
  CompileOptions o = cpp_options();
  Graph lowered = lower_for_codegen(g, o, nullptr);
  // The row max took its copy into a kernel with it; no node computes the scores alone.
  for (auto& n : lowered.nodes) {
    if (n.op == Op::mul || n.op == Op::amax) { EXPECT_TRUE(n.attrs.count("group")) << text_of(lowered); }
  }
  EXPECT_LE(max_error_vs_f64(g, o), tolerance_for(g));
}

TEST(PointwiseDuplicationPass, TheLayerNormsDifferenceGoesIntoTheVarianceAndTheOutput) {
  auto r = fused_then_duplicated(kLayerNorm);
  EXPECT_EQ(r.applied, 1);
  EXPECT_EQ(kernels_with(r.graph, "d"), 2) << text_of(r.graph);
  // The square had no group (its only user is a sum): it gets one with its copy.
  EXPECT_TRUE(has(r.graph, "%sq = mul(%d, %d, group=")) << text_of(r.graph);
  Graph g = parse_graph(kLayerNorm);
  EXPECT_LE(max_error_vs_f64(g, cpp_options()), tolerance_for(g));
}

TEST(PointwiseDuplicationPass, StaysWhereACopyWouldCostMoreOrFuseWithNothing) {
  const char* cases[] = {
      // not one fast instruction
      "graph g(%x: f32[4, 8]) {\n  %a = exp(%x)\n  %m = amax(%a, dims=[1])\n  %s = sum(%a, dims=[1])\n  %o = add(%m, %s)\n  return (%o)\n}\n",
      "graph g(%x: f32[4, 8], %y: f32[4, 8]) {\n  %a = div(%x, %y)\n  %m = amax(%a, dims=[1])\n  %s = sum(%a, dims=[1])\n  %o = add(%m, %s)\n  "
      "return (%o)\n}\n",
      // two operands of its own shape: each copy would read two tensors where its user read one
      "graph g(%x: f32[4, 8], %y: f32[4, 8]) {\n  %a = add(%x, %y)\n  %m = amax(%a, dims=[1])\n  %s = sum(%a, dims=[1])\n  %o = add(%m, %s)\n  "
      "return (%o)\n}\n",
      // read once
      "graph g(%x: f32[4, 8]) {\n  %a = mul(%x, 2.0)\n  %m = amax(%a, dims=[1])\n  return (%m)\n}\n",
      // a graph output
      "graph g(%x: f32[4, 8]) {\n  %a = mul(%x, 2.0)\n  %m = amax(%a, dims=[1])\n  %s = sum(%a, dims=[1])\n  return (%m, %s, %a)\n}\n",
      // read by a matmul, which fuses with nothing
      "graph g(%x: f32[4, 8], %w: f32[8, 3]) {\n  %a = mul(%x, 2.0)\n  %m = amax(%a, dims=[1])\n  %p = matmul(%a, %w)\n  return (%m, %p)\n}\n",
      // read by a pointwise op of a larger shape (broadcast)
      "graph g(%x: f32[8], %y: f32[4, 8]) {\n  %a = mul(%x, 2.0)\n  %m = amax(%a)\n  %b = add(%a, %y)\n  return (%m, %b)\n}\n",
      // in a group already (its users ended in one: it joined them)
      "graph g(%x: f32[4, 8]) {\n  %a = mul(%x, 2.0)\n  %b = exp(%a)\n  %c = mul(%a, %b)\n  return (%c)\n}\n",
  };
  for (const char* text : cases) {
    auto r = fused_then_duplicated(text);
    EXPECT_FALSE(r.changed) << text << text_of(r.graph);
    EXPECT_EQ(r.wanted, 0) << text;
  }
}

TEST(PointwiseDuplicationPass, AChainOfThemCopiesTheFirstOnly) {
  // b reads a, which is duplicated: b is not (its copies would need copies of a); it computes its own copy of a.
  const char* text =
      "graph g(%x: f32[4, 8]) {\n  %a = mul(%x, 2.0)\n  %b = add(%a, 1.0)\n  %ma = amax(%a, dims=[1])\n  %m = amax(%b, dims=[1])\n"
      "  %s = sum(%b, dims=[1])\n  %o = add(%m, %s)\n  %q = add(%o, %ma)\n  return (%q)\n}\n";
  auto r = fused_then_duplicated(text);
  EXPECT_EQ(r.applied, 1);
  Graph g = parse_graph(text);
  auto inputs = generate_inputs(g, 2);
  EXPECT_EQ(max_error_against(interpret(r.graph, inputs), interpret(g, inputs)), 0);
  EXPECT_LE(max_error_vs_f64(g, cpp_options()), tolerance_for(g));
}

TEST(PointwiseDuplicationPass, LimitAndInjectedRewrite) {
  const char* two =
      "graph g(%s: f32[4, 16], %x: f32[4, 16]) {\n  %ss = mul(%s, 0.125)\n  %m = amax(%ss, dims=[1], keepdim=true)\n  %d = sub(%ss, %m)\n"
      "  %a = add(%x, 1.0)\n  %am = amin(%a, dims=[1], keepdim=true)\n  %b = mul(%a, %am)\n  %o = add(%d, %b)\n  return (%o)\n}\n";
  auto limited = fused_then_duplicated(two, 1);
  EXPECT_EQ(limited.applied, 1);
  EXPECT_EQ(limited.wanted, 2);
  EXPECT_EQ(kernels_with(limited.graph, "a"), 1) << text_of(limited.graph);
  Graph g = parse_graph(two);
  auto inputs = generate_inputs(g, 4);
  auto all = fused_then_duplicated(two);
  EXPECT_EQ(all.applied, 2);
  EXPECT_EQ(max_error_against(interpret(all.graph, inputs), interpret(g, inputs)), 0);
  auto bugged = fused_then_duplicated(two, -1, 2);
  EXPECT_TRUE(has(bugged.graph, "%a.bug")) << text_of(bugged.graph);
  EXPECT_GT(max_error_against(interpret(bugged.graph, inputs), interpret(g, inputs)), 1e-3);
}
