// Ops the importer evaluates at import time only (Mod, ScatterND): their values on constants,
// hand-computed, and the refusal naming node and input when a value is known only at run time.
#include <gtest/gtest.h>

#include "onnx_test_util.h"
#include "reprokit/support/errors.h"

namespace reprokit::testing {
namespace {

// A model computing `op` on initializers, added to a real input so the graph has one; returns
// the value of the op (the output minus the input of zeros).
Tensor fold(const std::string& op, const std::vector<std::pair<std::string, Tensor>>& inits, int elem,
            std::function<void(onnx::NodeProto&)> attrs = {}) {
  ModelBuilder b(16);
  std::vector<std::string> names;
  for (const auto& [name, t] : inits) {
    b.init(name, t);
    names.push_back(name);
  }
  auto& n = b.node(op, names, {"y"});
  if (attrs) attrs(n);
  b.output("y", elem);
  ImportedModel m = b.import();
  for (const auto& node : m.graph.nodes)
    EXPECT_TRUE(node.is_input() || node.op == Op::full) << "not evaluated at import";  // a uniform result is a full
  return run(m, {}).at(0);
}

Tensor i32(Shape s, std::vector<int64_t> v) { return Tensor::from_int64s(DType::i32, s, v); }

TEST(OnnxImportFolded, ModTakesTheDivisorsSignOrWithFmodTheDividends) {
  const Tensor a = i32({4}, {7, -7, 7, -7}), b = i32({4}, {3, 3, -3, -3});
  EXPECT_EQ(fold("Mod", {{"a", a}, {"b", b}}, I32).to_int64s(), (std::vector<int64_t>{1, 2, -2, -1}));
  EXPECT_EQ(fold("Mod", {{"a", a}, {"b", b}}, I32, [](auto& n) { attr(n, "fmod", 1); }).to_int64s(), (std::vector<int64_t>{1, -1, 1, -1}));
  // Floats need fmod=1; broadcasting as in Add.
  Tensor f = fold("Mod", {{"a", f32({2, 2}, {5.5, -5.5, 2.0, -0.5})}, {"b", f32({2}, {2.0, -2.0})}}, F32, [](auto& n) { attr(n, "fmod", 1); });
  expect_values(f, {2, 2}, {1.5, -1.5, 0.0, -0.5});
  // The extremes: by -1 is 0 (INT64_MIN % -1 would trap), by zero is an invalid model.
  Tensor m = fold("Mod", {{"a", i64({1}, {std::numeric_limits<int64_t>::min()})}, {"b", i64({1}, {-1})}}, I64);
  EXPECT_EQ(m.to_int64s(), (std::vector<int64_t>{0}));
  try {
    fold("Mod", {{"a", a}, {"b", i32({1}, {0})}}, I32);
    FAIL() << "Mod by zero accepted";
  } catch (const UserError& e) {
    EXPECT_HAS(e.what(), "node 0 (Mod)");
    EXPECT_HAS(e.what(), "integer Mod by zero");
  }
}

TEST(OnnxImportFolded, ScatterNDReplacesAddsOrMultipliesTheAddressedSlices) {
  const Tensor data = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  const Tensor idx = i64({2, 1}, {2, -3});  // rows 2 and 0 (negative counts from the end)
  const Tensor upd = f32({2, 2}, {10, 20, 30, 40});
  expect_values(fold("ScatterND", {{"d", data}, {"i", idx}, {"u", upd}}, F32), {3, 2}, {30, 40, 3, 4, 10, 20});
  auto with = [](const char* r) { return [r](onnx::NodeProto& n) { attr_s(n, "reduction", r); }; };
  expect_values(fold("ScatterND", {{"d", data}, {"i", idx}, {"u", upd}}, F32, with("add")), {3, 2}, {31, 42, 3, 4, 15, 26});
  expect_values(fold("ScatterND", {{"d", data}, {"i", idx}, {"u", upd}}, F32, with("mul")), {3, 2}, {30, 80, 3, 4, 50, 120});
  // Full index tuples address single elements; the same element twice with add adds both.
  Tensor e =
      fold("ScatterND", {{"d", i32({2, 2}, {0, 0, 0, 0})}, {"i", i64({3, 2}, {1, 0, 1, 0, 0, 1})}, {"u", i32({3}, {5, 6, 7})}}, I32, with("add"));
  EXPECT_EQ(e.to_int64s(), (std::vector<int64_t>{0, 7, 11, 0}));
}

TEST(OnnxImportFolded, AValueKnownOnlyAtRunTimeIsRefusedNamingNodeAndInput) {
  ModelBuilder b(13);
  b.input("x", I64, {3}).output("y", I64);
  b.init("k", i64({1}, {4}));
  b.node("Relu", {"x"}, {"r"});
  b.node("Mod", {"r", "k"}, {"y"});
  try {
    b.import();
    FAIL() << "a run-time Mod was accepted";
  } catch (const UserError& e) {
    EXPECT_HAS(e.what(), "node 1 (Mod)");
    EXPECT_HAS(e.what(), "(input 1 'r') is computed at run time");
  }
  // A model input the user gives a value for is known at import: it becomes part of the graph.
  ModelBuilder g(13);
  g.input("x", I64, {3}).output("y", I64);
  g.init("k", i64({1}, {4}));
  g.node("Mod", {"x", "k"}, {"y"});
  ImportOptions o;
  o.known_inputs.emplace("x", i64({3}, {9, -9, 4}));
  EXPECT_EQ(run(g.import(o), {}).at(0).to_int64s(), (std::vector<int64_t>{1, 3, 0}));
}

}  // namespace
}  // namespace reprokit::testing
