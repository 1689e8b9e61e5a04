// Decompositions: no composite op remains, and the decomposed graph computes the same values
// (reference interpreter, float64 and float32) for every composite op and every example model.
#include <gtest/gtest.h>

#include <cmath>

#include "reprokit/aot/decompose.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/runtime/input_gen.h"
#include "reprokit/runtime/interpreter.h"

using namespace reprokit;

namespace {

double max_rel_diff(const Graph& a, const Graph& b, bool f64) {
  auto inputs = generate_inputs(a, 99);
  InterpretOptions o;
  o.cast_to_f64 = f64;
  auto x = interpret(a, inputs, o), y = interpret(b, inputs, o);
  double worst = 0;
  for (size_t k = 0; k < x.size(); ++k) {
    auto u = x[k].to_doubles(), v = y[k].to_doubles();
    for (size_t i = 0; i < u.size(); ++i) worst = std::max(worst, std::fabs(u[i] - v[i]) / (1 + std::fabs(u[i])));
  }
  return worst;
}

void expect_primitive(const Graph& g) {
  for (auto& n : g.nodes)
    if (!n.is_input()) { EXPECT_FALSE(op_schema(n.op).composite()) << "composite op left: " << n.op; }
}

}  // namespace

TEST(Decompose, EveryCompositeOpComputesTheSameValues) {
  const char* graphs[] = {
      "graph t(%x: f32[3, 5]) { %y = sigmoid(%x)\n return (%y) }",
      "graph t(%x: f32[3, 5]) { %y = silu(%x)\n return (%y) }",
      "graph t(%x: f32[3, 5]) { %y = gelu(%x)\n return (%y) }",
      "graph t(%x: f32[3, 5]) { %y = gelu(%x, approximate=\"tanh\")\n return (%y) }",
      "graph t(%x: f32[3, 5]) { %y = softmax(%x, dim=0)\n return (%y) }",
      "graph t(%x: f32[3, 5]) { %y = log_softmax(%x, dim=-1)\n return (%y) }",
      "graph t(%x: f32[3, 5]) { %y = mean(%x, dims=[1], keepdim=true)\n return (%y) }",
      "graph t(%x: f32[3, 5]) { %y = mean(%x)\n return (%y) }",
      "graph t(%x: f32[3, 5]) { %y = var(%x, dims=[0])\n return (%y) }",
      "graph t(%x: f32[3, 5]) { %y = var(%x, correction=0, keepdim=true)\n return (%y) }",
      "graph t(%x: f32[2, 3, 5], %w: f32[5], %b: f32[5]) { %y = layer_norm(%x, %w, %b, normalized_shape=[5])\n return (%y) }",
      "graph t(%x: f32[2, 3, 5]) { %y = layer_norm(%x, normalized_shape=[3, 5], eps=0.1)\n return (%y) }",
      "graph t(%x: f32[2, 3, 5], %w: f32[4, 5], %b: f32[4]) { %y = linear(%x, %w, %b)\n return (%y) }",
      "graph t(%x: f32[5], %w: f32[4, 5]) { %y = linear(%x, %w)\n return (%y) }",
      "graph t(%x: f16[3, 5]) { %y = softmax(%x, dim=1)\n return (%y) }",
      "graph t(%x: bf16[3, 5]) { %y = gelu(%x)\n return (%y) }",
  };
  for (auto src : graphs) {
    SCOPED_TRACE(src);
    Graph g = parse_graph(src);
    Graph d = decompose(g);
    expect_primitive(d);
    EXPECT_EQ(d.node(d.outputs[0]).name, "y");
    EXPECT_EQ(d.node(d.outputs[0]).type, g.node(g.outputs[0]).type);
    EXPECT_LT(max_rel_diff(g, d, true), 1e-12);
    DType t = g.node(0).type.dtype;
    EXPECT_LT(max_rel_diff(g, d, false), t == DType::f32 ? 1e-5 : 2e-2);
  }
}

TEST(Decompose, ExampleModels) {
  for (auto name : {"mlp", "attention", "embedding_classifier", "mixed_precision"}) {
    SCOPED_TRACE(name);
    Graph g = load_module_file(std::string(REPROKIT_SOURCE_DIR) + "/examples/" + name + ".rk").entry();
    Graph d = decompose(g);
    expect_primitive(d);
    EXPECT_LT(max_rel_diff(g, d, true), 1e-10);
  }
}

TEST(Decompose, GeneratedNamesNeverCollideWithLaterOriginalNames) {
  Graph g = parse_graph("graph t(%x: f32[4]) {\n  %s = sigmoid(%x)\n  %s.neg = neg(%s)\n  return (%s.neg)\n}");
  Graph d = decompose(g);
  EXPECT_NE(d.find("s.neg"), -1);
  EXPECT_EQ(d.node(d.outputs[0]).name, "s.neg");
  EXPECT_EQ(d.node(d.outputs[0]).op, Op::neg);
}

TEST(Decompose, EveryCompositeOpOfTheTableHasARuleAndNoPrimitiveHasOne) {
  for (auto& s : op_table()) EXPECT_EQ(has_decomposition(s.op), s.composite()) << s.name;
}

TEST(Decompose, LowPrecisionCompositesComputeInFloat32) {
  Graph d = decompose(parse_graph("graph t(%x: bf16[2, 8]) { %y = layer_norm(%x, normalized_shape=[8])\n return (%y) }"));
  for (auto& n : d.nodes)
    if (!n.is_input() && n.name != "y" && n.op != Op::to) { EXPECT_EQ(n.type.dtype, DType::f32) << "%" << n.name << " = " << n.op; }
  EXPECT_EQ(d.node(d.outputs[0]).op, Op::to);
  EXPECT_EQ(d.node(d.outputs[0]).type.dtype, DType::bf16);
}

// A float op of an integer or bool input decomposes in its float result type: sigmoid(bool) was
// neg(bool), which the IR refuses as PyTorch does (and Inductor, handed the decomposed training
// graph, refused it too).
TEST(Decompose, FloatOpsOfIntegersDecomposeInTheirFloatType) {
  Graph g = parse_graph(R"(graph fi(%b: bool[3], %i: i32[3], %l: i64[3]) {
  %s = sigmoid(%b)
  %t = silu(%i)
  %u = gelu(%l, approximate="tanh")
  return (%s, %t, %u)
})");
  Graph d = decompose(g);
  expect_primitive(d);
  for (int o : d.outputs) EXPECT_EQ(d.node(o).type.dtype, DType::f32);
  EXPECT_LT(max_rel_diff(g, d, true), 1e-12);
}

// Inference batch norm: the weight is folded into the per-channel scale, so each element is
// touched three times (sub the mean, mul the scale, add the bias), the mean subtracted first (no
// large x * scale cancelling against a large shift); the values stay the reference's.
TEST(Decompose, BatchNormScalesEachElementOnceAfterTheMean) {
  Graph g = parse_graph(
      "graph t(%x: f32[2, 3, 4, 5], %m: f32[3], %v: f32[3], %w: f32[3], %b: f32[3]) {\n"
      "  %a = abs(%v)\n  %y = batch_norm(%x, %m, %a, %w, %b, eps=0.001)\n  return (%y)\n}");
  Graph d = decompose(g);
  expect_primitive(d);
  std::vector<Op> per_element;
  for (auto& n : d.nodes)
    if (!n.is_input() && n.type.shape == Shape{2, 3, 4, 5}) per_element.push_back(n.op);
  EXPECT_EQ(per_element, (std::vector<Op>{Op::sub, Op::mul, Op::add}));
  for (auto& n : d.nodes) {
    if (!n.is_input() && n.op == Op::sub && n.type.shape == Shape{2, 3, 4, 5}) { EXPECT_EQ(n.operands[0].value, 0) << "the mean off %x itself"; }
  }
  EXPECT_LT(max_rel_diff(g, d, true), 1e-12);
  EXPECT_LT(max_rel_diff(g, d, false), 1e-5);
}
