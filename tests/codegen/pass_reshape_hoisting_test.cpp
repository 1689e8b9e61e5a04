// reshape-hoisting: a pointwise op computed in the shape of the reshape after it, so that it fuses
// with the reshape's users; only where every operand reads the same elements in the new shape.
#include <gtest/gtest.h>

#include "backend_test_util.h"
#include "pass_test_util.h"
#include "reprokit/codegen/lowering.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

// A linear layer as ONNX exports it (matmul, bias add, reshape back to [batch, tokens, features])
// and the residual add after it.
const char* kLinearThenResidual = R"(graph g(%x: f32[8, 16], %w: f32[16, 12], %b: f32[12], %res: f32[2, 4, 12]) {
  %m = matmul(%x, %w)
  %a = add(%m, %b)
  %r = reshape(%a, shape=[2, 4, 12])
  %o = add(%r, %res)
  return (%o)
}
)";

}  // namespace

TEST(ReshapeHoistingPass, TheBiasAddTakesTheReshapesShape) {
  auto r = run_one_pass("reshape-hoisting", kLinearThenResidual);
  EXPECT_EQ(r.applied, 1);
  EXPECT_TRUE(has(r.graph, "%r = reshape(%m, shape=[2, 4, 12])")) << print_graph(r.graph);
  EXPECT_TRUE(has(r.graph, "%a = add(%r, %b)")) << print_graph(r.graph);
  EXPECT_TRUE(has(r.graph, "%o = add(%a, %res)")) << print_graph(r.graph);
}

TEST(ReshapeHoistingPass, TheBiasAddAndTheResidualAddBecomeOneKernel) {
  Graph g = parse_graph(kLinearThenResidual);
  CompileOptions o = cpp_options();
  std::vector<PassRecord> records;
  Graph lowered = lower_for_codegen(g, o, &records);
  EXPECT_TRUE(has(lowered, "%a = add(%r, %b, group=0)")) << print_graph(lowered);
  EXPECT_TRUE(has(lowered, "%o = add(%a, %res, group=0)")) << print_graph(lowered);
  EXPECT_LE(max_error_vs_f64(g, o), tolerance_for(g));
}

// Each hoists; the values stay those of the graph as written.
TEST(ReshapeHoistingPass, OperandsThatBroadcastTheSameWayInTheNewShape) {
  const char* cases[] = {
      // a bias with leading 1s, a literal, and a tanh after the reshape
      "graph g(%x: f32[8, 16], %w: f32[16, 12], %b: f32[1, 12]) {\n  %m = matmul(%x, %w)\n  %a = add(%m, %b)\n  %c = mul(%a, 0.5)\n"
      "  %r = reshape(%c, shape=[2, 4, 12])\n  %o = tanh(%r)\n  return (%o)\n}\n",
      // two full-shape operands, each reshaped (the second under a fresh name)
      "graph g(%x: f32[8, 16], %w: f32[16, 12], %v: f32[16, 12]) {\n  %m = matmul(%x, %w)\n  %n = matmul(%x, %v)\n  %a = sub(%m, %n)\n"
      "  %r = reshape(%a, shape=[4, 2, 12])\n  %o = exp(%r)\n  return (%o)\n}\n",
      // unsqueeze and squeeze are reshapes too; an input in C order reshapes in place
      "graph g(%x: f32[8, 12], %b: f32[12]) {\n  %a = mul(%x, %b)\n  %u = unsqueeze(%a, dim=0)\n  %o = neg(%u)\n  return (%o)\n}\n",
      "graph g(%x: f32[1, 8, 12], %b: f32[12]) {\n  %a = add(%x, %b)\n  %s = squeeze(%a, dim=0)\n  %o = abs(%s)\n  return (%o)\n}\n",
      // all dims change: only literals and scalars may broadcast
      "graph g(%x: f32[6, 4], %s: f32[1]) {\n  %e = exp(%x)\n  %a = mul(%e, %s)\n  %r = reshape(%a, shape=[24])\n  %o = add(%r, 1.0)\n  return "
      "(%o)\n}\n",
  };
  for (const char* text : cases) {
    SCOPED_TRACE(text);
    auto r = run_one_pass("reshape-hoisting", text);
    EXPECT_EQ(r.applied, 1) << print_graph(r.graph);
    Graph g = parse_graph(text);
    EXPECT_LE(max_error_vs_f64(g, cpp_options()), tolerance_for(g));
  }
  auto two = run_one_pass("reshape-hoisting", cases[1]);
  EXPECT_TRUE(has(two.graph, "%r = reshape(%m, shape=[4, 2, 12])")) << print_graph(two.graph);
  EXPECT_TRUE(has(two.graph, "%r_1 = reshape(%n, shape=[4, 2, 12])")) << print_graph(two.graph);
  EXPECT_TRUE(has(two.graph, "%a = sub(%r, %r_1)")) << print_graph(two.graph);
}

TEST(ReshapeHoistingPass, StaysWhereTheOperandsWouldReadOtherElementsOrNothingWouldFuse) {
  const char* cases[] = {
      // a bias along the rows, which the reshape splits
      "graph g(%x: f32[8, 12], %b: f32[8, 1]) {\n  %a = add(%x, %b)\n  %r = reshape(%a, shape=[2, 4, 12])\n  %o = neg(%r)\n  return (%o)\n}\n",
      // no operand of the op's own shape: the operands broadcast to [3, 12], not to [1, 3, 12]
      "graph g(%a: f32[1, 12], %b: f32[3, 1]) {\n  %p = add(%a, %b)\n  %r = reshape(%p, shape=[1, 3, 12])\n  %o = neg(%r)\n  return (%o)\n}\n",
      // a bias of higher rank than the new shape
      "graph g(%x: f32[2, 4, 12], %b: f32[1, 1, 12]) {\n  %a = add(%x, %b)\n  %r = reshape(%a, shape=[8, 12])\n  %o = neg(%r)\n  return (%o)\n}\n",
      // a full-shape operand that is a permuted view (its reshape would be a copy)
      "graph g(%y: f32[12, 8]) {\n  %p = permute(%y, dims=[1, 0])\n  %a = exp(%p)\n  %r = reshape(%a, shape=[96])\n  %o = neg(%r)\n  return "
      "(%o)\n}\n",
      // an input with strides of its own
      "graph g(%x: f32[8, 12] strides=[1, 8]) {\n  %a = exp(%x)\n  %r = reshape(%a, shape=[96])\n  %o = neg(%r)\n  return (%o)\n}\n",
      // the op read by another node too
      "graph g(%x: f32[8, 12]) {\n  %a = exp(%x)\n  %r = reshape(%a, shape=[96])\n  %o = neg(%r)\n  %s = sum(%a)\n  return (%o, %s)\n}\n",
      // the op a graph output
      "graph g(%x: f32[8, 12]) {\n  %a = exp(%x)\n  %r = reshape(%a, shape=[96])\n  %o = neg(%r)\n  return (%o, %a)\n}\n",
      // the reshape read by no pointwise op
      "graph g(%x: f32[8, 12], %w: f32[12, 4]) {\n  %a = exp(%x)\n  %r = reshape(%a, shape=[2, 4, 12])\n  %o = matmul(%r, %w)\n  return (%o)\n}\n",
      // a reduction before the reshape
      "graph g(%x: f32[8, 12]) {\n  %a = sum(%x, dims=[1])\n  %r = reshape(%a, shape=[2, 4])\n  %o = neg(%r)\n  return (%o)\n}\n",
  };
  for (const char* text : cases) expect_unchanged("reshape-hoisting", text);
}

TEST(ReshapeHoistingPass, LimitAndInjectedRewrite) {
  const char* twice =
      "graph g(%x: f32[8, 12], %b: f32[12]) {\n  %a = add(%x, %b)\n  %r = reshape(%a, shape=[2, 4, 12])\n  %o = neg(%r)\n"
      "  %c = mul(%o, %b)\n  %q = reshape(%c, shape=[8, 12])\n  %z = exp(%q)\n  return (%z)\n}\n";
  auto limited = run_one_pass("reshape-hoisting", twice, 1);
  EXPECT_EQ(limited.applied, 1);
  EXPECT_EQ(limited.wanted, 2);
  EXPECT_TRUE(has(limited.graph, "%q = reshape(%c, shape=[8, 12])")) << print_graph(limited.graph);
  auto all = run_one_pass("reshape-hoisting", twice);
  EXPECT_EQ(all.applied, 2);
  Graph g = parse_graph(twice);
  auto bugged = run_one_pass("reshape-hoisting", twice, -1, 1);
  EXPECT_TRUE(has(bugged.graph, ".bug")) << print_graph(bugged.graph);
  auto inputs = generate_inputs(g, 3);
  EXPECT_GT(max_error_against(interpret(bugged.graph, inputs), interpret(g, inputs)), 1e-3);
  EXPECT_EQ(max_error_against(interpret(all.graph, inputs), interpret(g, inputs)), 0);
}
