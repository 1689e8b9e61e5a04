// `reprokit reduce` of an ONNX model writes each candidate as the model's own nodes: a check keyed
// to an op the importer decomposes (HardSigmoid into mul, add, minimum, maximum) still finds the
// original interesting and reduces it to that one node; a cut inside a node's decomposition is
// never written.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../harness/cli_util.h"
#include "onnx_test_util.h"
#include "reprokit/ir/graph_utils.h"
#include "reprokit/onnx/onnx_original_nodes.h"
#include "reprokit/support/files.h"

namespace reprokit::testing {
namespace {

namespace fs = std::filesystem;

struct DecomposedOp {
  std::string op;
  std::vector<int64_t> shape;  // of the model's input
  // Adds the op's node reading "r2" and writing "m" (and its initializers).
  std::function<void(ModelBuilder&)> add;
};

std::function<void(ModelBuilder&)> unary(const std::string& op) {
  return [op](ModelBuilder& b) { b.node(op, {"r2"}, {"m"}); };
}
std::function<void(ModelBuilder&)> reduce_last(const std::string& op) {
  return [op](ModelBuilder& b) { attr_ints(b.node(op, {"r2"}, {"m"}), "axes", {1}); };
}

// The ONNX ops reprokit's importer maps onto more than one op.
std::vector<DecomposedOp> decomposed_ops() {
  std::vector<DecomposedOp> ops;
  for (const char* op :
       {"HardSigmoid", "Softsign", "HardSwish", "Softplus", "Elu", "Selu", "Celu", "ThresholdedRelu", "LeakyRelu", "Sign", "Tan", "Round"})
    ops.push_back({op, {2, 4}, unary(op)});
  for (const char* op : {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) ops.push_back({op, {2, 4}, reduce_last(op)});
  ops.push_back({"Mean", {2, 4}, [](ModelBuilder& b) { b.node("Mean", {"r2", "r1"}, {"m"}); }});
  ops.push_back({"Sum", {2, 4}, [](ModelBuilder& b) { b.node("Sum", {"r2", "r1", "r2"}, {"m"}); }});
  ops.push_back({"Max", {2, 4}, [](ModelBuilder& b) { b.node("Max", {"r2", "r1", "r2"}, {"m"}); }});
  ops.push_back({"PRelu", {2, 4}, [](ModelBuilder& b) {
                   b.init("slope", f32({4}, {0.1, 0.2, 0.3, 0.4}));
                   b.node("PRelu", {"r2", "slope"}, {"m"});
                 }});
  ops.push_back({"DepthToSpace", {1, 4, 2, 2}, [](ModelBuilder& b) { attr(b.node("DepthToSpace", {"r2"}, {"m"}), "blocksize", 2); }});
  ops.push_back({"SpaceToDepth", {1, 1, 4, 4}, [](ModelBuilder& b) { attr(b.node("SpaceToDepth", {"r2"}, {"m"}), "blocksize", 2); }});
  ops.push_back({"Split", {2, 4}, [](ModelBuilder& b) {  // two outputs, both read
                   attr(b.node("Split", {"r2"}, {"s0", "s1"}), "axis", 1);
                   b.node("Mul", {"s0", "s1"}, {"m"});
                 }});
  return ops;
}

// x -> Relu -> Neg -> (the op) -> Abs -> Exp: the op between nodes the importer maps one to one.
std::string chain_with(const DecomposedOp& d) {
  ModelBuilder b(17, "chain");
  b.input("x", F32, d.shape).output("y", F32);
  b.node("Relu", {"x"}, {"r1"});
  b.node("Neg", {"r1"}, {"r2"});
  d.add(b);
  b.node("Abs", {"m"}, {"a"});
  b.node("Exp", {"a"}, {"y"});
  return b.bytes();
}

onnx::ModelProto read_model(const fs::path& p) {
  onnx::ModelProto m;
  std::string bytes = read_file(p.string(), size_t{1} << 30);
  EXPECT_TRUE(m.ParseFromString(bytes)) << p;
  return m;
}

TEST(ReduceOwnNodes, ACheckKeyedToADecomposedOpReducesToThatNode) {
  for (const auto& d : decomposed_ops()) {
    SCOPED_TRACE(d.op);
    fs::path dir = fresh_dir("reduce_own_" + d.op);
    { std::ofstream(dir / "m.onnx", std::ios::binary) << chain_with(d); }
    auto r = reprokit_cli({"reduce", "m.onnx", "--check", "sh -c '! grep -q " + d.op + " \"$1\"' sh {}", "-o", "out"}, dir);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.err.find("candidates hold only the model's own nodes"), std::string::npos) << r.err;
    const onnx::ModelProto m = read_model(dir / "out" / "repro.onnx");
    ASSERT_EQ(m.graph().node_size(), 1) << r.out;
    EXPECT_EQ(m.graph().node(0).op_type(), d.op);
    EXPECT_EQ(read_json(dir / "out" / "report.json")["model_nodes"], nlohmann::json::array({d.op}));
    // Every input the written model takes has its .npy beside it.
    for (const auto& in : m.graph().input()) EXPECT_TRUE(fs::exists(dir / "out" / "inputs" / (in.name() + ".npy"))) << in.name();
  }
}

// x -> Relu -> Identity -> Mul by a Constant node's value -> Abs.
std::string mul_by_constant() {
  ModelBuilder b(17, "g");
  b.input("x", F32, {2, 4}).output("y", F32);
  attr_tensor(b.node("Constant", {}, {"c"}), "value", f32({1}, {3.0}));
  b.node("Relu", {"x"}, {"r0"});
  b.node("Identity", {"r0"}, {"r"});
  b.node("Mul", {"r", "c"}, {"m"});
  b.node("Abs", {"m"}, {"y"});
  return b.bytes();
}

TEST(ReduceOwnNodes, ConstantsBecomeInitializersAndNoopsGoUnlessTheCheckNeedsThem) {
  fs::path dir = fresh_dir("reduce_own_constants");
  { std::ofstream(dir / "m.onnx", std::ios::binary) << mul_by_constant(); }
  auto mul = reprokit_cli({"reduce", "m.onnx", "--check", "sh -c '! grep -q Mul \"$1\"' sh {}", "-o", "mul"}, dir);
  ASSERT_EQ(mul.exit_code, 0) << mul.err;
  EXPECT_EQ(read_json(dir / "mul" / "report.json")["model_nodes"], nlohmann::json::array({"Mul"}));
  EXPECT_TRUE(read_json(dir / "mul" / "report.json")["constants_folded"].get<bool>());
  const onnx::ModelProto m = read_model(dir / "mul" / "repro.onnx");
  ASSERT_EQ(m.graph().initializer_size(), 1);
  EXPECT_EQ(m.graph().initializer(0).name(), "c");
  ASSERT_EQ(m.graph().node_size(), 1);
  EXPECT_EQ(m.graph().node(0).input(0), m.graph().input(0).name());  // the Identity's input, fed in
  // Relu -> Identity -> Mul, both kept by the check: the Identity goes in the plainer form...
  auto both = reprokit_cli({"reduce", "m.onnx", "--check", "sh -c '! (grep -q Relu \"$1\" && grep -q Mul \"$1\")' sh {}", "-o", "both"}, dir);
  ASSERT_EQ(both.exit_code, 0) << both.err;
  EXPECT_EQ(read_json(dir / "both" / "report.json")["model_nodes"], nlohmann::json::array({"Relu", "Mul"}));
  EXPECT_TRUE(read_json(dir / "both" / "report.json")["noops_dropped"].get<bool>());
  // ...and a check keyed to the Identity keeps it.
  auto identity = reprokit_cli({"reduce", "m.onnx", "--check", "sh -c '! grep -q Identity \"$1\"' sh {}", "-o", "identity"}, dir);
  ASSERT_EQ(identity.exit_code, 0) << identity.err;
  const auto kept = read_json(dir / "identity" / "report.json")["model_nodes"];
  EXPECT_NE(std::find(kept.begin(), kept.end(), "Identity"), kept.end()) << kept;
  // A check keyed to the Constant node keeps it.
  auto constant = reprokit_cli({"reduce", "m.onnx", "--check", "sh -c '! grep -q Constant \"$1\"' sh {}", "-o", "constant"}, dir);
  ASSERT_EQ(constant.exit_code, 0) << constant.err;
  const auto nodes = read_json(dir / "constant" / "report.json")["model_nodes"];
  EXPECT_NE(std::find(nodes.begin(), nodes.end(), "Constant"), nodes.end()) << nodes;
  EXPECT_FALSE(read_json(dir / "constant" / "report.json")["constants_folded"].get<bool>());
}

TEST(ReduceOwnNodes, TheOriginalIsWrittenAsItsOwnNodesAndACutInsideANodeIsNot) {
  const DecomposedOp d{"HardSigmoid", {2, 4}, unary("HardSigmoid")};
  const std::string bytes = chain_with(d);
  ImportOptions o;
  o.keep_original_nodes = true;
  ImportedModel im = import_onnx_bytes(bytes, "chain.onnx", o);
  OriginalOnnxModel model(bytes, im.graph, im.origins, "chain.onnx");
  const Graph& g = im.graph;
  EXPECT_EQ(model.op_types(g), (std::vector<std::string>{"Relu", "Neg", "HardSigmoid", "Abs", "Exp"}));
  EXPECT_GT(g.num_ops(), 5);  // HardSigmoid is several ops

  // A cut at the value HardSigmoid's mul hands to its add: no node of the model makes it.
  int inner = -1;
  for (int i = g.num_inputs(); i < g.size(); ++i)
    if (g.node(i).op == Op::mul) inner = i;
  ASSERT_GE(inner, 0);
  EXPECT_FALSE(model.holds_a_model_value(g.node(inner).name));
  Graph cut = extract_subgraph(g, g.outputs, {inner});
  auto why = model.why_not_writable(cut);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("inside node 2 (HardSigmoid)"), std::string::npos) << *why;

  // A cut at HardSigmoid's output is a value of the model: Abs and Exp read it as an input.
  const int m_id = g.find("m");
  ASSERT_GE(m_id, 0);
  Graph at_m = extract_subgraph(g, g.outputs, {m_id});
  EXPECT_EQ(model.op_types(at_m), (std::vector<std::string>{"Abs", "Exp"}));
  std::vector<Tensor> values;
  for (int i = 0; i < at_m.num_inputs(); ++i) values.push_back(Tensor::zeros(at_m.node(i).type.dtype, at_m.node(i).type.shape));
  auto w = model.write(at_m, values, {});
  onnx::ModelProto written;
  ASSERT_TRUE(written.ParseFromString(w.model));
  ASSERT_EQ(written.graph().input_size(), 1);
  EXPECT_EQ(written.graph().input(0).name(), "m");
  EXPECT_EQ(written.graph().node(0).op_type(), "Abs");
  EXPECT_EQ(written.graph().node(0).input(0), "m");
}

// A model input whose value an op needs when the model loads (a Reshape's target) is specialised
// into the graph; written as the model's nodes, it is an initializer holding the value given.
TEST(ReduceOwnNodes, AnInputSpecialisedIntoTheGraphIsWrittenAsAnInitializer) {
  ModelBuilder b(13);
  b.input("x", F32, {2, 4}).input("target", I64, {2}).output("y", F32, std::vector<int64_t>{4, 2});
  b.node("Reshape", {"x", "target"}, {"r"});
  b.node("Abs", {"r"}, {"y"});
  const std::string bytes = b.bytes();
  ImportOptions o;
  o.keep_original_nodes = true;
  o.known_inputs.emplace("target", i64({2}, {4, 2}));
  ImportedModel im = import_onnx_bytes(bytes, "m.onnx", o);
  OriginalOnnxModel model(bytes, im.graph, im.origins, "m.onnx");
  ASSERT_EQ(model.why_not_writable(im.graph), std::nullopt);
  std::vector<Tensor> values{Tensor::zeros(DType::f32, {2, 4})};
  onnx::ModelProto written;
  ASSERT_TRUE(written.ParseFromString(model.write(im.graph, values, {}).model));
  ASSERT_EQ(written.graph().input_size(), 1);
  EXPECT_EQ(written.graph().input(0).name(), "x");
  ASSERT_EQ(written.graph().initializer_size(), 1);
  EXPECT_EQ(written.graph().initializer(0).name(), "target");
  EXPECT_EQ(written.graph().node_size(), 2);
}

// An If's branches read x from the graph around them, by name: such a node is not written as
// itself (the reduction then hands the check reprokit's reading of the model).
TEST(ReduceOwnNodes, ANodeHoldingASubgraphIsNotWritten) {
  ModelBuilder b(13);
  b.input("x", F32, {2}).input("flag", BOOL, {}).output("y", F32, std::vector<int64_t>{2});
  auto& n = b.node("If", {"flag"}, {"y"}, "choose");
  for (const std::string branch : {"then_branch", "else_branch"}) {
    auto* a = n.add_attribute();
    a->set_name(branch);
    a->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto& g = *a->mutable_g();
    g.set_name(branch);
    auto* op = g.add_node();
    op->set_op_type(branch == "then_branch" ? "Neg" : "Abs");
    op->add_input("x");
    op->add_output(branch + "_out");
    ModelBuilder::set_type(g.add_output(), branch + "_out", F32, nullptr);
  }
  const std::string bytes = b.bytes();
  ImportOptions o;
  o.keep_original_nodes = true;
  o.known_inputs.emplace("flag", Tensor::from_int64s(DType::boolean, {}, {1}));
  ImportedModel im = import_onnx_bytes(bytes, "if.onnx", o);
  OriginalOnnxModel model(bytes, im.graph, im.origins, "if.onnx");
  auto why = model.why_not_writable(im.graph);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("node 0 'choose' (If) holds a subgraph"), std::string::npos) << *why;
}

}  // namespace
}  // namespace reprokit::testing
