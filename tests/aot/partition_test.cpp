// Partitioner: running the forward graph then the backward graph gives exactly what the joint
// graph gives (every op's gradient graph and the example models, decomposed or not); the layout
// (saved values, then tangents); every saved value is read by the backward; constants are
// recomputed, not saved.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "grad_check.h"
#include "op_graphs.h"
#include "reprokit/aot/decompose.h"
#include "reprokit/aot/partition.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/graph_utils.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/runtime/input_gen.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

Graph example(const char* name) { return load_module_file(std::string(REPROKIT_SOURCE_DIR) + "/examples/" + name + ".rk").entry(); }

// Forward-then-backward equals the joint graph bit for bit (same ops on the same values). Only in
// the graphs' own dtypes: in float64 mode the saved values would be rounded to their declared
// dtype at the boundary, which the joint graph never does.
void expect_partition_matches_joint(const Graph& g) {
  JointGraph j = build_joint_graph(g);
  PartitionedGraphs p = partition_joint_graph(j);
  auto inputs = generate_inputs(g, 31);
  auto a = run_joint(j, inputs, false), b = run_partitioned(p, inputs, false);
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) EXPECT_EQ(a[k].to_doubles(), b[k].to_doubles()) << "output " << k;
}

// Every saved value has a user in the backward graph, and none is a constant.
void expect_minimal_saved(const PartitionedGraphs& p) {
  auto users = compute_users(p.backward);
  for (int i = 0; i < p.num_saved; ++i) {
    bool returned = std::find(p.backward.outputs.begin(), p.backward.outputs.end(), i) != p.backward.outputs.end();
    EXPECT_TRUE(returned || !users[static_cast<size_t>(i)].empty()) << "saved %" << p.backward.node(i).name << " is never read";
    int out = p.forward.outputs[static_cast<size_t>(p.num_forward_outputs + i)];
    auto anc = ancestors(p.forward, {out});
    bool reads_input = false;
    for (int k = 0; k < p.forward.num_inputs(); ++k) reads_input = reads_input || anc[static_cast<size_t>(k)];
    EXPECT_TRUE(reads_input) << "saved %" << p.backward.node(i).name << " is a constant";
  }
}

}  // namespace

TEST(Partition, ForwardThenBackwardEqualsJointForEveryOp) {
  for (auto& src : differentiable_op_graphs()) {
    SCOPED_TRACE(src);
    Graph g = parse_graph(src);
    expect_partition_matches_joint(g);
    expect_partition_matches_joint(decompose(g));
    expect_minimal_saved(partition_joint_graph(build_joint_graph(g)));
  }
}

TEST(Partition, ExampleModelsThroughDecomposeJointAndPartition) {
  for (auto name : {"mlp", "attention", "embedding_classifier", "mixed_precision"}) {
    SCOPED_TRACE(name);
    Graph g = example(name);
    expect_partition_matches_joint(g);
    Graph d = decompose(g);
    expect_partition_matches_joint(d);
    expect_minimal_saved(partition_joint_graph(build_joint_graph(d)));
  }
}

TEST(Partition, LayoutSavedValuesThenTangents) {
  Graph g = parse_graph("graph t(%x: f32[3, 4] grad, %w: f32[4] grad) {\n  %y = sin(%x)\n  %z = mul(%y, %w)\n  return (%z, %y)\n}");
  PartitionedGraphs p = partition_joint_graph(build_joint_graph(g));
  EXPECT_EQ(p.forward.name, "t_forward");
  EXPECT_EQ(p.backward.name, "t_backward");
  EXPECT_EQ(p.num_forward_outputs, 2);
  EXPECT_EQ(p.grad_inputs, (std::vector<int>{0, 1}));
  EXPECT_EQ(p.forward.num_inputs(), 2);
  ASSERT_EQ(static_cast<int>(p.forward.outputs.size()), 2 + p.num_saved);
  ASSERT_EQ(p.backward.num_inputs(), p.num_saved + 2);
  EXPECT_EQ(p.backward.node(p.num_saved).name, "tangent_z");
  EXPECT_EQ(p.backward.node(p.num_saved + 1).name, "tangent_y");
  ASSERT_EQ(p.backward.outputs.size(), 2u);
  EXPECT_EQ(p.backward.node(p.backward.outputs[0]).type.shape, (Shape{3, 4}));
  EXPECT_EQ(p.backward.node(p.backward.outputs[1]).type.shape, (Shape{4}));
  // The backward reads y (for dw), w (for dy) and x (for cos(x) of dx): nothing else crosses
  // over, and cos(x) runs in the backward, not in the forward.
  std::set<std::string> saved;
  for (int i = 0; i < p.num_saved; ++i) saved.insert(p.backward.node(i).name);
  EXPECT_EQ(saved, (std::set<std::string>{"x", "y", "w"}));
  for (auto& n : p.forward.nodes) EXPECT_NE(n.op, Op::cos);
  EXPECT_EQ(p.forward.num_ops(), 2);  // sin and mul
  for (int i = 0; i < p.num_saved; ++i) EXPECT_FALSE(p.backward.node(i).type.requires_grad);
}

TEST(Partition, EmbeddingIotaIsRecomputedNotSaved) {
  PartitionedGraphs p = partition_joint_graph(build_joint_graph(decompose(example("embedding_classifier"))));
  expect_minimal_saved(p);  // no saved value is a constant
  bool iota_in_backward = false;
  for (auto& n : p.backward.nodes) iota_in_backward = iota_in_backward || n.op == Op::full;
  EXPECT_TRUE(iota_in_backward);
}

TEST(Partition, RejectsAGraphWithoutTheJointLayout) {
  JointGraph j = build_joint_graph(parse_graph("graph t(%x: f32[3] grad) {\n  %y = neg(%x)\n  return (%y)\n}"));
  j.num_forward_outputs = 3;
  EXPECT_THROW(partition_joint_graph(j), InternalError);
}

TEST(Partition, ReturnedInputPassesItsTangentThrough) {
  // A grad input returned as is: its gradient is the tangent itself, passed straight through.
  Graph g = parse_graph("graph t(%x: f32[3] grad, %c: f32[3]) {\n  %y = mul(%x, %c)\n  return (%x, %y)\n}");
  PartitionedGraphs p = partition_joint_graph(build_joint_graph(g));
  expect_partition_matches_joint(g);
  auto out = run_partitioned(p, generate_inputs(g, 8), false);
  auto c = generate_inputs(g, 8)[1].to_doubles(), dx = out[2].to_doubles();
  for (size_t i = 0; i < c.size(); ++i) EXPECT_FLOAT_EQ(dx[i], 1.0f + static_cast<float>(c[i]));
  // Nothing to differentiate: a clear error rather than a backward graph that returns nothing.
  Graph h = parse_graph("graph t(%x: f32[3]) {\n  %y = exp(%x)\n  return (%y)\n}");
  try {
    build_joint_graph(h);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) { EXPECT_NE(std::string(e.what()).find("no input is marked grad"), std::string::npos) << e.what(); }
}
