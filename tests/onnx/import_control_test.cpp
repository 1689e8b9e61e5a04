// Loop unrolled and If resolved at import: carried values and scan outputs against hand-computed
// values, what is refused (a condition computed at run time, an op the importer lacks inside a
// body), and that nothing of the body's names leaks into the model's.
#include <gtest/gtest.h>

#include "onnx_test_util.h"
#include "reprokit/support/errors.h"

namespace reprokit::testing {
namespace {

onnx::ValueInfoProto* typed(onnx::ValueInfoProto* vi, const std::string& name, int elem, std::vector<int64_t> dims) {
  ModelBuilder::set_type(vi, name, elem, &dims);
  return vi;
}

// A new graph attribute `name` of n (a Loop's or Scan's body, an If's branch).
onnx::GraphProto& graph_attribute(onnx::NodeProto& n, const std::string& name) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name(name);
  return *a->mutable_g();
}

onnx::NodeProto& add_node(onnx::GraphProto& g, const std::string& op, const std::vector<std::string>& ins, const std::string& out) {
  auto* n = g.add_node();
  n->set_op_type(op);
  for (const auto& in : ins) n->add_input(in);
  n->add_output(out);
  return *n;
}

// Loop(M=3, cond=true, acc=x): body(i, c, acc) -> (c, acc + x * i, acc * 2); outputs the final
// acc and the scan of acc * 2 over the iterations. `body_cond` replaces the body's cond output.
ModelBuilder loop_model(const std::string& body_cond = "") {
  ModelBuilder b(13);
  b.input("x", F32, {2}).output("acc_out", F32, std::vector<int64_t>{2}).output("scan", F32, std::vector<int64_t>{3, 2});
  b.init("M", i64({}, {3})).init("cond", Tensor::from_int64s(DType::boolean, {}, {1}));
  onnx::GraphProto& g = graph_attribute(b.node("Loop", {"M", "cond", "x"}, {"acc_out", "scan"}, "the_loop"), "body");
  typed(g.add_input(), "i", I64, {});
  typed(g.add_input(), "c", BOOL, {});
  typed(g.add_input(), "acc", F32, {2});
  attr(add_node(g, "Cast", {"i"}, "fi"), "to", F32);
  add_node(g, "Mul", {"x", "fi"}, "xi");  // x from the enclosing graph
  add_node(g, "Add", {"acc", "xi"}, "next");
  add_node(g, "Add", {"acc", "acc"}, "twice");
  std::string cond_out = "c";
  if (!body_cond.empty()) {
    add_node(g, "ReduceSum", {"next"}, "s");
    add_node(g, "Greater", {"s", "zero"}, body_cond);
    b.init("zero", f32({}, {0}));
    cond_out = body_cond;
  }
  typed(g.add_output(), cond_out, BOOL, {});
  typed(g.add_output(), "next", F32, {2});
  typed(g.add_output(), "twice", F32, {2});
  return b;
}

TEST(OnnxImportControl, LoopIsUnrolledWithCarriedValuesAndScanOutputs) {
  ImportedModel m = loop_model().import();
  auto out = run(m, {f32({2}, {1, 10})});
  // acc: x, then x + 0x, x + 1x, x + 2x = 4x; scan: 2 * acc before each step: 2x, 2x, 4x.
  expect_values(out[0], {2}, {4, 40});
  expect_values(out[1], {3, 2}, {2, 20, 2, 20, 4, 40});
  // The body's names stay inside: each iteration's nodes carry the loop's name and the iteration.
  int mul_nodes = 0;
  for (const auto& n : m.graph.nodes)
    if (n.op == Op::mul) {
      ++mul_nodes;
      EXPECT_NE(n.name.find("iter"), std::string::npos) << n.name;
    }
  EXPECT_EQ(mul_nodes, 3);
}

TEST(OnnxImportControl, ConditionsComputedAtRunTimeAreRefusedNamingTheNode) {
  std::string e = import_error(loop_model("keep_going"));
  EXPECT_HAS(e, "node 0 'the_loop' (Loop)");
  EXPECT_HAS(e, "the body's condition output is computed at run time");
  // If on a model input: refused without its value, its branch when the value is given.
  ModelBuilder b(13);
  b.input("x", F32, {2}).input("flag", BOOL, {}).output("y", F32, std::vector<int64_t>{2});
  auto& n = b.node("If", {"flag"}, {"y"}, "choose");
  for (const std::string branch : {"then_branch", "else_branch"}) {
    onnx::GraphProto& g = graph_attribute(n, branch);
    add_node(g, branch == "then_branch" ? "Neg" : "Abs", {"x"}, branch + "_out");
    typed(g.add_output(), branch + "_out", F32, {2});
  }
  e = import_error(b);
  EXPECT_HAS(e, "node 0 'choose' (If)");
  EXPECT_HAS(e, "its value is needed at import time");
  for (int64_t flag : {1, 0}) {
    ImportOptions o;
    o.known_inputs.emplace("flag", Tensor::from_int64s(DType::boolean, {}, {flag}));
    expect_values(run(b.import(o), {f32({2}, {-3, 4})})[0], {2}, flag ? std::vector<double>{3, -4} : std::vector<double>{3, 4});
  }
}

// Scan(s0, x) with body(s, x_t) -> (s + x_t, (s + x_t) * 2): a running sum of x's rows, read
// from the end (scan_input_directions 1), its scan output stacked along dim 1 in reverse.
TEST(OnnxImportControl, ScanIsUnrolledInItsDirectionsAndAxes) {
  ModelBuilder b(11);
  b.input("x", F32, {3, 2}).output("s_out", F32, std::vector<int64_t>{2}).output("ys", F32, std::vector<int64_t>{2, 3});
  b.init("s0", f32({2}, {0, 100}));
  auto& scan = b.node("Scan", {"s0", "x"}, {"s_out", "ys"}, "the_scan");
  attr(scan, "num_scan_inputs", 1);
  attr_ints(scan, "scan_input_directions", {1});
  attr_ints(scan, "scan_output_axes", {1});
  attr_ints(scan, "scan_output_directions", {1});
  onnx::GraphProto& g = graph_attribute(scan, "body");
  typed(g.add_input(), "s", F32, {2});
  typed(g.add_input(), "row", F32, {2});
  add_node(g, "Add", {"s", "row"}, "next");
  add_node(g, "Add", {"next", "next"}, "twice");
  typed(g.add_output(), "next", F32, {2});
  typed(g.add_output(), "twice", F32, {2});
  auto out = run(b.import(), {f32({3, 2}, {1, 2, 3, 4, 5, 6})});
  // Rows from the end: s = (5, 106), (8, 110), (9, 112); twice: (10, 212), (16, 220), (18, 224),
  // stacked along dim 1 last first.
  expect_values(out[0], {2}, {9, 112});
  expect_values(out[1], {2, 3}, {18, 16, 10, 224, 220, 212});
}

TEST(OnnxImportControl, AnOpTheImporterLacksInsideABodyIsNamedUpFront) {
  ModelBuilder b = loop_model();
  auto* body = b.m.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_g();
  body->mutable_node(1)->set_op_type("Det");
  EXPECT_HAS(import_error(b), "node 0 'the_loop' (Loop): not supported: op Det");
}

}  // namespace
}  // namespace reprokit::testing
