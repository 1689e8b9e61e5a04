// Each ONNX op the importer maps, on a tiny model built with the protobuf API, against values
// computed by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "onnx_test_util.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/text_format.h"

namespace reprokit::testing {
namespace {

// One node `op` over inputs x (and y), output z.
ImportedModel one_node(const std::string& op, std::vector<std::pair<std::string, Tensor>> inputs, int out_elem, int opset = 17,
                       std::function<void(onnx::NodeProto&)> attrs = {}, std::optional<Shape> out_dims = std::nullopt) {
  ModelBuilder b(opset);
  std::vector<std::string> names;
  for (auto& [name, t] : inputs) {
    b.input(name, onnx_elem_type(t.dtype()), t.shape());
    names.push_back(name);
  }
  b.output("z", out_elem, out_dims);
  auto& n = b.node(op, names, {"z"}, "the_node");
  if (attrs) attrs(n);
  ImportOptions o;  // integer inputs may stand for axes, shapes, bounds: known at import time
  for (auto& [name, t] : inputs)
    if (t.dtype() == DType::i64) o.known_inputs[name] = t;
  return b.import(o);
}

// The graph's inputs by the ONNX value each stands for (inputs used only at import time are gone).
std::vector<Tensor> run_named(const ImportedModel& m, const std::vector<std::pair<std::string, Tensor>>& named) {
  std::vector<Tensor> in;
  for (int i = 0; i < m.graph.num_inputs(); ++i) {
    auto v = m.values.find(m.graph.node(i).name);
    if (v != m.values.end()) {
      in.push_back(v->second);
      continue;
    }
    for (auto& [name, t] : named)
      if (name == m.input_sources[static_cast<size_t>(i)]) in.push_back(t);
  }
  return interpret(m.graph, in);
}

int count_op(const Graph& g, Op op) {
  int k = 0;
  for (const Node& n : g.nodes) k += n.op == op;
  return k;
}

Tensor run1(const std::string& op, std::vector<std::pair<std::string, Tensor>> in, int out_elem = F32, int opset = 17,
            std::function<void(onnx::NodeProto&)> attrs = {}, std::optional<Shape> out_dims = std::nullopt) {
  return run_named(one_node(op, in, out_elem, opset, attrs, out_dims), in)[0];
}

TEST(OnnxImportOps, Unary) {
  Tensor x = f32({4}, {-2, -0.5, 0.5, 2});
  struct Case {
    const char* op;
    double (*f)(double);
  };
  std::vector<Case> cases = {
      {"Neg", [](double v) { return -v; }},           {"Abs", [](double v) { return std::fabs(v); }},
      {"Exp", [](double v) { return std::exp(v); }},  {"Sin", [](double v) { return std::sin(v); }},
      {"Cos", [](double v) { return std::cos(v); }},  {"Tanh", [](double v) { return std::tanh(v); }},
      {"Erf", [](double v) { return std::erf(v); }},  {"Relu", [](double v) { return v > 0 ? v : 0.0; }},
      {"Reciprocal", [](double v) { return 1 / v; }}, {"Sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"Tan", [](double v) { return std::tan(v); }},  {"Softsign", [](double v) { return v / (1 + std::fabs(v)); }},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.op);
    std::vector<double> want;
    for (double v : x.to_doubles()) want.push_back(c.f(v));
    expect_values(run1(c.op, {{"x", x}}), {4}, want, 1e-6);
  }
  Tensor p = f32({3}, {0.25, 1, 4});
  expect_values(run1("Sqrt", {{"x", p}}), {3}, {0.5, 1, 2});
  expect_values(run1("Log", {{"x", p}}), {3}, {std::log(0.25), 0, std::log(4)});
}

TEST(OnnxImportOps, BinaryBroadcastingAndComparisons) {
  Tensor a = f32({2, 2}, {1, 2, 3, 4}), b = f32({2}, {10, 20});
  expect_values(run1("Add", {{"a", a}, {"b", b}}), {2, 2}, {11, 22, 13, 24});
  expect_values(run1("Sub", {{"a", a}, {"b", b}}), {2, 2}, {-9, -18, -7, -16});
  expect_values(run1("Mul", {{"a", a}, {"b", b}}), {2, 2}, {10, 40, 30, 80});
  expect_values(run1("Div", {{"a", a}, {"b", b}}), {2, 2}, {0.1, 0.1, 0.3, 0.2});
  expect_values(run1("Pow", {{"a", a}, {"b", f32({1}, {2})}}), {2, 2}, {1, 4, 9, 16});
  expect_values(run1("Equal", {{"a", a}, {"b", f32({2}, {1, 3})}}, BOOL), {2, 2}, {1, 0, 0, 0});
  expect_values(run1("Less", {{"a", a}, {"b", f32({2}, {2, 2})}}, BOOL), {2, 2}, {1, 0, 0, 0});
  expect_values(run1("LessOrEqual", {{"a", a}, {"b", f32({2}, {2, 2})}}, BOOL), {2, 2}, {1, 1, 0, 0});
  expect_values(run1("Greater", {{"a", a}, {"b", f32({2}, {2, 2})}}, BOOL), {2, 2}, {0, 0, 1, 1});
  expect_values(run1("GreaterOrEqual", {{"a", a}, {"b", f32({2}, {2, 2})}}, BOOL), {2, 2}, {0, 1, 1, 1});
  // Integer division truncates toward zero, as ONNX's.
  Tensor ia = i64({4}, {7, -7, 7, -7}), ib = i64({4}, {2, 2, -2, -2});
  Tensor q = run1("Div", {{"a", ia}, {"b", ib}}, I64);
  EXPECT_EQ(q.dtype(), DType::i64);
  EXPECT_EQ(q.to_int64s(), (std::vector<int64_t>{3, -3, -3, 3}));
  // Pow keeps the base's type.
  Tensor pw = run1("Pow", {{"a", i64({2}, {2, 3})}, {"b", f32({2}, {2, 2})}}, I64);
  EXPECT_EQ(pw.dtype(), DType::i64);
  EXPECT_EQ(pw.to_int64s(), (std::vector<int64_t>{4, 9}));
}

TEST(OnnxImportOps, LogicalAndVariadic) {
  Tensor t = Tensor::from_int64s(DType::boolean, {4}, {1, 1, 0, 0}), u = Tensor::from_int64s(DType::boolean, {4}, {1, 0, 1, 0});
  expect_values(run1("And", {{"a", t}, {"b", u}}, BOOL), {4}, {1, 0, 0, 0});
  expect_values(run1("Or", {{"a", t}, {"b", u}}, BOOL), {4}, {1, 1, 1, 0});
  expect_values(run1("Xor", {{"a", t}, {"b", u}}, BOOL), {4}, {0, 1, 1, 0});
  expect_values(run1("Not", {{"a", t}}, BOOL), {4}, {0, 0, 1, 1});
  Tensor a = f32({3}, {1, 5, 3}), b = f32({3}, {4, 2, 6}), c = f32({1}, {3});
  expect_values(run1("Max", {{"a", a}, {"b", b}, {"c", c}}), {3}, {4, 5, 6});
  expect_values(run1("Min", {{"a", a}, {"b", b}, {"c", c}}), {3}, {1, 2, 3});
  expect_values(run1("Sum", {{"a", a}, {"b", b}, {"c", c}}), {3}, {8, 10, 12});
  expect_values(run1("Mean", {{"a", a}, {"b", b}}), {3}, {2.5, 3.5, 4.5});
  expect_values(run1("Max", {{"a", a}}), {3}, {1, 5, 3});
}

TEST(OnnxImportOps, WhereCastIdentity) {
  Tensor c = Tensor::from_int64s(DType::boolean, {3}, {1, 0, 1});
  expect_values(run1("Where", {{"c", c}, {"a", f32({3}, {1, 2, 3})}, {"b", f32({1}, {-1})}}), {3}, {1, -1, 3});
  Tensor r = run1("Cast", {{"x", f32({3}, {1.7, -1.7, 0})}}, I32, 17, [](auto& n) { attr(n, "to", I32); });
  EXPECT_EQ(r.dtype(), DType::i32);
  EXPECT_EQ(r.to_int64s(), (std::vector<int64_t>{1, -1, 0}));
  Tensor h = run1("Cast", {{"x", f32({1}, {0.1})}}, F16, 17, [](auto& n) { attr(n, "to", F16); });
  EXPECT_EQ(h.dtype(), DType::f16);
  EXPECT_EQ(h.get(0), round_to_dtype(0.1, DType::f16));
  Tensor l = run1("CastLike", {{"x", f32({2}, {1, 0})}, {"y", Tensor::from_int64s(DType::boolean, {1}, {0})}}, BOOL);
  EXPECT_EQ(l.dtype(), DType::boolean);
  expect_values(run1("Identity", {{"x", f32({2}, {1, 2})}}), {2}, {1, 2});
}

TEST(OnnxImportOps, SoftmaxAxisRuleDependsOnOpset) {
  Tensor x = f32({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  // Opset 13: over dim 1 alone.
  Tensor s13 = run1("Softmax", {{"x", x}}, F32, 13, [](auto& n) { attr(n, "axis", 1); });
  double e = 1 / (1 + std::exp(2.0));
  expect_values(s13, {2, 2, 2}, {e, e, 1 - e, 1 - e, e, e, 1 - e, 1 - e});
  // Opset 11: over dims 1.. flattened (4 elements per row).
  Tensor s11 = run1("Softmax", {{"x", x}}, F32, 11, [](auto& n) { attr(n, "axis", 1); });
  double z = std::exp(0.0) + std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  expect_values(s11, {2, 2, 2},
                {1 / z, std::exp(1.0) / z, std::exp(2.0) / z, std::exp(3.0) / z, 1 / z, std::exp(1.0) / z, std::exp(2.0) / z, std::exp(3.0) / z});
  Tensor ls = run1("LogSoftmax", {{"x", f32({2}, {0, 0})}});
  expect_values(ls, {2}, {-std::log(2.0), -std::log(2.0)});
  // The default axis of opset < 13 is 1, of opset 13 it is -1.
  ImportedModel m11 = one_node("Softmax", {{"x", x}}, F32, 11);
  EXPECT_NE(print_graph(m11.graph).find("reshape"), std::string::npos);
}

TEST(OnnxImportOps, LayerNormalizationWithMeanAndInvStdDev) {
  ModelBuilder b(17);
  b.input("x", F32, {2, 2}).output("y", F32).output("mean", F32).output("inv", F32);
  b.init("w", f32({2}, {1, 2})).init("b", f32({2}, {0, 1}));
  auto& n = b.node("LayerNormalization", {"x", "w", "b"}, {"y", "mean", "inv"});
  attr_f(n, "epsilon", 0.0f);
  ImportedModel m = b.import();
  auto out = run(m, {f32({2, 2}, {1, 3, 2, 6})});
  expect_values(out[0], {2, 2}, {-1, 3, -1, 3});
  expect_values(out[1], {2, 1}, {2, 4});
  expect_values(out[2], {2, 1}, {1, 0.5});
}

TEST(OnnxImportOps, GemmAndMatMul) {
  Tensor a = f32({2, 2}, {1, 2, 3, 4}), w = f32({2, 2}, {1, 0, 0, 1});
  // transB=1, alpha=beta=1, 1-D C: a linear node.
  ModelBuilder b(17);
  b.input("a", F32, {2, 2}).output("y", F32);
  b.init("w", f32({2, 2}, {1, 2, 3, 4})).init("c", f32({2}, {10, 20}));
  attr(b.node("Gemm", {"a", "w", "c"}, {"y"}), "transB", 1);
  ImportedModel m = b.import();
  EXPECT_NE(print_graph(m.graph).find("linear"), std::string::npos);
  expect_values(run(m, {a})[0], {2, 2}, {15, 31, 21, 45});
  // alpha, beta, transA: matmul chain.
  Tensor g = run1("Gemm", {{"a", a}, {"b", w}, {"c", f32({1}, {1})}}, F32, 17, [](auto& n) {
    attr(n, "transA", 1);
    attr_f(n, "alpha", 2.0f);
    attr_f(n, "beta", 3.0f);
  });
  expect_values(g, {2, 2}, {5, 9, 7, 11});
  expect_values(run1("MatMul", {{"a", a}, {"b", f32({2}, {1, 1})}}), {2}, {3, 7});
  expect_values(run1("MatMul", {{"a", f32({2}, {1, 1})}, {"b", a}}), {2}, {4, 6});
  expect_values(run1("MatMul", {{"a", f32({2}, {1, 2})}, {"b", f32({2}, {3, 4})}}), {}, {11});
}

TEST(OnnxImportOps, Reductions) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_values(run1("ReduceSum", {{"x", x}}, F32, 11, [](auto& n) { attr_ints(n, "axes", {1}); }), {2, 1}, {6, 15});
  expect_values(run1(
                    "ReduceSum", {{"x", x}, {"axes", i64({1}, {0})}}, F32, 13, [](auto& n) { attr(n, "keepdims", 0); }, Shape{3}),
                {3}, {5, 7, 9});
  expect_values(run1("ReduceSum", {{"x", x}}, F32, 13, [](auto& n) { attr(n, "keepdims", 0); }), {}, {21});
  expect_values(run1("ReduceSum", {{"x", x}}, F32, 13, [](auto& n) { attr(n, "noop_with_empty_axes", 1); }), {2, 3}, {1, 2, 3, 4, 5, 6});
  expect_values(run1("ReduceMean", {{"x", x}}, F32, 17, [](auto& n) { attr_ints(n, "axes", {-1}); }), {2, 1}, {2, 5});
  expect_values(run1("ReduceMax", {{"x", x}}, F32, 17,
                     [](auto& n) {
                       attr_ints(n, "axes", {0});
                       attr(n, "keepdims", 0);
                     }),
                {3}, {4, 5, 6});
  expect_values(run1("ReduceMin", {{"x", x}}, F32, 17), {1, 1}, {1});
  expect_values(run1("ReduceL2", {{"x", f32({2}, {3, 4})}}, F32, 17, [](auto& n) { attr(n, "keepdims", 0); }), {}, {5});
  Tensor i = run1("ReduceSum", {{"x", Tensor::from_int64s(DType::i32, {2}, {2, 3})}}, I32, 11);
  EXPECT_EQ(i.dtype(), DType::i32);
  EXPECT_EQ(i.to_int64s(), std::vector<int64_t>{5});
}

TEST(OnnxImportOps, ArgMaxAndArgMin) {
  Tensor x = f32({2, 3}, {1, 3, 3, 5, 0, 5});
  Tensor a = run1("ArgMax", {{"x", x}}, I64, 13, [](auto& n) { attr(n, "axis", 1); });
  EXPECT_EQ(a.shape(), (Shape{2, 1}));
  EXPECT_EQ(a.to_int64s(), (std::vector<int64_t>{1, 0}));
  Tensor last = run1("ArgMax", {{"x", x}}, I64, 13, [](auto& n) {
    attr(n, "axis", 1);
    attr(n, "keepdims", 0);
    attr(n, "select_last_index", 1);
  });
  EXPECT_EQ(last.to_int64s(), (std::vector<int64_t>{2, 2}));
  Tensor mn = run1("ArgMin", {{"x", x}}, I64, 13, [](auto& n) {
    attr(n, "axis", 0);
    attr(n, "keepdims", 0);
  });
  EXPECT_EQ(mn.to_int64s(), (std::vector<int64_t>{0, 1, 0}));
}

TEST(OnnxImportOps, ReshapeExpandFlatten) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(run1("Reshape", {{"x", x}, {"s", i64({2}, {0, -1})}}, F32, 17, {}, Shape{2, 3}).shape(), (Shape{2, 3}));
  ModelBuilder b(17);
  b.input("x", F32, {2, 3}).output("y", F32);
  b.init("s", i64({3}, {0, 3, -1}));
  b.node("Reshape", {"x", "s"}, {"y"});
  ImportedModel r = b.import();
  EXPECT_EQ(r.graph.num_inputs(), 1);  // the target shape is used at import time only
  Tensor y = run(r, {x})[0];
  EXPECT_EQ(y.shape(), (Shape{2, 3, 1}));
  ModelBuilder e(17);
  e.input("x", F32, {3, 1}).output("y", F32);
  e.init("s", i64({3}, {2, 1, 6}));
  e.node("Expand", {"x", "s"}, {"y"});
  Tensor ey = run(e.import(), {f32({3, 1}, {1, 2, 3})})[0];
  EXPECT_EQ(ey.shape(), (Shape{2, 3, 6}));
  EXPECT_EQ(ey.get(6), 2);
  Tensor fl = run1("Flatten", {{"x", f32({2, 3, 2}, std::vector<double>(12, 1.0))}}, F32, 13, [](auto& n) { attr(n, "axis", -1); });
  EXPECT_EQ(fl.shape(), (Shape{6, 2}));
}

TEST(OnnxImportOps, SliceForms) {
  std::vector<double> v(20);
  for (int i = 0; i < 20; ++i) v[static_cast<size_t>(i)] = i;
  Tensor x = f32({4, 5}, v);
  // Opset 10+: inputs, negative and clamped bounds, steps.
  ModelBuilder b(13);
  b.input("x", F32, {4, 5}).output("y", F32);
  b.init("st", i64({2}, {1, -4})).init("en", i64({2}, {1000, 5})).init("ax", i64({2}, {0, 1})).init("sp", i64({2}, {2, 2}));
  b.node("Slice", {"x", "st", "en", "ax", "sp"}, {"y"});
  expect_values(run(b.import(), {x})[0], {2, 2}, {6, 8, 16, 18});
  // Opset 9: attributes.
  Tensor a9 = run1("Slice", {{"x", x}}, F32, 9, [](auto& n) {
    attr_ints(n, "starts", {0});
    attr_ints(n, "ends", {-1});
    attr_ints(n, "axes", {1});
  });
  EXPECT_EQ(a9.shape(), (Shape{4, 4}));
  // A negative step reverses.
  ModelBuilder r(13);
  r.input("x", F32, {4, 5}).output("y", F32);
  r.init("st", i64({1}, {-1})).init("en", i64({1}, {-1000})).init("ax", i64({1}, {1})).init("sp", i64({1}, {-2}));
  r.node("Slice", {"x", "st", "en", "ax", "sp"}, {"y"});
  expect_values(run(r.import(), {x})[0], {4, 3}, {4, 2, 0, 9, 7, 5, 14, 12, 10, 19, 17, 15});
}

TEST(OnnxImportOps, GatherForms) {
  Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  expect_values(run1("Gather", {{"x", x}, {"i", i64({2}, {2, -3})}}), {2, 2}, {5, 6, 1, 2});
  expect_values(run1("Gather", {{"x", x}, {"i", i64({2, 2}, {1, 0, 1, 1})}}, F32, 13, [](auto& n) { attr(n, "axis", 1); }), {3, 2, 2},
                {2, 1, 2, 2, 4, 3, 4, 4, 6, 5, 6, 6});
  // A 0-d index drops the axis.
  ModelBuilder b(13);
  b.input("x", F32, {3, 2}).output("y", F32);
  b.init("i", i64({}, {1}));
  attr(b.node("Gather", {"x", "i"}, {"y"}), "axis", 1);
  expect_values(run(b.import(), {x})[0], {3}, {2, 4, 6});
  expect_values(run1("GatherElements", {{"x", x}, {"i", i64({1, 2}, {2, 0})}}), {1, 2}, {5, 2});
}

TEST(OnnxImportOps, CumSumForms) {
  Tensor x = f32({4}, {1, 2, 3, 4});
  auto cumsum = [&](const Tensor& in, int64_t axis, int64_t exclusive, int64_t reverse, int out_elem = F32) {
    ModelBuilder b(14);
    b.input("x", out_elem, in.shape()).output("y", out_elem);
    b.init("axis", i64({}, {axis}));
    auto& n = b.node("CumSum", {"x", "axis"}, {"y"});
    attr(n, "exclusive", exclusive);
    attr(n, "reverse", reverse);
    return run(b.import(), {in})[0];
  };
  expect_values(cumsum(x, 0, 0, 0), {4}, {1, 3, 6, 10});
  expect_values(cumsum(x, 0, 1, 0), {4}, {0, 1, 3, 6});
  expect_values(cumsum(x, 0, 0, 1), {4}, {10, 9, 7, 4});
  expect_values(cumsum(x, -1, 1, 1), {4}, {9, 7, 4, 0});
  Tensor m = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_values(cumsum(m, 0, 0, 0), {2, 3}, {1, 2, 3, 5, 7, 9});
  expect_values(cumsum(m, 1, 1, 1), {2, 3}, {5, 3, 0, 11, 6, 0});
  // An integer input keeps its type (reprokit's cumsum is i64: cast back).
  Tensor xi = Tensor::from_int64s(DType::i32, {3}, {5, -2, 7});
  Tensor yi = cumsum(xi, 0, 0, 0, onnx::TensorProto::INT32);
  EXPECT_EQ(yi.dtype(), DType::i32);
  EXPECT_EQ(yi.to_int64s(), (std::vector<int64_t>{5, 3, 10}));
}

TEST(OnnxImportOps, CumSumRefusesBadAttributesNamingTheNode) {
  auto model = [](int64_t axis, int64_t exclusive) {
    ModelBuilder b(14);
    b.input("x", F32, {2, 3}).output("y", F32);
    b.init("axis", i64({}, {axis}));
    attr(b.node("CumSum", {"x", "axis"}, {"y"}, "the_scan"), "exclusive", exclusive);
    return b;
  };
  EXPECT_HAS(import_error(model(0, 2)), "'the_scan' (CumSum): exclusive = 2 and reverse = 0 must each be 0 or 1");
  EXPECT_HAS(import_error(model(2, 0)), "'the_scan' (CumSum): axis 2 is out of range for a tensor of rank 2");
}

TEST(OnnxImportOps, TopKValuesAndIndices) {
  Tensor x = f32({2, 4}, {3, 1, 4, 1, 5, 9, 2, 6});
  auto top_k = [&](int64_t k, std::function<void(onnx::NodeProto&)> attrs, bool both = true) {
    ModelBuilder b(11);
    b.input("x", F32, {2, 4}).output("v", F32);
    if (both) b.output("i", I64);
    b.init("k", i64({1}, {k}));
    auto& n = b.node("TopK", {"x", "k"}, both ? std::vector<std::string>{"v", "i"} : std::vector<std::string>{"v"});
    if (attrs) attrs(n);
    return run(b.import(), {x});
  };
  auto out = top_k(2, {});
  expect_values(out[0], {2, 2}, {4, 3, 9, 6});
  EXPECT_EQ(out[1].to_int64s(), (std::vector<int64_t>{2, 0, 1, 3}));
  // The smallest along axis 0.
  out = top_k(1, [](auto& n) {
    attr(n, "axis", 0);
    attr(n, "largest", 0);
  });
  expect_values(out[0], {1, 4}, {3, 1, 2, 1});
  EXPECT_EQ(out[1].to_int64s(), (std::vector<int64_t>{0, 0, 1, 0}));
  // Ties in a row: the lower index first, as ONNX specifies.
  out = top_k(3, [](auto& n) {
    attr(n, "axis", -1);
    attr(n, "largest", 0);
  });
  expect_values(out[0], {2, 3}, {1, 1, 3, 2, 5, 6});
  EXPECT_EQ(out[1].to_int64s(), (std::vector<int64_t>{1, 3, 0, 2, 0, 3}));
  // Only the values a graph output: the indices are not returned.
  ModelBuilder b(11);
  b.input("x", F32, {2, 4}).output("v", F32);
  b.init("k", i64({1}, {1}));
  b.node("TopK", {"x", "k"}, {"v", "unread"});
  ImportedModel m = b.import();
  ASSERT_EQ(m.graph.outputs.size(), 1u);
  EXPECT_EQ(m.graph.node(m.graph.outputs[0]).op, Op::topk);
  expect_values(run(m, {x})[0], {2, 1}, {4, 9});
}

TEST(OnnxImportOps, TopKRefusesABadKNamingTheNode) {
  auto model = [](std::vector<int64_t> k, int64_t axis) {
    ModelBuilder b(11);
    b.input("x", F32, {2, 4}).output("v", F32).output("i", I64);
    b.init("k", i64({static_cast<int64_t>(k.size())}, k));
    attr(b.node("TopK", {"x", "k"}, {"v", "i"}, "the_top"), "axis", axis);
    return b;
  };
  EXPECT_HAS(import_error(model({5}, 1)), "'the_top' (TopK): K = 5 is out of range for axis 1 of size 4");
  EXPECT_HAS(import_error(model({-1}, 1)), "'the_top' (TopK): K = -1 is out of range for axis 1 of size 4");
  EXPECT_HAS(import_error(model({1, 2}, 1)), "'the_top' (TopK): K has 2 elements, not 1");
  EXPECT_HAS(import_error(model({1}, 3)), "'the_top' (TopK): axis 3 is out of range for a tensor of rank 2");
}

TEST(OnnxImportOps, SqueezeUnsqueezeTransposeConcatSplit) {
  Tensor x = f32({1, 2, 1}, {1, 2});
  EXPECT_EQ(run1("Squeeze", {{"x", x}}, F32, 11, {}, Shape{2}).shape(), (Shape{2}));
  EXPECT_EQ(run1("Squeeze", {{"x", x}}, F32, 11, [](auto& n) { attr_ints(n, "axes", {-1}); }).shape(), (Shape{1, 2}));
  EXPECT_EQ(run1("Squeeze", {{"x", x}, {"a", i64({1}, {0})}}, F32, 13, {}, Shape{2, 1}).shape(), (Shape{2, 1}));
  EXPECT_EQ(run1("Unsqueeze", {{"x", x}}, F32, 11, [](auto& n) { attr_ints(n, "axes", {0, 4}); }).shape(), (Shape{1, 1, 2, 1, 1}));
  EXPECT_EQ(run1("Unsqueeze", {{"x", x}, {"a", i64({1}, {-1})}}, F32, 13, {}, Shape{1, 2, 1, 1}).shape(), (Shape{1, 2, 1, 1}));
  Tensor t = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_values(run1("Transpose", {{"x", t}}), {3, 2}, {1, 4, 2, 5, 3, 6});
  expect_values(run1("Transpose", {{"x", t}}, F32, 17, [](auto& n) { attr_ints(n, "perm", {0, 1}); }), {2, 3}, {1, 2, 3, 4, 5, 6});
  expect_values(run1("Concat", {{"a", t}, {"b", f32({2, 1}, {7, 8})}}, F32, 13, [](auto& n) { attr(n, "axis", -1); }), {2, 4},
                {1, 2, 3, 7, 4, 5, 6, 8});
  ModelBuilder b(13);
  b.input("x", F32, {2, 3}).output("p", F32).output("q", F32);
  b.init("s", i64({2}, {1, 2}));
  attr(b.node("Split", {"x", "s"}, {"p", "q"}), "axis", 1);
  auto out = run(b.import(), {t});
  expect_values(out[0], {2, 1}, {1, 4});
  expect_values(out[1], {2, 2}, {2, 3, 5, 6});
}

// x holds 0..7 as [1, 8, 1, 1] (DepthToSpace) or [1, 2, 2, 2] (SpaceToDepth). CRD splits the
// channels as [C, b, b] (pixel_shuffle), DCR as [b, b, C], SpaceToDepth stacks blocks as [b, b, C].
TEST(OnnxImportOps, DepthToSpaceAndSpaceToDepth) {
  Tensor d = f32({1, 8, 1, 1}, {0, 1, 2, 3, 4, 5, 6, 7});
  auto crd = one_node("DepthToSpace", {{"x", d}}, F32, 17, [](auto& n) { attr(n, "blocksize", 2), attr_s(n, "mode", "CRD"); });
  expect_values(run_named(crd, {{"x", d}})[0], {1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_EQ(count_op(crd.graph, Op::pixel_shuffle), 1);
  expect_values(run1("DepthToSpace", {{"x", d}}, F32, 17, [](auto& n) { attr(n, "blocksize", 2); }), {1, 2, 2, 2}, {0, 2, 4, 6, 1, 3, 5, 7});
  Tensor s = f32({1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  expect_values(run1("SpaceToDepth", {{"x", s}}, F32, 17, [](auto& n) { attr(n, "blocksize", 2); }), {1, 8, 1, 1}, {0, 4, 1, 5, 2, 6, 3, 7});
  auto error = [](const char* op, const Shape& shape, int64_t blocksize) {
    ModelBuilder b(17);
    b.input("x", F32, shape).output("z", F32);
    attr(b.node(op, {"x"}, {"z"}, "the_node"), "blocksize", blocksize);
    return import_error(b);
  };
  EXPECT_HAS(error("DepthToSpace", {1, 3, 1, 1}, 2), "3 channels do not divide by blocksize^2 = 4");
  EXPECT_HAS(error("SpaceToDepth", {1, 8, 1, 1}, 0), "blocksize 0 must be in [1, 2^20]");
  EXPECT_HAS(error("SpaceToDepth", {1, 2, 2, 2}, 3), "height 2 and width 2 do not divide by blocksize 3");
}

TEST(OnnxImportOps, Einsum) {
  Tensor a = f32({2, 2}, {1, 2, 3, 4}), b = f32({2, 3}, {1, 0, 2, 0, 1, 3});
  auto m = one_node("Einsum", {{"a", a}, {"b", b}}, F32, 17, [](auto& n) { attr_s(n, "equation", "ij, jk -> ik"); });
  expect_values(run_named(m, {{"a", a}, {"b", b}})[0], {2, 3}, {1, 2, 8, 3, 4, 18});
  EXPECT_EQ(count_op(m.graph, Op::einsum), 1);
  expect_values(run1("Einsum", {{"a", a}}, F32, 17, [](auto& n) { attr_s(n, "equation", "ij->i"); }), {2}, {3, 7});
  auto error = [](const std::string& eq, const Shape& shape) {
    ModelBuilder m(17);
    m.input("a", F32, shape).output("z", F32);
    attr_s(m.node("Einsum", {"a"}, {"z"}, "the_node"), "equation", eq);
    return import_error(m);
  };
  EXPECT_HAS(error("ii->i", {2, 2}), "'i' repeats in term 'ii' (diagonals are not supported)");
  EXPECT_HAS(error("ij,jk->ik", {2, 2}), "2 terms for 1 operands");
  EXPECT_HAS(error("ij->ij", {2, 2, 2}), "term 'ij' has 2 subscripts, operand 1 has rank 3");
}

// x holds 1..6 as [1, 1, 2, 3]; the expected values are PyTorch 2.13's F.grid_sample on them,
// which GridSample-16 defines alike (the same cases as tests/runtime/kernels_test.cpp).
TEST(OnnxImportOps, GridSample) {
  Tensor x = f32({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor g = f32({1, 1, 4, 2}, {0.5, 0.0, -0.5, 1.0, 1.5, -3.0, -0.2, 0.6});
  auto m = one_node("GridSample", {{"x", x}, {"g", g}}, F32, 16,
                    [](auto& n) { attr_s(n, "mode", "nearest"), attr_s(n, "padding_mode", "border"), attr(n, "align_corners", 1); });
  expect_values(run_named(m, {{"x", x}, {"g", g}})[0], {1, 1, 1, 4}, {3, 4, 3, 5});
  EXPECT_EQ(count_op(m.graph, Op::grid_sample), 1);
  Tensor g2 = f32({1, 1, 4, 2}, {-1, -1, 0.1, 0.3, 0.9, -0.7, 1.2, 0.0});
  expect_values(run1("GridSample", {{"x", x}, {"g", g2}}, F32, 16), {1, 1, 1, 4}, {0.25, 4.55, 1.56, 0.9});
  Tensor g3 = f32({1, 1, 3, 2}, {1.7, -2.3, -1.4, 0.2, 3.1, 0.9});
  expect_values(run1("GridSample", {{"x", x}, {"g", g3}}, F32, 16, [](auto& n) { attr_s(n, "padding_mode", "reflection"); }), {1, 1, 1, 3},
                {4.85, 3.2, 4.0});
  auto error = [&](const char* key, const char* value, const Shape& xs) {
    ModelBuilder b(16);
    b.input("x", F32, xs).input("g", F32, {1, 1, 3, 2}).output("z", F32);
    attr_s(b.node("GridSample", {"x", "g"}, {"z"}, "the_node"), key, value);
    return import_error(b);
  };
  EXPECT_HAS(error("mode", "bicubic", {1, 1, 2, 3}), "mode 'bicubic' (reprokit samples bilinear and nearest)");
  EXPECT_HAS(error("padding_mode", "wrap", {1, 1, 2, 3}), "padding_mode 'wrap'");
  EXPECT_HAS(error("mode", "nearest", {1, 2, 3}), "X must be 4-D [N, C, H, W], got [1, 2, 3]");
}

TEST(OnnxImportOps, ConstantsAndShapeArithmeticFold) {
  // Shape -> Gather -> Unsqueeze -> Concat -> Reshape: folded at import, the target a constant.
  ModelBuilder b(13);
  b.input("x", F32, {2, 3, 4}).output("y", F32, std::vector<int64_t>{2, 12});
  b.node("Shape", {"x"}, {"s"});
  attr_tensor(b.node("Constant", {}, {"zero"}), "value", i64({}, {0}));
  b.node("Gather", {"s", "zero"}, {"d0"});
  attr_ints(b.node("Constant", {}, {"axes"}), "value_ints", {0});
  b.node("Unsqueeze", {"d0", "axes"}, {"d0v"});
  attr_ints(b.node("Constant", {}, {"minus1"}), "value_ints", {-1});
  attr(b.node("Concat", {"d0v", "minus1"}, {"target"}), "axis", 0);
  b.node("Reshape", {"x", "target"}, {"y"});
  ImportedModel m = b.import();
  EXPECT_EQ(m.graph.num_ops(), 1) << print_graph(m.graph);
  EXPECT_EQ(m.graph.node(1).op, Op::reshape);
  EXPECT_EQ(run(m, {Tensor::zeros(DType::f32, {2, 3, 4})})[0].shape(), (Shape{2, 12}));
  // ConstantOfShape: a uniform constant (full) when it stays in the graph.
  ModelBuilder c(13);
  c.input("x", F32, {2, 3}).output("y", F32);
  c.node("Shape", {"x"}, {"s"});
  attr_tensor(c.node("ConstantOfShape", {"s"}, {"ones"}), "value", f32({1}, {1}));
  c.node("Add", {"x", "ones"}, {"y"});
  ImportedModel cm = c.import();
  EXPECT_NE(print_graph(cm.graph).find("full(shape=[2, 3], value=1.0"), std::string::npos) << print_graph(cm.graph);
  expect_values(run(cm, {f32({2, 3}, {0, 1, 2, 3, 4, 5})})[0], {2, 3}, {1, 2, 3, 4, 5, 6});
  // Constant forms.
  ModelBuilder k(13);
  k.input("x", F32, {2}).output("y", F32);
  attr_f(k.node("Constant", {}, {"c1"}), "value_float", 2.0f);
  k.node("Mul", {"x", "c1"}, {"y"});
  expect_values(run(k.import(), {f32({2}, {1, 2})})[0], {2}, {2, 4});
  // Size and Range fold too.
  ModelBuilder s(13);
  s.input("x", F32, {2, 3}).output("y", I64);
  s.node("Size", {"x"}, {"n"});
  s.init("zero", i64({}, {0})).init("one", i64({}, {1}));
  s.node("Range", {"zero", "n", "one"}, {"y"});
  ImportedModel sm = s.import();
  EXPECT_EQ(run(sm, {f32({2, 3}, {0, 0, 0, 0, 0, 0})})[0].to_int64s(), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
}

TEST(OnnxImportOps, InitializersBecomeInputsWithValues) {
  ModelBuilder b(13);
  b.input("x", F32, {2}).output("y", F32);
  b.init("w", f32({2}, {3, 4}));
  b.node("Mul", {"x", "w"}, {"y"});
  ImportedModel m = b.import();
  ASSERT_EQ(m.graph.num_inputs(), 2);
  EXPECT_EQ(m.graph.node(1).name, "w");
  ASSERT_TRUE(m.values.count("w"));
  EXPECT_EQ(m.input_sources, (std::vector<std::string>{"x", "w"}));
  expect_values(run(m, {f32({2}, {1, 2})})[0], {2}, {3, 8});
}

TEST(OnnxImportOps, ActivationsWrittenWithPointwiseOps) {
  Tensor x = f32({4}, {-2, -0.5, 0.5, 2});
  auto each = [&](const char* op, std::function<double(double)> f, std::function<void(onnx::NodeProto&)> at = {}) {
    SCOPED_TRACE(op);
    std::vector<double> want;
    for (double v : x.to_doubles()) want.push_back(f(v));
    expect_values(run1(op, {{"x", x}}, F32, 17, at), {4}, want, 1e-6);
  };
  each(
      "LeakyRelu", [](double v) { return v < 0 ? 0.1 * v : v; }, [](auto& n) { attr_f(n, "alpha", 0.1f); });
  each("Elu", [](double v) { return v < 0 ? std::exp(v) - 1 : v; });
  each("HardSigmoid", [](double v) { return std::clamp(0.2 * v + 0.5, 0.0, 1.0); });
  each("Softplus", [](double v) { return std::log(std::exp(v) + 1); });
  each("ThresholdedRelu", [](double v) { return v > 1 ? v : 0.0; });
  each("Sign", [](double v) { return v > 0 ? 1.0 : -1.0; });
  each("HardSwish", [](double v) { return v * std::clamp(v / 6 + 0.5, 0.0, 1.0); });
  expect_values(run1("Clip", {{"x", x}, {"lo", f32({}, {-1})}, {"hi", f32({}, {1})}}), {4}, {-1, -0.5, 0.5, 1});
}

}  // namespace
}  // namespace reprokit::testing
