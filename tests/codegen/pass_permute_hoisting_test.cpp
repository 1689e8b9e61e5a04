// permute-hoisting: a pointwise op computed in the order of the permute after it, so that it writes
// what the permute's users read; the values stay those of the graph as written.
#include <gtest/gtest.h>

#include "backend_test_util.h"
#include "pass_test_util.h"
#include "reprokit/codegen/lowering.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

// ConvNeXt's stem: a conv, a layer norm over its channels between two permutes, then a depthwise
// conv and a residual add reading the norm's output.
const char* kStem = R"(graph g(%x: f32[1, 3, 16, 20], %w: f32[8, 3, 4, 4], %cb: f32[8], %lw: f32[8], %lb: f32[8], %dw: f32[8, 1, 3, 3], %db: f32[8]) {
  %c = conv2d(%x, %w, %cb, stride=[4, 4], padding=[0, 0], dilation=[1, 1], groups=1)
  %t = permute(%c, dims=[0, 2, 3, 1])
  %l = layer_norm(%t, %lw, %lb, normalized_shape=[8], eps=0.000001)
  %u = permute(%l, dims=[0, 3, 1, 2])
  %d = conv2d(%u, %dw, %db, stride=[1, 1], padding=[1, 1], dilation=[1, 1], groups=8)
  %o = add(%d, %u)
  return (%o)
}
)";

// ConvNeXt's block end: the second linear layer's bias add (NHWC), the permute to NCHW, the layer
// scale and the residual add.
const char* kBlockEnd = R"(graph g(%h: f32[1, 4, 5, 16], %w: f32[16, 8], %b: f32[8], %s: f32[8, 1, 1], %res: f32[1, 8, 4, 5]) {
  %m = matmul(%h, %w)
  %a = add(%b, %m)
  %t = permute(%a, dims=[0, 3, 1, 2])
  %y = mul(%s, %t)
  %o = add(%y, %res)
  return (%o)
}
)";

Graph lowered(const char* text) {
  std::vector<PassRecord> records;
  return lower_for_codegen(parse_graph(text), cpp_options(), &records);
}

}  // namespace

TEST(PermuteHoistingPass, TheBiasAddIsComputedInTheLayoutOfTheLayerScale) {
  auto r = run_one_pass("permute-hoisting", kBlockEnd);
  EXPECT_EQ(r.applied, 1);
  // The matmul's output is read through the permute; the bias [8] gets the op's rank, then the permute.
  EXPECT_TRUE(has(r.graph, "%t = permute(%m, dims=[0, 3, 1, 2])")) << print_graph(r.graph);
  EXPECT_TRUE(has(r.graph, "%t_1 = reshape(%b, shape=[1, 1, 1, 8])\n  %t_2 = permute(%t_1, dims=[0, 3, 1, 2])")) << print_graph(r.graph);
  EXPECT_TRUE(has(r.graph, "%a = add(%t_2, %t)")) << print_graph(r.graph);
  EXPECT_TRUE(has(r.graph, "%y = mul(%s, %a)")) << print_graph(r.graph);
  // With the rest of the pipeline, the bias add, the layer scale and the residual add are one kernel.
  Graph g = lowered(kBlockEnd);
  EXPECT_TRUE(has(g, "%a = add(%t_2, %t, group=0)")) << print_graph(g);
  EXPECT_TRUE(has(g, "%o = add(%y, %res, group=0)")) << print_graph(g);
  Graph original = parse_graph(kBlockEnd);
  EXPECT_LE(max_error_vs_f64(original, cpp_options()), tolerance_for(original));
}

TEST(PermuteHoistingPass, TheLayerNormWritesTheConvsInputInItsOwnOrder) {
  // The layer norm is decomposed before the passes run: the permute after it climbs its output's
  // chain (the bias add, the weight, the reciprocal deviation) to x - mean, which the variance
  // reads too and which is computed again in the permuted order, where the two permutes meet.
  Graph g = lowered(kStem);
  EXPECT_TRUE(has(g, "%d = conv2d(%l, %dw, %db,")) << print_graph(g);  // a computed value, not the permute
  EXPECT_TRUE(has(g, "%u = permute(%t, dims=[0, 3, 1, 2])")) << print_graph(g);
  EXPECT_TRUE(has(g, "%l.sub = sub(%t, %l.div")) << print_graph(g);  // the variance's, in NHWC
  EXPECT_TRUE(has(g, "%l.sub_1 = sub(%u, ")) << print_graph(g);      // the output's, in NCHW
  EXPECT_TRUE(has(g, "%o = add(%d, %l)")) << print_graph(g);
  Graph original = parse_graph(kStem);
  EXPECT_LE(max_error_vs_f64(original, cpp_options()), tolerance_for(original));
}

// Each hoists up the whole chain; the values are exactly those of the graph as written.
TEST(PermuteHoistingPass, ChainsTransposesAndBroadcastOperands) {
  const char* cases[] = {
      // a chain of two ops, both moved
      "graph g(%x: f32[3, 4, 5]) {\n  %e = exp(%x)\n  %n = neg(%e)\n  %p = permute(%n, dims=[2, 0, 1])\n  %o = tanh(%p)\n  return (%o)\n}\n",
      // a transpose, a full-rank broadcast operand and a literal
      "graph g(%x: f32[2, 6, 7], %m: f32[2, 6, 1]) {\n  %a = sub(%x, %m)\n  %c = mul(%a, 0.5)\n  %p = transpose(%c, dim0=1, dim1=2)\n"
      "  %o = sum(%p, dims=[2])\n  return (%o)\n}\n",
      // a broadcast operand of lower rank whose dims the permute reorders
      "graph g(%x: f32[2, 3, 4, 5], %b: f32[4, 5]) {\n  %a = add(%x, %b)\n  %p = permute(%a, dims=[0, 3, 2, 1])\n  %o = exp(%p)\n  return (%o)\n}\n",
      // a cheap op read by another node too: computed again for the permute, kept for the other
      "graph g(%x: f32[4, 6], %y: f32[4, 1]) {\n  %a = sub(%x, %y)\n  %p = permute(%a, dims=[1, 0])\n  %s = sum(%a, dims=[1])\n"
      "  %o = neg(%p)\n  return (%o, %s)\n}\n",
  };
  const int64_t applied[] = {2, 2, 1, 1};
  for (size_t k = 0; k < std::size(cases); ++k) {
    SCOPED_TRACE(cases[k]);
    auto r = run_one_pass("permute-hoisting", cases[k]);
    EXPECT_EQ(r.applied, applied[k]) << print_graph(r.graph);
    Graph g = parse_graph(cases[k]);
    auto inputs = generate_inputs(g, 3);
    EXPECT_EQ(max_error_against(interpret(r.graph, inputs), interpret(g, inputs)), 0);
    EXPECT_LE(max_error_vs_f64(g, cpp_options()), tolerance_for(g));
  }
  auto shared = run_one_pass("permute-hoisting", cases[3]);
  EXPECT_TRUE(has(shared.graph, "%a = sub(%x, %y)")) << print_graph(shared.graph);
  EXPECT_TRUE(has(shared.graph, "%a_1 = sub(%p, %p_1)")) << print_graph(shared.graph);
}

TEST(PermuteHoistingPass, StaysWhereTheOpIsNotPointwiseOrNotTheirsAloneOrAMatmulReadsThePermute) {
  const char* cases[] = {
      // the permute of a matmul
      "graph g(%x: f32[4, 6], %w: f32[6, 5]) {\n  %m = matmul(%x, %w)\n  %p = permute(%m, dims=[1, 0])\n  %o = neg(%p)\n  return (%o)\n}\n",
      // a permute only a matmul reads (it takes the transposed operand as it lies)
      "graph g(%x: f32[4, 6]) {\n  %a = add(%x, 1.0)\n  %p = permute(%a, dims=[1, 0])\n  %o = matmul(%p, %x)\n  return (%o)\n}\n",
      // the permute of an input
      "graph g(%x: f32[4, 6]) {\n  %p = permute(%x, dims=[1, 0])\n  %o = neg(%p)\n  return (%o)\n}\n",
      // the op a graph output
      "graph g(%x: f32[4, 6]) {\n  %a = exp(%x)\n  %p = permute(%a, dims=[1, 0])\n  %o = neg(%p)\n  return (%o, %a)\n}\n",
      // the op read by another node, and more than one instruction
      "graph g(%x: f32[4, 6]) {\n  %a = exp(%x)\n  %p = permute(%a, dims=[1, 0])\n  %o = neg(%p)\n  %s = sum(%a)\n  return (%o, %s)\n}\n",
      // the op read by another node, and reading two full-shape operands
      "graph g(%x: f32[4, 6], %y: f32[4, 6]) {\n  %a = add(%x, %y)\n  %p = permute(%a, dims=[1, 0])\n  %o = neg(%p)\n  %s = sum(%a)\n"
      "  return (%o, %s)\n}\n",
  };
  for (const char* text : cases) expect_unchanged("permute-hoisting", text);
}

TEST(PermuteHoistingPass, LimitAndInjectedRewrite) {
  const char* chain =
      "graph g(%x: f32[3, 4, 5]) {\n  %e = exp(%x)\n  %n = neg(%e)\n  %p = permute(%n, dims=[2, 0, 1])\n  %o = tanh(%p)\n  return (%o)\n}\n";
  auto limited = run_one_pass("permute-hoisting", chain, 1);
  EXPECT_EQ(limited.applied, 1);
  EXPECT_EQ(limited.wanted, 2);
  EXPECT_TRUE(has(limited.graph, "%p = permute(%e, dims=[2, 0, 1])\n  %n = neg(%p)")) << print_graph(limited.graph);
  Graph g = parse_graph(chain);
  auto bugged = run_one_pass("permute-hoisting", chain, -1, 2);
  EXPECT_TRUE(has(bugged.graph, ".bug")) << print_graph(bugged.graph);
  auto inputs = generate_inputs(g, 3);
  EXPECT_GT(max_error_against(interpret(bugged.graph, inputs), interpret(g, inputs)), 1e-3);
}
