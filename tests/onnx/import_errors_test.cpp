// What the importer refuses: unsupported ops, dtypes and attribute values (named by node and op
// type), dynamic shapes without --shape, and hostile files — always a UserError, never a crash.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "../scratch_dir.h"
#include "onnx_test_util.h"
#include "reprokit/support/errors.h"

namespace reprokit::testing {
namespace {

namespace fs = std::filesystem;

std::string bytes_error(const std::string& bytes) {
  try {
    import_onnx_bytes(bytes, "hostile.onnx");
  } catch (const UserError& e) { return e.what(); }
  return "(no error)";
}

TEST(OnnxImportErrors, UnsupportedOpNamesNodeAndOpType) {
  ModelBuilder b(13);
  b.input("x", F32, {1, 1, 4, 4}).output("y", F32);
  b.init("w", f32({1, 1, 1, 1}, {1}));
  b.node("Relu", {"x"}, {"r"}, "first");
  b.node("MaxUnpool", {"r", "w"}, {"c"}, "up1");
  b.node("Det", {"c"}, {"y"}, "det");
  std::string e = import_error(b);
  EXPECT_HAS(e, "test.onnx");
  EXPECT_HAS(e, "node 1 'up1' (MaxUnpool)");
  EXPECT_HAS(e, "not supported: op MaxUnpool");
  EXPECT_HAS(e, "also unsupported in this model: Det");
}

TEST(OnnxImportErrors, UnsupportedDtypes) {
  constexpr int U32 = onnx::TensorProto::UINT32, STRING = onnx::TensorProto::STRING;
  ModelBuilder b(13);
  b.input("x", U32, {2}).output("y", U32);
  b.node("Identity", {"x"}, {"y"});
  std::string e = import_error(b);
  EXPECT_HAS(e, "input 'x'");
  EXPECT_HAS(e, "UINT32");
  EXPECT_HAS(e, "f16 bf16 f32 f64 i8 u8 i16 u16 i32 i64 bool");
  ModelBuilder c(13);
  c.input("x", F32, {2}).output("y", STRING);
  attr(c.node("Cast", {"x"}, {"y"}, "to_string"), "to", STRING);
  e = import_error(c);
  EXPECT_HAS(e, "node 0 'to_string' (Cast)");
  EXPECT_HAS(e, "Cast to STRING");
}

TEST(OnnxImportErrors, UnsupportedAttributeValues) {
  ModelBuilder b(17);
  b.input("x", F32, {2, 3}).output("y", F32);
  b.init("w", f32({3}, {1, 1, 1}));
  attr(b.node("LayerNormalization", {"x", "w"}, {"y"}, "ln"), "stash_type", 11);
  std::string e = import_error(b);
  EXPECT_HAS(e, "node 0 'ln' (LayerNormalization)");
  EXPECT_HAS(e, "stash_type");
  // Training-mode dropout draws random masks ...
  auto training_dropout = [](double ratio) {
    ModelBuilder d(13);
    d.input("x", F32, {2}).output("y", F32);
    d.init("r", f32({}, {ratio})).init("t", Tensor::from_int64s(DType::boolean, {}, {1}));
    d.node("Dropout", {"x", "r", "t"}, {"y"});
    return d;
  };
  e = import_error(training_dropout(0.5));
  EXPECT_HAS(e, "node 0 (Dropout)");
  EXPECT_HAS(e, "training_mode");
  // ... except with a ratio of 0, which drops nothing (torchvision's swin_t exports that).
  EXPECT_EQ(run(training_dropout(0.0).import(), {f32({2}, {3, -4})}).at(0).to_doubles(), (std::vector<double>{3, -4}));
  // A shape computed at run time cannot become a reshape target.
  ModelBuilder r(13);
  r.input("x", F32, {2, 3}).input("s", I64, {2}).output("y", F32);
  r.node("Reshape", {"x", "s"}, {"y"}, "rs");
  e = import_error(r);
  EXPECT_HAS(e, "node 0 'rs' (Reshape)");
  EXPECT_HAS(e, "is the model input 's': its value is needed at import time");
  // An opset newer than 17.
  ModelBuilder n(18);
  n.input("x", F32, {2}).output("y", F32);
  n.node("Relu", {"x"}, {"y"});
  EXPECT_HAS(import_error(n), "opset 18");
}

TEST(OnnxImportErrors, DynamicDimensionsNeedShapes) {
  ModelBuilder b(13);
  b.dynamic_input("x", F32, {0, 4}, 0, "batch").output("y", F32);
  b.node("Relu", {"x"}, {"y"});
  std::string e = import_error(b);
  EXPECT_HAS(e, "input 'x' has a dynamic dimension 0 ('batch')");
  EXPECT_HAS(e, "--shape x:");
  ImportOptions o;
  o.shapes["x"] = {3, 4};
  ImportedModel m = b.import(o);
  EXPECT_EQ(m.graph.node(0).type.shape, (Shape{3, 4}));
  o.shapes["x"] = {3, 5};
  EXPECT_HAS(import_error(b, o), "--shape x: input 'x' is [batch, 4] in the model, not [3, 5] (dimension 1 differs)");
  o.shapes = {{"nope", {1}}};
  EXPECT_HAS(import_error(b, o), "no input of that name");
  EXPECT_THROW(parse_shape_spec("x:[1,a]"), UserError);
  EXPECT_THROW(parse_shape_spec("x[1]"), UserError);
  EXPECT_EQ(parse_shape_spec("a.b:[2, 3]").second, (Shape{2, 3}));
  EXPECT_EQ(parse_shape_spec("s:[]").second, Shape{});
}

// A negative size is a broken model, not a dynamic dimension that --shape would fix (it
// was once reported as "a dynamic dimension 1 ('')").
TEST(OnnxImportErrors, NegativeDimensionsAreNamedAsSuch) {
  ModelBuilder b(13);
  b.input("x", F32, {2, -3}).output("y", F32);
  b.node("Relu", {"x"}, {"y"});
  std::string e = import_error(b);
  EXPECT_HAS(e, "test.onnx: input 'x': dimension 1 is negative (-3)");
  EXPECT_EQ(e.find("dynamic"), std::string::npos) << e;
}

// Errors raised below an op's handler (an element limit, a shape check) name the file and the node
// like the handler's own (Tile's "the tiled shape ... has more than ..." named
// neither), and Range says what is wrong with non-finite bounds.
TEST(OnnxImportErrors, LimitsBelowAHandlerNameTheFileAndNode) {
  ModelBuilder t(13);
  t.input("x", F32, {2, 2}).output("y", F32, std::vector<int64_t>{1 << 30, 1 << 30});
  t.init("r", i64({2}, {1 << 29, 1 << 29}));
  t.node("Tile", {"x", "r"}, {"y"});
  EXPECT_HAS(import_error(t), "test.onnx: node 0 (Tile): the tiled shape");
  ModelBuilder r(13);
  r.output("y", F32, std::vector<int64_t>{0});  // what ONNX infers for a NaN limit
  r.init("s", f32({}, {0})).init("l", f32({}, {std::nanf("")})).init("d", f32({}, {1}));
  r.node("Range", {"s", "l", "d"}, {"y"});
  EXPECT_HAS(import_error(r), "test.onnx: node 0 (Range): start, limit and delta must be finite");
}

TEST(OnnxImportErrors, HostileFiles) {
  EXPECT_HAS(bytes_error("this is not a protobuf at all \xff\xff\xff\xff"), "hostile.onnx");
  EXPECT_HAS(bytes_error(""), "hostile.onnx");
  // A valid model, truncated.
  ModelBuilder b(13);
  b.input("x", F32, {2}).output("y", F32);
  b.init("w", f32({64}, std::vector<double>(64, 1.0)));
  b.node("Relu", {"x"}, {"y"});
  std::string full = b.bytes();
  for (size_t cut : {full.size() / 2, full.size() - 1, size_t{3}}) EXPECT_HAS(bytes_error(full.substr(0, cut)), "hostile.onnx");
  // raw_data whose length does not match the dims.
  {
    ModelBuilder m(13);
    m.input("x", F32, {3}).output("y", F32);
    auto* t = m.m.mutable_graph()->add_initializer();
    t->set_name("w");
    t->set_data_type(F32);
    t->add_dims(3);
    t->set_raw_data(std::string(8, '\0'));
    m.node("Mul", {"x", "w"}, {"y"});
    std::string e = import_error(m);
    EXPECT_HAS(e, "initializer 'w'");
    EXPECT_HAS(e, "raw_data has 8 bytes");
  }
  // Typed data of the wrong length; huge dims with no data; negative dims.
  for (std::vector<int64_t> dims : {std::vector<int64_t>{5}, std::vector<int64_t>{int64_t{1} << 40, int64_t{1} << 40}, std::vector<int64_t>{-1}}) {
    ModelBuilder m(13);
    m.input("x", F32, {3}).output("y", F32);
    auto* t = m.m.mutable_graph()->add_initializer();
    t->set_name("w");
    t->set_data_type(F32);
    for (auto d : dims) t->add_dims(d);
    t->add_float_data(1);
    m.node("Mul", {"x", "w"}, {"y"});
    EXPECT_HAS(import_error(m), "test.onnx");
  }
  // A huge input shape, a huge ConstantOfShape.
  {
    ModelBuilder m(13);
    m.input("x", F32, {int64_t{1} << 40, int64_t{1} << 40}).output("y", F32);
    m.node("Relu", {"x"}, {"y"});
    EXPECT_HAS(import_error(m), "input 'x'");
    ModelBuilder c(13);
    c.input("x", F32, {2}).output("y", F32);
    c.init("s", i64({2}, {int64_t{1} << 40, int64_t{1} << 40}));
    c.node("ConstantOfShape", {"s"}, {"y"});
    EXPECT_HAS(import_error(c), "node 0 (ConstantOfShape)");
  }
  // External data would read other files: refused.
  {
    ModelBuilder m(13);
    m.input("x", F32, {3}).output("y", F32);
    auto* t = m.m.mutable_graph()->add_initializer();
    t->set_name("w");
    t->set_data_type(F32);
    t->add_dims(3);
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* kv = t->add_external_data();
    kv->set_key("location");
    kv->set_value("/etc/passwd");
    m.node("Mul", {"x", "w"}, {"y"});
    EXPECT_HAS(import_error(m), "test.onnx");
  }
  // External data in a Constant's value: refused before ONNX's checker, which
  // stat()s the path. The message names the node and is the same whether the file exists or not.
  {
    auto constant_from = [](const std::string& location) {
      ModelBuilder m(13);
      m.output("y", F32);
      auto& n = m.node("Constant", {}, {"y"}, "c");
      auto* a = n.add_attribute();
      a->set_name("value");
      a->set_type(onnx::AttributeProto::TENSOR);
      auto* t = a->mutable_t();
      t->set_data_type(F32);
      t->add_dims(3);
      t->set_data_location(onnx::TensorProto::EXTERNAL);
      auto* kv = t->add_external_data();
      kv->set_key("location");
      kv->set_value(location);
      return import_error(m);
    };
    std::string existing = constant_from("/etc/passwd"), missing = constant_from("/nonexistent/rk_no_such_file");
    EXPECT_HAS(existing, "test.onnx: node 0 'c' (Constant): attribute 'value': tensors stored in external data files are not supported");
    EXPECT_EQ(existing, missing) << "the message must not tell whether the file exists";
  }
  // Not a regular file; missing.
  fs::path dir = scratch_dir("rk_onnx_", "hostile");
  EXPECT_THROW(import_onnx(dir.string()), UserError);
  EXPECT_THROW(import_onnx((dir / "missing.onnx").string()), UserError);
}

TEST(OnnxImportErrors, HostileGraphs) {
  // A node reading a value nobody defines, a cycle, a duplicate output: the checker refuses them.
  ModelBuilder a(13);
  a.input("x", F32, {2}).output("y", F32);
  a.node("Add", {"x", "ghost"}, {"y"});
  EXPECT_HAS(import_error(a), "test.onnx");
  ModelBuilder c(13);
  c.input("x", F32, {2}).output("y", F32);
  c.node("Add", {"x", "y"}, {"z"});
  c.node("Relu", {"z"}, {"y"});
  EXPECT_HAS(import_error(c), "test.onnx");
  // Gather indices out of range among constants: an error at import-time evaluation.
  ModelBuilder g(13);
  g.input("x", F32, {2}).output("y", F32);
  g.init("d", f32({3}, {1, 2, 3})).init("i", i64({1}, {7}));
  g.node("Gather", {"d", "i"}, {"t"});
  g.node("Add", {"x", "t"}, {"y"});
  EXPECT_HAS(import_error(g), "node 0 (Gather)");
  // Attribute values and shapes that crash or stall ONNX's own shape inference: isolated in a
  // child process, they are a UserError here.
  ModelBuilder ln(17);
  ln.input("x", F32, {3, 4}).input("w", F32, {3, 4}).output("y", F32, std::vector<int64_t>{3, 4});
  attr(ln.node("LayerNormalization", {"x", "w"}, {"y"}), "axis", std::numeric_limits<int64_t>::max());
  EXPECT_HAS(import_error(ln), "test.onnx");
  ModelBuilder ex(13);
  ex.input("x", F32, {3, 1}).input("s", I64, {int64_t{1} << 31}).output("y", F32, std::vector<int64_t>{3, 1});
  ex.node("Expand", {"x", "s"}, {"y"});
  EXPECT_HAS(import_error(ex), "test.onnx");
  // Reshape to a shape of the wrong size.
  ModelBuilder r(13);
  r.input("x", F32, {2, 3}).output("y", F32);
  r.init("s", i64({1}, {7}));
  r.node("Reshape", {"x", "s"}, {"y"});
  EXPECT_HAS(import_error(r), "node 0 (Reshape)");
}

}  // namespace
}  // namespace reprokit::testing
