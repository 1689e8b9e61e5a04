// conv-scale-folding: conv2d(mul(x, s), w) -> conv2d(x, mul(w, s)) where s scales x's channels
// alone and the weights are at most a quarter of x; the values stay those of the graph as written.
#include <gtest/gtest.h>

#include "backend_test_util.h"
#include "pass_test_util.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

// A squeeze-and-excite gate on a 16-channel input, then a 1x1 projection conv with a bias.
const char* kGateThenProjection = R"(graph g(%x: f32[1, 16, 12, 12], %w1: f32[4, 16, 1, 1], %w2: f32[16, 4, 1, 1], %w: f32[8, 16, 1, 1], %b: f32[8]) {
  %p = mean(%x, dims=[2, 3], keepdim=true)
  %h = conv2d(%p, %w1)
  %r = relu(%h)
  %e = conv2d(%r, %w2)
  %s = sigmoid(%e)
  %m = mul(%x, %s)
  %c = conv2d(%m, %w, %b)
  return (%c)
}
)";

}  // namespace

TEST(ConvScaleFoldingPass, TheGateScalesTheWeightsInsteadOfTheInput) {
  auto r = run_one_pass("conv-scale-folding", kGateThenProjection);
  EXPECT_EQ(r.applied, 1);
  EXPECT_TRUE(has(r.graph, "%m = mul(%w, %s)")) << print_graph(r.graph);
  EXPECT_TRUE(has(r.graph, "%c = conv2d(%x, %m, %b")) << print_graph(r.graph);
  Graph g = parse_graph(kGateThenProjection);
  EXPECT_LE(max_error_vs_f64(g, cpp_options()), tolerance_for(g));
}

// Each folds; the values stay those of the graph as written.
TEST(ConvScaleFoldingPass, ScalesOfWholeChannels) {
  const char* cases[] = {
      // the scale first, of rank 3
      "graph g(%x: f32[1, 8, 10, 10], %s: f32[8, 1, 1], %w: f32[6, 8, 1, 1]) {\n  %m = mul(%s, %x)\n  %c = conv2d(%m, %w)\n  return (%c)\n}\n",
      // a 3x3 conv with padding and stride: the padding's zeros stay zeros
      "graph g(%x: f32[1, 4, 29, 27], %s: f32[1, 4, 1, 1], %w: f32[5, 4, 3, 3], %b: f32[5]) {\n  %m = mul(%x, %s)\n"
      "  %c = conv2d(%m, %w, %b, stride=[2, 2], padding=[1, 1])\n  return (%c)\n}\n",
      // a literal, and a scalar tensor
      "graph g(%x: f32[1, 8, 10, 10], %w: f32[6, 8, 1, 1]) {\n  %m = mul(%x, 0.25)\n  %c = conv2d(%m, %w)\n  return (%c)\n}\n",
      "graph g(%x: f32[1, 8, 10, 10], %s: f32[1], %w: f32[6, 8, 1, 1]) {\n  %m = mul(%x, %s)\n  %c = conv2d(%m, %w)\n  return (%c)\n}\n",
      // a batch of 3 under a gate shared by every image
      "graph g(%x: f32[3, 8, 6, 6], %s: f32[1, 8, 1, 1], %w: f32[6, 8, 1, 1]) {\n  %m = mul(%x, %s)\n  %c = conv2d(%m, %w)\n  return (%c)\n}\n",
  };
  for (const char* text : cases) {
    SCOPED_TRACE(text);
    auto r = run_one_pass("conv-scale-folding", text);
    EXPECT_EQ(r.applied, 1) << print_graph(r.graph);
    EXPECT_TRUE(has(r.graph, "= conv2d(%x, %m")) << print_graph(r.graph);
    Graph g = parse_graph(text);
    EXPECT_LE(max_error_vs_f64(g, cpp_options()), tolerance_for(g));
  }
}

TEST(ConvScaleFoldingPass, StaysWhereTheScaleIsNotAChannelsOrItWouldNotPay) {
  const char* cases[] = {
      // grouped: each group's weights see its channels at another index
      "graph g(%x: f32[1, 8, 10, 10], %s: f32[1, 8, 1, 1], %w: f32[8, 4, 1, 1]) {\n  %m = mul(%x, %s)\n  %c = conv2d(%m, %w, groups=2)\n"
      "  return (%c)\n}\n",
      // a scale per image (the weights are shared by the batch)
      "graph g(%x: f32[2, 8, 10, 10], %s: f32[2, 8, 1, 1], %w: f32[6, 8, 1, 1]) {\n  %m = mul(%x, %s)\n  %c = conv2d(%m, %w)\n  return (%c)\n}\n",
      // a scale along rows, and one along columns
      "graph g(%x: f32[1, 8, 10, 10], %s: f32[1, 1, 10, 1], %w: f32[6, 8, 1, 1]) {\n  %m = mul(%x, %s)\n  %c = conv2d(%m, %w)\n  return (%c)\n}\n",
      "graph g(%x: f32[1, 8, 10, 10], %s: f32[10], %w: f32[6, 8, 1, 1]) {\n  %m = mul(%x, %s)\n  %c = conv2d(%m, %w)\n  return (%c)\n}\n",
      // weights over a quarter of the input (read cold, they cost more than they save)
      "graph g(%x: f32[1, 8, 4, 4], %s: f32[1, 8, 1, 1], %w: f32[6, 8, 1, 1]) {\n  %m = mul(%x, %s)\n  %c = conv2d(%m, %w)\n  return (%c)\n}\n",
      // the product read by another node too, or returned
      "graph g(%x: f32[1, 8, 10, 10], %s: f32[1, 8, 1, 1], %w: f32[6, 8, 1, 1]) {\n  %m = mul(%x, %s)\n  %c = conv2d(%m, %w)\n  %t = sum(%m)\n"
      "  return (%c, %t)\n}\n",
      "graph g(%x: f32[1, 8, 10, 10], %s: f32[1, 8, 1, 1], %w: f32[6, 8, 1, 1]) {\n  %m = mul(%x, %s)\n  %c = conv2d(%m, %w)\n  return (%c, %m)\n}\n",
      // the product is the weights, not the input
      "graph g(%x: f32[1, 8, 10, 10], %v: f32[6, 8, 1, 1], %s: f32[1, 8, 1, 1]) {\n  %m = mul(%v, %s)\n  %c = conv2d(%x, %m)\n  return (%c)\n}\n",
      // another op than mul, and a scale of another dtype
      "graph g(%x: f32[1, 8, 10, 10], %s: f32[1, 8, 1, 1], %w: f32[6, 8, 1, 1]) {\n  %m = add(%x, %s)\n  %c = conv2d(%m, %w)\n  return (%c)\n}\n",
      "graph g(%x: f64[1, 8, 10, 10], %s: f32[1, 8, 1, 1], %w: f64[6, 8, 1, 1]) {\n  %m = mul(%x, %s)\n  %c = conv2d(%m, %w)\n  return (%c)\n}\n",
  };
  for (const char* text : cases) expect_unchanged("conv-scale-folding", text);
}

TEST(ConvScaleFoldingPass, LimitAndInjectedRewrite) {
  const char* twice =
      "graph g(%x: f32[1, 8, 10, 10], %s: f32[1, 8, 1, 1], %w: f32[6, 8, 1, 1], %t: f32[1, 6, 1, 1], %v: f32[4, 6, 1, 1]) {\n"
      "  %m = mul(%x, %s)\n  %c = conv2d(%m, %w)\n  %n = mul(%c, %t)\n  %d = conv2d(%n, %v)\n  return (%d)\n}\n";
  auto limited = run_one_pass("conv-scale-folding", twice, 1);
  EXPECT_EQ(limited.applied, 1);
  EXPECT_EQ(limited.wanted, 2);
  EXPECT_TRUE(has(limited.graph, "%n = mul(%c, %t)")) << print_graph(limited.graph);
  auto all = run_one_pass("conv-scale-folding", twice);
  EXPECT_EQ(all.applied, 2);
  EXPECT_TRUE(has(all.graph, "%d = conv2d(%c, %n")) << print_graph(all.graph);
  Graph g = parse_graph(twice);
  auto bugged = run_one_pass("conv-scale-folding", twice, -1, 1);
  EXPECT_TRUE(has(bugged.graph, ".bug")) << print_graph(bugged.graph);
  auto inputs = generate_inputs(g, 3);
  EXPECT_GT(max_error_against(interpret(bugged.graph, inputs), interpret(g, inputs)), 1e-3);
  EXPECT_LE(max_error_against(interpret(all.graph, inputs), interpret(g, inputs)), 1e-5);
}
