// The strategies of a reduction in an ONNX model's own nodes: a node's ops go together, a bypass
// stands a node's input in for its output (never a value inside its decomposition), and smaller
// shapes are taken only where no node names a size.
#include <gtest/gtest.h>

#include <algorithm>

#include "../onnx/onnx_test_util.h"
#include "reprokit/minifier/original_node_strategies.h"

namespace reprokit::testing {
namespace {

// The plain shrink-shapes strategy, as a .rk model's reduction runs it.
Candidate resize_strategy_apply_for_test(const Candidate& c, int unit) {
  for (const Strategy& s : strategy_table_with({}))
    if (s.name == "shrink-shapes") return s.apply(c, {unit});
  throw std::runtime_error("no shrink-shapes");
}

struct Imported {
  std::string bytes;
  ImportedModel im;
  std::shared_ptr<const OriginalOnnxModel> model;
  explicit Imported(const ModelBuilder& b) : bytes(b.bytes()) {
    ImportOptions o;
    o.keep_original_nodes = true;
    im = import_onnx_bytes(bytes, "m.onnx", o);
    model = std::make_shared<const OriginalOnnxModel>(bytes, im.graph, im.origins, "m.onnx");
  }
};

const Strategy& find(const std::vector<Strategy>& table, const std::string& name) {
  auto it = std::find_if(table.begin(), table.end(), [&](const Strategy& s) { return s.name == name; });
  if (it == table.end()) throw std::runtime_error("no strategy " + name);
  return *it;
}

// x -> Relu -> HardSigmoid -> Abs
ModelBuilder relu_hardsigmoid_abs() {
  ModelBuilder b(17, "g");
  b.input("x", F32, {2, 4}).output("y", F32);
  b.node("Relu", {"x"}, {"r"});
  b.node("HardSigmoid", {"r"}, {"h"});
  b.node("Abs", {"h"}, {"y"});
  return b;
}

TEST(OriginalNodeStrategies, BypassStandsTheNodesInputInForItsOutput) {
  Imported m(relu_hardsigmoid_abs());
  const auto table = original_node_strategies(m.model);
  const Strategy& bypass = find(table, "bypass");
  Candidate c{m.im.graph, {}, {}, {}};
  const std::vector<int> units = bypass.units(c);
  // One unit per node whose input has its output's type: Relu, HardSigmoid, Abs (not their inner ops).
  ASSERT_EQ(units.size(), 3u);
  const int h = c.graph.find("h");
  ASSERT_NE(std::find(units.begin(), units.end(), h), units.end());
  Candidate r = bypass.apply(c, {h});
  EXPECT_EQ(m.model->op_types(r.graph), (std::vector<std::string>{"Relu", "Abs"}));
  EXPECT_EQ(r.graph.num_ops(), 2);
}

TEST(OriginalNodeStrategies, NodeStrategiesActOnlyOnTheModelsValues) {
  Imported m(relu_hardsigmoid_abs());
  const auto table = original_node_strategies(m.model);
  Candidate c{m.im.graph, {}, {}, {}};
  for (const char* name : {"cut", "cut-front"}) {
    SCOPED_TRACE(name);
    for (int u : find(table, name).units(c)) EXPECT_TRUE(m.model->holds_a_model_value(c.graph.node(u).name)) << c.graph.node(u).name;
  }
  for (const char* gone : {"drop-operands", "simplify-attributes"})
    EXPECT_TRUE(std::none_of(table.begin(), table.end(), [&](const Strategy& s) { return s.name == gone; })) << gone;
}

TEST(OriginalNodeStrategies, SmallerShapesOnlyWhereNoNodeNamesASize) {
  {  // pointwise: x [2, 4] -> [1, 4] is written with the new shape
    Imported m(relu_hardsigmoid_abs());
    Candidate c{m.im.graph, {}, {}, {}};
    Candidate r = find(original_node_strategies(m.model), "shrink-shapes").apply(c, {0});
    EXPECT_FALSE(m.model->why_not_writable(r.graph).has_value());
    EXPECT_LT(r.graph.node(0).type.numel(), 8);
  }
  {  // a Reshape's target names the sizes: a smaller x would need another target than the node's
    ModelBuilder b(17, "g");
    b.input("x", F32, {2, 4}).output("y", F32);
    b.init("target", i64({2}, {4, 2}));
    b.node("Relu", {"x"}, {"r"});
    b.node("Reshape", {"r", "target"}, {"s"});
    b.node("Abs", {"s"}, {"y"});
    Imported m(b);
    Candidate c{m.im.graph, {}, {}, {}};
    const auto table = original_node_strategies(m.model);
    const Strategy& shrink = find(table, "shrink-shapes");
    ASSERT_EQ(shrink.units(c).size(), 2u);  // the sizes 4 and 2
    for (int u : shrink.units(c)) {
      // reprokit's own reading could take it (its reshape's target changes with the size)...
      EXPECT_NO_THROW(resize_strategy_apply_for_test(c, u));
      // ...the model's Reshape could not.
      try {
        Candidate r = shrink.apply(c, {u});
        ADD_FAILURE() << "a candidate with a smaller x was made: " << r.graph.node(0).type.str();
      } catch (const UserError& e) { EXPECT_NE(std::string(e.what()).find("no longer has the attributes"), std::string::npos) << e.what(); }
    }
  }
}

// A Conv's kernel_shape names the weight's size, which reprokit's conv2d reads from the weight
// itself: smaller shapes are fine for reprokit's reading and not for the model's node.
TEST(OriginalNodeStrategies, SmallerShapesNeverReachANodeThatMayNameASize) {
  ModelBuilder b(17, "g");
  b.input("x", F32, {1, 2, 4, 4}).output("y", F32);
  b.init("w", f32({3, 2, 3, 3}, std::vector<double>(54, 0.5)));
  attr_ints(b.node("Conv", {"x", "w"}, {"c"}), "kernel_shape", {3, 3});
  b.node("Relu", {"c"}, {"y"});
  Imported m(b);
  Candidate c{m.im.graph, {}, {}, {}};
  const auto table = original_node_strategies(m.model);
  const Strategy& shrink = find(table, "halve-shapes");
  int refused = 0;
  for (int u : shrink.units(c)) {
    try {
      Candidate r = shrink.apply(c, {u});
      ADD_FAILURE() << "a candidate with smaller shapes was made: " << r.graph.node(0).type.str() << " " << r.graph.node(1).type.str();
    } catch (const UserError& e) {
      if (std::string(e.what()).find("whose attributes may name sizes") != std::string::npos) ++refused;
    }
  }
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace reprokit::testing
