// Export -> import round trips: every op (tests/ir/all_ops.h) and every example model give the
// same results through the reference interpreter, and every export passes ONNX's checker.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <cmath>
#include <filesystem>

#include "../ir/all_ops.h"
#include "../scratch_dir.h"
#include "onnx_test_util.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/onnx/onnx_export.h"
#include "reprokit/runtime/input_gen.h"
#include "reprokit/support/files.h"

namespace reprokit::testing {
namespace {

namespace fs = std::filesystem;

// Ops whose export is a formula (not one ONNX op) round to the dtype at every step, or sum in
// another order, so they can differ from reprokit's single rounding in the last bits; everything
// else must be exact.
bool approximate_export(Op op) {
  switch (op) {
    case Op::rsqrt:
    case Op::silu:
    case Op::gelu:
    case Op::var:
    case Op::layer_norm:
    case Op::batch_norm:  // weight and bias of 1 and 0 when absent
    case Op::group_norm:
    case Op::instance_norm:        // InstanceNormalization's own summation order
    case Op::adaptive_avg_pool2d:  // two MatMuls with averaging matrices
    case Op::avg_pool2d_backward:  // g / divisor, summed tap by tap
    case Op::affine_grid:          // a MatMul with the base grid rounded to the dtype
      return true;
    default: return false;
  }
}

void expect_round_trip(const Graph& g) {
  SCOPED_TRACE(g.name);
  std::string bytes = export_onnx(g);
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(bytes));
  EXPECT_NO_THROW(onnx::checker::check_model(model));
  EXPECT_EQ(model.ir_version(), 8);
  EXPECT_EQ(model.opset_import(0).version(), 17);
  onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), onnx::ShapeInferenceOptions(true, 1, false));

  ImportedModel m = import_onnx_bytes(bytes, g.name + ".onnx");
  std::vector<Tensor> inputs = generate_inputs(g, 7);
  std::vector<Tensor> want = interpret(g, inputs);
  // The imported graph's inputs: the original's by name (contiguous), then saved constants.
  std::vector<Tensor> in2;
  for (int i = 0; i < m.graph.num_inputs(); ++i) {
    const std::string& name = m.graph.node(i).name;
    auto v = m.values.find(name);
    if (v != m.values.end()) {
      in2.push_back(v->second);
      continue;
    }
    int id = g.find(name);
    ASSERT_GE(id, 0) << "imported input " << name << " is not an input of the original";
    ASSERT_LT(id, g.num_inputs());
    in2.push_back(inputs[static_cast<size_t>(id)].contiguous());
  }
  std::vector<Tensor> got = interpret(m.graph, in2);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    const Node& out = g.node(g.outputs[k]);
    SCOPED_TRACE(out.name);
    EXPECT_EQ(got[k].dtype(), want[k].dtype());
    ASSERT_EQ(got[k].shape(), want[k].shape());
    // The producer of an output, or of its operand for approximate ops feeding it.
    bool approx = approximate_export(out.op);
    for (const auto& o : out.operands)
      if (o.is_value() && approximate_export(g.node(o.value).op)) approx = true;
    if (g.name != "all_ops") approx = true;  // models chain many ops: compare within float tolerance
    auto a = want[k].to_doubles(), b = got[k].to_doubles();
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::isnan(a[i])) {
        EXPECT_TRUE(std::isnan(b[i])) << "at " << i;
      } else if (approx) {
        double tol = want[k].dtype() == DType::f32 ? 1e-5 : want[k].dtype() == DType::f64 ? 1e-12 : 1e-2;
        EXPECT_NEAR(b[i], a[i], tol * (1 + std::fabs(a[i]))) << "at " << i;
      } else {
        EXPECT_EQ(b[i], a[i]) << "at " << i;
      }
    }
  }
}

TEST(OnnxExport, EveryOpRoundTrips) {
  Graph g = parse_graph(kAllOpsGraph, "all_ops.rk");
  // The graph uses every op of the table.
  std::set<Op> used;
  for (const auto& n : g.nodes) used.insert(n.op);
  for (const auto& s : op_table()) EXPECT_TRUE(used.count(s.op)) << s.name << " is missing from all_ops";
  expect_round_trip(g);
}

TEST(OnnxExport, ExampleModelsRoundTrip) {
  int n = 0;
  for (auto& e : fs::directory_iterator(fs::path(REPROKIT_SOURCE_DIR) / "examples")) {
    if (e.path().extension() != ".rk") continue;
    ++n;
    Module m = load_module_file(e.path().string());
    for (const auto& g : m.graphs) expect_round_trip(g);
  }
  EXPECT_GE(n, 4);
}

TEST(OnnxExport, EdgeCases) {
  // A graph returning an input and one value twice; literals of every kind; bf16; 0-d values.
  const char* text = R"RK(
graph edges(%x: f32[3], %b: bf16[2, 2], %i: i32[3], %s: f32[]) {
  %y = add(%x, 1)
  %z = mul(%i, 2.5)
  %w = where(%c, %x, 0.0)
  %c = gt(%x, 0.0)
  %bb = sin(%b)
  %bf = full(shape=[2], value=1.5, dtype=bf16)
  %ss = softmax(%s, dim=0)
  %am = argmax(%s)
  %sq = squeeze(%x, dim=0)
  %r0 = sum(%x, dims=[])
  return (%x, %y, %y, %z, %bb, %bf, %ss, %am, %sq, %r0)
}
)RK";
  // %w uses %c before its definition: fix the order.
  std::string t = text;
  t.replace(t.find("  %w = where(%c, %x, 0.0)\n  %c = gt(%x, 0.0)\n"), std::string("  %w = where(%c, %x, 0.0)\n  %c = gt(%x, 0.0)\n").size(),
            "  %c = gt(%x, 0.0)\n  %w = where(%c, %x, 0.0)\n");
  expect_round_trip(parse_graph(t, "edges.rk"));
}

// Found by the libFuzzer target onnx_model_fuzzer: an output that is another value under a new
// name (a Clip with neither bound is its input) listed twice made the importer throw an internal
// error. Both entries are the one renamed value, and the graph exports again.
TEST(OnnxImport, AnOutputListedTwiceThatRenamesAnotherValue) {
  ModelBuilder b(13);
  b.input("x", F32, {4}).output("v", F32, std::vector<int64_t>{4}).output("v", F32, std::vector<int64_t>{4});
  b.node("Clip", {"x", ""}, {"v"});
  ImportedModel m = b.import();
  ASSERT_EQ(m.graph.outputs.size(), 2u);
  EXPECT_EQ(m.graph.outputs[0], m.graph.outputs[1]);
  EXPECT_EQ(m.graph.node(m.graph.outputs[0]).name, "v");
  std::vector<Tensor> out = run(m, {f32({4}, {1, -2, 3, -4})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].to_doubles(), (std::vector<double>{1, -2, 3, -4}));
  expect_round_trip(m.graph);
}

// Found by `reprokit fuzz --check` against ONNX Runtime: a Transpose of a 0-d tensor (empty perm)
// fails ONNX's checker, and ONNX Runtime refuses a rank-0 Pad or GatherElements. A 0-d tensor is
// its own transpose and padding; gathering from it broadcasts its value to the index's shape.
TEST(OnnxExport, ZeroDimViewsPadAndGatherAreIdentityOrExpand) {
  Graph g = parse_graph(R"RK(
graph zero_d(%x: f32[], %i: i64[]) {
  %a = permute(%x, dims=[])
  %b = transpose(%x, dim0=0, dim1=-1)
  %c = pad(%x, pads=[], value=3.0)
  %d = gather(%x, %i, dim=0)
  return (%a, %b, %c, %d)
}
)RK",
                        "zero_d.rk");
  expect_round_trip(g);
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(export_onnx(g)));
  for (const auto& node : model.graph().node())
    EXPECT_TRUE(node.op_type() == "Identity" || node.op_type() == "Expand") << node.op_type() << " on a 0-d tensor";
}

// Found by fuzzing ONNX Runtime: a Reshape to a shape with a 0 dim copies the input's dim unless
// allowzero=1, so linear of a [4, 0, 2] value exported a model ONNX's checker refused.
TEST(OnnxExport, ZeroSizeDimsStayZero) {
  expect_round_trip(parse_graph(R"RK(
graph zero_size(%x: f32[4, 0, 2], %w: f32[3, 2], %e: f32[0, 5], %w0: f32[2, 0], %z: f32[3, 1, 0]) {
  %a = linear(%x, %w)
  %b = reshape(%e, shape=[5, 0])
  %c = linear(%z, %w0)
  return (%a, %b, %c)
}
)RK",
                                "zero_size.rk"));
}

// gather takes indices smaller than the data off the axis; ONNX's GatherElements wants them the
// same (its reference implementation and OpenVINO refuse the model otherwise): the data is cut to
// the indices' shape there first, and the values stay gather's.
TEST(OnnxExport, AGatherWithSmallerIndicesCutsTheDataFirst) {
  Graph g = parse_graph("graph t(%x: f32[3, 4, 2], %i: i64[5, 2, 1]) {\n  %y = gather(%x, %i, dim=0)\n  return (%y)\n}\n");
  expect_round_trip(g);
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(export_onnx(g)));
  std::vector<std::string> ops;
  for (const auto& node : model.graph().node()) ops.push_back(node.op_type());
  EXPECT_EQ(ops, (std::vector<std::string>{"Slice", "GatherElements"}));
  Graph same = parse_graph("graph t(%x: f32[3, 4, 2], %i: i64[5, 4, 2]) {\n  %y = gather(%x, %i, dim=0)\n  return (%y)\n}\n");
  ASSERT_TRUE(model.ParseFromString(export_onnx(same)));
  ASSERT_EQ(model.graph().node_size(), 1);
  EXPECT_EQ(model.graph().node(0).op_type(), "GatherElements");
}

// ONNX's TopK takes a positive K: a topk of k = 0, or a sort along an empty dim, has no ONNX form
// (a model that names K = 0 is refused by the runtimes that check it) and is refused by name.
TEST(OnnxExport, ATopKOfNothingHasNoOnnxForm) {
  for (const char* g :
       {"graph t(%x: f32[2, 5]) {\n  %y = topk(%x, k=0)\n  return (%y)\n}\n", "graph t(%x: f32[2, 0]) {\n  %y = argsort(%x)\n  return (%y)\n}\n"}) {
    try {
      export_onnx(parse_graph(g));
      ADD_FAILURE() << "exported: " << g;
    } catch (const UserError& e) { EXPECT_NE(std::string(e.what()).find("ONNX's TopK takes K >= 1"), std::string::npos) << e.what(); }
  }
}

TEST(OnnxExport, WritesReproOnnx) {
  fs::path d = scratch_root("rk_onnx_") / "repro";  // removed at exit, even after a failed ASSERT
  Dir dir = Dir::create(d.string());
  write_onnx_repro(dir, parse_graph(kAllOpsGraph, "all_ops.rk"));
  ASSERT_TRUE(fs::exists(d / "repro.onnx"));
  ImportedModel m = import_onnx((d / "repro.onnx").string());
  EXPECT_EQ(m.graph.name, "all_ops");
}

}  // namespace
}  // namespace reprokit::testing

namespace reprokit::testing {
namespace {

// ONNX keeps LayerNormalization's mean and variance in float32 unless stash_type says otherwise: a
// float64 layer norm says float64, so a compiler that follows the default does not compute it in
// float32 (a float32 one keeps the default).
TEST(OnnxExport, AFloat64LayerNormKeepsItsStatisticsInFloat64) {
  for (const char* dtype : {"f64", "f32"}) {
    SCOPED_TRACE(dtype);
    const Graph g = parse_graph(fmt::format("graph ln(%x: {}[2, 3]) {{\n  %y = layer_norm(%x, normalized_shape=[3])\n  return (%y)\n}}\n", dtype));
    onnx::ModelProto m;
    ASSERT_TRUE(m.ParseFromString(export_onnx(g)));
    const onnx::NodeProto* ln = nullptr;
    for (const auto& n : m.graph().node())
      if (n.op_type() == "LayerNormalization") ln = &n;
    ASSERT_NE(ln, nullptr);
    const onnx::AttributeProto* stash = nullptr;
    for (const auto& a : ln->attribute())
      if (a.name() == "stash_type") stash = &a;
    if (std::string(dtype) == "f64") {
      ASSERT_NE(stash, nullptr);
      EXPECT_EQ(stash->i(), onnx::TensorProto::DOUBLE);
    } else {
      EXPECT_EQ(stash, nullptr);
    }
    // ...and it imports back as the same layer norm.
    const Graph back = import_onnx_bytes(m.SerializeAsString(), "ln.onnx").graph;
    EXPECT_EQ(back.num_ops(), 1) << print_graph(back);
  }
}

}  // namespace
}  // namespace reprokit::testing
