// Reverse-mode autodiff: the gradient of every differentiable op (undecomposed and decomposed)
// against float64 central finite differences, the joint graph's layout and forward values, how
// gradients stop at non-differentiable ops, and the error paths (no rule, integer grad input).
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "grad_check.h"
#include "op_graphs.h"
#include "reprokit/aot/autodiff.h"
#include "reprokit/aot/decompose.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/runtime/input_gen.h"
#include "reprokit/runtime/interpreter.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

// Checks the joint graph's gradients of g (f64) against finite differences.
void expect_gradients_match_fd(const Graph& g, const Graph& differentiated, double tol) {
  auto inputs = generate_inputs(g, 7);
  JointGraph j = build_joint_graph(differentiated);
  auto out = run_joint(j, inputs, true);
  auto fd = finite_difference_grads(g, inputs, j.grad_inputs);
  ASSERT_EQ(out.size(), static_cast<size_t>(j.num_forward_outputs) + fd.size());
  for (size_t k = 0; k < fd.size(); ++k) {
    auto got = out[static_cast<size_t>(j.num_forward_outputs) + k].to_doubles();
    ASSERT_EQ(got.size(), fd[k].size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], fd[k][i], tol * (1 + std::fabs(fd[k][i]))) << "gradient of %" << g.node(j.grad_inputs[k]).name << " [" << i << "]";
  }
}

}  // namespace

TEST(Autodiff, EveryDifferentiablePrimitiveHasARuleAndEveryDifferentiableOpATest) {
  std::set<Op> tested;
  for (auto& src : differentiable_op_graphs())
    for (auto& n : parse_graph(src).nodes) tested.insert(n.op);
  for (auto& s : op_table()) {
    if (!s.differentiable()) continue;
    // Composite ops are differentiated through their decompositions.
    EXPECT_EQ(has_backward_rule(s.op), !s.composite()) << s.name;
    EXPECT_TRUE(tested.count(s.op)) << "no gradient test for " << s.name;
  }
  EXPECT_FALSE(has_backward_rule(Op::eq));
  EXPECT_FALSE(has_backward_rule(Op::argmax));
}

TEST(Autodiff, GradientsMatchFiniteDifferences) {
  for (auto& src : differentiable_op_graphs()) {
    SCOPED_TRACE(src);
    Graph g = parse_graph(as_f64(src));
    expect_gradients_match_fd(g, g, 1e-6);
  }
}

TEST(Autodiff, GradientsOfDecomposedGraphsMatchFiniteDifferences) {
  for (auto& src : differentiable_op_graphs()) {
    SCOPED_TRACE(src);
    Graph g = parse_graph(as_f64(src));
    expect_gradients_match_fd(g, decompose(g), 1e-6);
  }
}

TEST(Autodiff, Float32GradientsAgreeWithFloat64) {
  for (auto& src : differentiable_op_graphs()) {
    SCOPED_TRACE(src);
    Graph g = parse_graph(src);
    auto inputs = generate_inputs(g, 11);
    JointGraph j = build_joint_graph(g);
    for (int i = 0; i < j.num_forward_outputs; ++i) EXPECT_EQ(j.graph.node(j.graph.outputs[static_cast<size_t>(i)]).type.dtype, DType::f32);
    EXPECT_LT(max_rel_diff(run_joint(j, inputs, true), run_joint(j, inputs, false)), 1e-4);
  }
}

TEST(Autodiff, JointGraphLayoutAndForwardValues) {
  Graph g = parse_graph(
      "graph m(%x: f32[3, 4], %w: f32[4, 4] grad, %u: f32[4] grad) {\n"
      "  %h = matmul(%x, %w)\n  %r = relu(%h)\n  return (%r, %h)\n}");
  JointGraph j = build_joint_graph(g);
  const Graph& jg = j.graph;
  ASSERT_EQ(jg.num_inputs(), 5);
  EXPECT_EQ(jg.node(3).name, "tangent_r");
  EXPECT_EQ(jg.node(4).name, "tangent_h");
  EXPECT_EQ(jg.node(4).type.shape, (Shape{3, 4}));
  EXPECT_EQ(j.num_forward_outputs, 2);
  EXPECT_EQ(j.grad_inputs, (std::vector<int>{1, 2}));
  ASSERT_EQ(jg.outputs.size(), 4u);
  EXPECT_EQ(jg.node(jg.outputs[2]).name, "grad_w");
  EXPECT_EQ(jg.node(jg.outputs[2]).type.shape, (Shape{4, 4}));
  // %u is used by nothing: its gradient is zeros.
  EXPECT_EQ(jg.node(jg.outputs[3]).op, Op::full);
  EXPECT_EQ(jg.node(jg.outputs[3]).name, "grad_u");
  auto inputs = generate_inputs(g, 3);
  auto ref = interpret(g, inputs);
  auto out = run_joint(j, inputs, false);
  for (size_t k = 0; k < ref.size(); ++k) EXPECT_EQ(ref[k].to_doubles(), out[k].to_doubles());
  for (double v : out[3].to_doubles()) EXPECT_EQ(v, 0.0);
}

TEST(Autodiff, OutputReturnedTwiceAccumulatesBothTangents) {
  Graph g = parse_graph("graph t(%x: f64[3] grad) {\n  %y = mul(%x, 3.0)\n  return (%y, %y)\n}");
  JointGraph j = build_joint_graph(g);
  EXPECT_EQ(j.graph.node(1).name, "tangent_y");
  EXPECT_EQ(j.graph.node(2).name.rfind("tangent_y", 0), 0u);
  EXPECT_NE(j.graph.node(2).name, "tangent_y");
  auto out = run_joint(j, generate_inputs(g, 1), true);
  for (double v : out[2].to_doubles()) EXPECT_DOUBLE_EQ(v, 6.0);
}

TEST(Autodiff, NonDifferentiableOpsStopTheGradient) {
  // The mask (gt, to) and argmax carry no gradient; only the direct use of %x does.
  Graph g = parse_graph(
      "graph t(%x: f64[3, 4] grad) {\n  %c = gt(%x, 0.0)\n  %m = to(%c, dtype=f64)\n  %y = mul(%x, %m)\n"
      "  %i = argmax(%x, dim=1, keepdim=true)\n  %f = to(%i, dtype=f64)\n  %z = add(%y, %f)\n  return (%z, %i)\n}");
  auto inputs = generate_inputs(g, 5);
  auto out = run_joint(build_joint_graph(g), inputs, true);
  auto x = inputs[0].to_doubles(), dx = out[2].to_doubles();
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(dx[i], x[i] > 0 ? 1.0 : 0.0);
}

TEST(Autodiff, GradientsHaveTheirInputsDtype) {
  Graph g = parse_graph(
      "graph t(%x: f16[4, 8] grad, %w: bf16[8] grad) {\n  %xf = to(%x, dtype=f32)\n  %wf = to(%w, dtype=f32)\n"
      "  %y = mul(%xf, %wf)\n  %s = softmax(%x, dim=1)\n  %l = layer_norm(%s, normalized_shape=[8])\n  return (%y, %l)\n}");
  JointGraph j = build_joint_graph(g);
  EXPECT_EQ(j.graph.node(j.graph.outputs[2]).type.dtype, DType::f16);
  EXPECT_EQ(j.graph.node(j.graph.outputs[3]).type.dtype, DType::bf16);
  // The f16 softmax/layer_norm backward computes in f32: it stays close to the f64 result.
  auto inputs = generate_inputs(g, 2);
  auto lo = run_joint(j, inputs, false), hi = run_joint(j, inputs, true);
  EXPECT_LT(max_rel_diff({hi[2], hi[3]}, {lo[2], lo[3]}), 2e-2);
}

TEST(Autodiff, MissingBackwardRuleNamesTheNode) {
  Graph g = parse_graph("graph t(%x: f32[3] grad) {\n  %y = exp(%x)\n  %z = neg(%y)\n  return (%z)\n}");
  AutodiffOptions o;
  o.without_rules = {Op::exp};
  try {
    build_joint_graph(g, o);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("%y = exp(%x)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no backward rule"), std::string::npos) << e.what();
  }
  // Off the gradient path a missing rule does not matter.
  Graph h = parse_graph("graph t(%x: f32[3] grad, %c: f32[3]) {\n  %y = exp(%c)\n  %z = mul(%y, %x)\n  return (%z)\n}");
  EXPECT_NO_THROW(build_joint_graph(h, o));
}

TEST(Autodiff, IntegerGradInputIsAUserError) {
  Graph g = parse_graph("graph t(%x: f32[3] grad, %i: i64[3]) {\n  %y = neg(%x)\n  return (%y)\n}");
  g.node(1).type.requires_grad = true;  // the parser may refuse `grad` on ints; the API must too
  try {
    build_joint_graph(g);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) { EXPECT_NE(std::string(e.what()).find("%i"), std::string::npos) << e.what(); }
}

TEST(Autodiff, ExampleModelsDecomposedOrNotGiveTheSameGradients) {
  for (auto name : {"mlp", "attention", "embedding_classifier", "mixed_precision"}) {
    SCOPED_TRACE(name);
    Graph g = load_module_file(std::string(REPROKIT_SOURCE_DIR) + "/examples/" + name + ".rk").entry();
    auto inputs = generate_inputs(g, 21);
    JointGraph j = build_joint_graph(g), jd = build_joint_graph(decompose(g));
    EXPECT_FALSE(j.grad_inputs.empty());
    auto a = run_joint(j, inputs, true), b = run_joint(jd, inputs, true);
    EXPECT_LT(max_rel_diff(a, b), 1e-9);
    // Forward outputs are the model's own.
    auto ref = interpret(g, inputs);
    std::vector<Tensor> fwd(b.begin(), b.begin() + j.num_forward_outputs);
    InterpretOptions o;
    o.cast_to_f64 = true;
    EXPECT_LT(max_rel_diff(interpret(g, inputs, o), fwd), 1e-9);
  }
}

TEST(Autodiff, MlpGradientsMatchFiniteDifferences) {
  // A smaller f64 copy of the example keeps the finite-difference loop short.
  Graph small =
      parse_graph(as_f64("graph mlp(%x: f32[2, 3], %w1: f32[4, 3] grad, %b1: f32[4] grad, %w2: f32[2, 4] grad) {\n"
                         "  %h = linear(%x, %w1, %b1)\n  %a = gelu(%h, approximate=\"tanh\")\n  %o = linear(%a, %w2)\n"
                         "  %s = softmax(%o, dim=-1)\n  %t = mul(%s, 2.0)\n  return (%t, %h)\n}"));
  expect_gradients_match_fd(small, decompose(small), 1e-6);
}

TEST(Autodiff, CudaGraphsKeepEveryBackwardValueOnTheDevice) {
  // `full` only makes cpu tensors: zeros and iotas of a @cuda graph must come from device values.
  const char* src =
      "graph t(%x: f32[3, 7] @cuda grad, %e: f32[6, 3] @cuda grad, %i: i64[2, 4] @cuda, %j: i64[3, 2] @cuda,\n"
      "        %u: f32[2] @cuda grad) {\n"
      "  %s = slice(%x, dim=1, start=1, end=7, step=3)\n  %y = embedding(%e, %i)\n  %q = gather(%x, %j, dim=1)\n"
      "  %a = mul(%s, %s)\n  %b = mul(%y, %y)\n  %c = mul(%q, %q)\n  return (%a, %b, %c)\n}";
  Graph g = parse_graph(src);
  JointGraph j = build_joint_graph(g);
  for (auto& n : j.graph.nodes) EXPECT_EQ(n.type.device, Device::cuda) << "%" << n.name << " = " << n.op;
  EXPECT_EQ(j.graph.node(j.graph.outputs.back()).name, "grad_u");
  // Same gradients as the cpu graph (the reference interpreter ignores the device).
  std::string cpu = src;
  for (size_t p = cpu.find(" @cuda"); p != std::string::npos; p = cpu.find(" @cuda")) cpu.erase(p, 6);
  Graph h = parse_graph(cpu);
  auto inputs = generate_inputs(h, 4);
  EXPECT_EQ(max_rel_diff(run_joint(j, inputs, true), run_joint(build_joint_graph(h), inputs, true)), 0.0);
  for (double v : run_joint(j, inputs, true).back().to_doubles()) EXPECT_EQ(v, 0.0);
}
