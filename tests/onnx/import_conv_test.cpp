// The importer's convolution, pooling, BatchNormalization, InstanceNormalization, Pad and Clip
// mappings on tiny models, against values computed by hand: 1-D and 3-D forms, asymmetric and SAME
// pads, cropping pads, nn.GroupNorm as PyTorch exports it.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "onnx_test_util.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/op_registry.h"

namespace reprokit::testing {
namespace {

Tensor x3x3() { return f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}); }

// A model with one node over input x (and initializers), output y.
ImportedModel one(const std::string& op, const Tensor& x, std::vector<std::pair<std::string, Tensor>> inits,
                  const std::function<void(onnx::NodeProto&)>& attrs, std::vector<std::string> extra_inputs = {}) {
  ModelBuilder b(17);
  b.input("x", F32, x.shape()).output("y", F32);
  std::vector<std::string> ins{"x"};
  for (auto& [name, t] : inits) b.init(name, t), ins.push_back(name);
  for (auto& e : extra_inputs) ins.push_back(e);
  attrs(b.node(op, ins, {"y"}, "n"));
  return b.import();
}

int count_op(const Graph& g, Op op) {
  int n = 0;
  for (const auto& node : g.nodes) n += node.op == op;
  return n;
}

std::string import_error(const std::function<ImportedModel()>& f) {
  try {
    f();
  } catch (const UserError& e) { return e.what(); }
  return "(no error)";
}

TEST(OnnxImportConv, Conv1dSameUpperPadsAtTheEnd) {
  Tensor x = f32({1, 1, 5}, {1, 2, 3, 4, 5});
  auto m = one("Conv", x, {{"w", f32({1, 1, 2}, {1, 1})}}, [](auto& n) { attr_s(n, "auto_pad", "SAME_UPPER"); });
  // Total pad 1, all of it after: windows (1,2) (2,3) (3,4) (4,5) (5,0).
  expect_values(run(m, {x})[0], {1, 1, 5}, {3, 5, 7, 9, 5});
  EXPECT_EQ(count_op(m.graph, Op::pad), 1);
  EXPECT_EQ(count_op(m.graph, Op::conv2d), 1);
}

TEST(OnnxImportConv, GroupedConvWithBiasAndStrides) {
  Tensor x = f32({1, 2, 2, 2}, {1, 2, 3, 4, 10, 20, 30, 40});
  auto m = one("Conv", x, {{"w", f32({2, 1, 1, 1}, {2, 3})}, {"b", f32({2}, {1, -1})}}, [](auto& n) {
    attr(n, "group", 2);
    attr_ints(n, "strides", {2, 2});
  });
  expect_values(run(m, {x})[0], {1, 2, 1, 1}, {1 * 2 + 1, 10 * 3 - 1});
  EXPECT_EQ(count_op(m.graph, Op::pad), 0);  // no pads: none written
}

TEST(OnnxImportConv, MaxPoolAsymmetricPadsNeverWin) {
  Tensor x = f32({1, 1, 3, 3}, {-1, -2, -3, -4, -5, -6, -7, -8, -9});
  auto m = one("MaxPool", x, {}, [](auto& n) {
    attr_ints(n, "kernel_shape", {2, 2});
    attr_ints(n, "strides", {2, 2});
    attr_ints(n, "pads", {0, 0, 1, 1});
  });
  // The padding is -inf, not 0: windows at the edge take the largest real element.
  expect_values(run(m, {x})[0], {1, 1, 2, 2}, {-1, -3, -7, -9});
}

TEST(OnnxImportConv, AveragePoolAsymmetricPadsCountOrNot) {
  Tensor x = x3x3();
  auto pool = [&](int include) {
    return one("AveragePool", x, {}, [=](auto& n) {
      attr_ints(n, "kernel_shape", {2, 2});
      attr_ints(n, "strides", {2, 2});
      attr_ints(n, "pads", {0, 0, 1, 1});
      attr(n, "count_include_pad", include);
    });
  };
  auto excl = pool(0), incl = pool(1);
  expect_values(run(excl, {x})[0], {1, 1, 2, 2}, {3, 4.5, 7.5, 9});
  expect_values(run(incl, {x})[0], {1, 1, 2, 2}, {3, 2.25, 3.75, 2.25});
}

TEST(OnnxImportConv, AveragePool1dCeilMode) {
  Tensor x = f32({1, 1, 5}, {1, 2, 3, 4, 5});
  auto m = one("AveragePool", x, {}, [](auto& n) {
    attr_ints(n, "kernel_shape", {2});
    attr_ints(n, "strides", {2});
    attr(n, "ceil_mode", 1);
  });
  expect_values(run(m, {x})[0], {1, 1, 3}, {1.5, 3.5, 5});
}

Tensor x2x2x2() { return f32({1, 1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}); }

TEST(OnnxImportConv, Conv3dAsymmetricPads) {
  Tensor x = x2x2x2();
  auto m = one("Conv", x, {{"w", f32({1, 1, 1, 1, 2}, {1, 1})}}, [](auto& n) { attr_ints(n, "pads", {0, 0, 0, 0, 0, 1}); });
  // Each output adds an element and its right neighbour (0 past the end).
  expect_values(run(m, {x})[0], {1, 1, 2, 2, 2}, {3, 2, 7, 4, 11, 6, 15, 8});
  EXPECT_EQ(count_op(m.graph, Op::pad), 1);
  EXPECT_EQ(count_op(m.graph, Op::conv3d), 1);
}

TEST(OnnxImportConv, GroupedConv3dWithBiasAndStrides) {
  Tensor x = f32({1, 2, 1, 2, 2}, {1, 2, 3, 4, 10, 20, 30, 40});
  auto m = one("Conv", x, {{"w", f32({2, 1, 1, 1, 1}, {2, 3})}, {"b", f32({2}, {1, -1})}}, [](auto& n) {
    attr(n, "group", 2);
    attr_ints(n, "strides", {1, 2, 2});
  });
  expect_values(run(m, {x})[0], {1, 2, 1, 1, 1}, {1 * 2 + 1, 10 * 3 - 1});
  EXPECT_EQ(count_op(m.graph, Op::pad), 0);
}

TEST(OnnxImportConv, MaxPool3dPadsNeverWin) {
  Tensor x = f32({1, 1, 2, 2, 2}, {-1, -2, -3, -4, -5, -6, -7, -8});
  auto m = one("MaxPool", x, {}, [](auto& n) {
    attr_ints(n, "kernel_shape", {2, 2, 1});
    attr_ints(n, "strides", {2, 2, 1});
    attr_ints(n, "pads", {1, 0, 0, 1, 0, 0});
  });
  // Depth windows {pad, 0} and {1, pad}; each takes the larger of its two rows.
  expect_values(run(m, {x})[0], {1, 1, 2, 1, 2}, {-1, -2, -5, -6});
  EXPECT_EQ(count_op(m.graph, Op::max_pool3d), 1);
}

TEST(OnnxImportConv, AveragePool3dAsymmetricPadsCountOrNot) {
  Tensor x = x2x2x2();
  auto pool = [&](int include) {
    return one("AveragePool", x, {}, [=](auto& n) {
      attr_ints(n, "kernel_shape", {2, 2, 2});
      attr_ints(n, "pads", {0, 0, 0, 1, 0, 0});
      attr(n, "count_include_pad", include);
    });
  };
  expect_values(run(pool(0), {x})[0], {1, 1, 2, 1, 1}, {4.5, 6.5});
  expect_values(run(pool(1), {x})[0], {1, 1, 2, 1, 1}, {4.5, 3.25});
  EXPECT_EQ(count_op(pool(0).graph, Op::avg_pool3d), 1);
}

TEST(OnnxImportConv, GlobalPoolAndBatchNormalizationOn5d) {
  Tensor x = x2x2x2();
  expect_values(run(one("GlobalAveragePool", x, {}, [](auto&) {}), {x})[0], {1, 1, 1, 1, 1}, {4.5});
  Tensor y = f32({1, 2, 1, 1, 1}, {1, 2});
  auto m = one("BatchNormalization", y,
               {{"scale", f32({2}, {2, 3})}, {"bias", f32({2}, {0.5, -0.5})}, {"mean", f32({2}, {0, 1})}, {"var", f32({2}, {1, 4})}},
               [](auto& n) { attr_f(n, "epsilon", 0.0f); });
  expect_values(run(m, {y})[0], {1, 2, 1, 1, 1}, {2.5, 1.0});
}

TEST(OnnxImportConv, ConvTransposeStridesAndSymmetricPads) {
  Tensor x = f32({1, 1, 1, 2}, {1, 2});
  auto m = one("ConvTranspose", x, {{"w", f32({1, 1, 1, 3}, {1, 2, 3})}}, [](auto& n) {
    attr_ints(n, "strides", {1, 2});
    attr_ints(n, "pads", {0, 1, 0, 1});
    attr_ints(n, "output_padding", {0, 1});
  });
  // Full output {1, 2, 3 + 2, 4, 6}, less one element at the front (the end's pad is given back by output_padding).
  expect_values(run(m, {x})[0], {1, 1, 1, 4}, {2, 5, 4, 6});
  EXPECT_EQ(count_op(m.graph, Op::conv_transpose2d), 1);
  EXPECT_EQ(count_op(m.graph, Op::slice), 0);
}

TEST(OnnxImportConv, ConvTranspose1dOutputShapeAndAsymmetricPads) {
  Tensor x = f32({1, 1, 2}, {1, 2});
  auto with = [&](const std::function<void(onnx::NodeProto&)>& attrs) {
    return one("ConvTranspose", x, {{"w", f32({1, 1, 3}, {1, 2, 3})}, {"b", f32({1}, {10})}}, attrs);
  };
  // Full output (stride 2): {1, 2, 3 + 2, 4, 6}.
  auto shaped = with([](auto& n) {
    attr_ints(n, "strides", {2});
    attr_ints(n, "output_shape", {4});  // total pad 1, at the front (NOTSET as SAME_LOWER)
  });
  expect_values(run(shaped, {x})[0], {1, 1, 4}, {12, 15, 14, 16});
  auto upper = with([](auto& n) {
    attr_ints(n, "strides", {2});
    attr_s(n, "auto_pad", "SAME_UPPER");  // 4 outputs, the pad at the end
  });
  expect_values(run(upper, {x})[0], {1, 1, 4}, {11, 12, 15, 14});
  auto pads = with([](auto& n) {
    attr_ints(n, "strides", {2});
    attr_ints(n, "pads", {2, 0});
  });
  expect_values(run(pads, {x})[0], {1, 1, 3}, {15, 14, 16});
  EXPECT_EQ(count_op(pads.graph, Op::slice), 1);
  auto longer = with([](auto& n) {
    attr_ints(n, "strides", {2});
    attr_ints(n, "output_shape", {6});  // one past the last tap: the bias alone
  });
  expect_values(run(longer, {x})[0], {1, 1, 6}, {11, 12, 15, 14, 16, 10});
}

TEST(OnnxImportConv, ConvTranspose3dGroups) {
  Tensor x = f32({1, 2, 1, 1, 1}, {1, 2});
  auto m = one("ConvTranspose", x, {{"w", f32({2, 1, 1, 1, 2}, {1, 2, 3, 4})}}, [](auto& n) { attr(n, "group", 2); });
  expect_values(run(m, {x})[0], {1, 2, 1, 1, 2}, {1, 2, 6, 8});
  EXPECT_EQ(count_op(m.graph, Op::conv_transpose3d), 1);
}

TEST(OnnxImportConv, ConvTransposeRefusesWhatItCannotExpress) {
  Tensor x = f32({1, 1, 2}, {1, 2});
  auto w = f32({1, 1, 3}, {1, 2, 3});
  EXPECT_HAS(import_error([&] {
               return one("ConvTranspose", x, {{"w", w}}, [](auto& n) { attr_ints(n, "output_shape", {9}); });
             }),
             "an output size of 9");
  EXPECT_HAS(import_error([&] { return one("ConvTranspose", x, {{"w", w}}, [](auto& n) { attr_ints(n, "pads", {2, 2}); }); }), "leave nothing");
  EXPECT_HAS(import_error([&] {
               return one("ConvTranspose", x, {{"w", w}}, [](auto& n) { attr_s(n, "auto_pad", "MIDDLE"); });
             }),
             "auto_pad 'MIDDLE'");
  EXPECT_HAS(import_error([&] { return one("ConvTranspose", x, {{"w", w}}, [](auto& n) { attr(n, "group", 2); }); }), "group 2");
  EXPECT_HAS(import_error([&] { return one("ConvTranspose", x, {{"w", w}}, [](auto& n) { attr_ints(n, "strides", {0}); }); }), "strides");
}

TEST(OnnxImportConv, GlobalPools) {
  Tensor x = x3x3();
  expect_values(run(one("GlobalAveragePool", x, {}, [](auto&) {}), {x})[0], {1, 1, 1, 1}, {5});
  expect_values(run(one("GlobalMaxPool", x, {}, [](auto&) {}), {x})[0], {1, 1, 1, 1}, {9});
}

TEST(OnnxImportConv, BatchNormalizationInference) {
  Tensor x = f32({1, 2, 1, 1}, {1, 2});
  auto m = one("BatchNormalization", x,
               {{"scale", f32({2}, {2, 3})}, {"bias", f32({2}, {0.5, -0.5})}, {"mean", f32({2}, {0, 1})}, {"var", f32({2}, {1, 4})}},
               [](auto& n) { attr_f(n, "epsilon", 0.0f); });
  expect_values(run(m, {x})[0], {1, 2, 1, 1}, {2.5, 1.0});
  EXPECT_EQ(count_op(m.graph, Op::batch_norm), 1);
}

TEST(OnnxImportConv, InstanceNormalization) {
  Tensor x = f32({1, 2, 2}, {0, 2, 5, 7});
  auto m = one("InstanceNormalization", x, {{"scale", f32({2}, {2, 1})}, {"bias", f32({2}, {1, 0})}}, [](auto& n) { attr_f(n, "epsilon", 0.0f); });
  expect_values(run(m, {x})[0], {1, 2, 2}, {-1, 3, -1, 1});
  EXPECT_EQ(count_op(m.graph, Op::instance_norm), 1);
}

// nn.GroupNorm as PyTorch 1.13 exports it: Reshape to [N, groups, -1], InstanceNormalization with
// ones and zeros, Reshape to Shape(x), then Mul and Add with the weight and bias unsqueezed to [C, 1, 1].
TEST(OnnxImportConv, GroupNormAsPyTorchExportsIt) {
  ModelBuilder b(17);
  b.input("x", F32, {1, 4, 1, 2}).output("y", F32);
  b.init("groups_shape", i64({3}, {0, 2, -1}));
  b.init("ones", f32({2}, {1, 1}));
  b.init("zeros", f32({2}, {0, 0}));
  b.init("weight", f32({4}, {1, 2, 3, 4}));
  b.init("bias", f32({4}, {0, 0, 0, 1}));
  b.init("axes", i64({2}, {1, 2}));
  b.node("Reshape", {"x", "groups_shape"}, {"grouped"});
  attr_f(b.node("InstanceNormalization", {"grouped", "ones", "zeros"}, {"normed"}), "epsilon", 0.0f);
  b.node("Shape", {"x"}, {"x_shape"});
  b.node("Reshape", {"normed", "x_shape"}, {"norm"});
  b.node("Unsqueeze", {"weight", "axes"}, {"w"});
  b.node("Unsqueeze", {"bias", "axes"}, {"bb"});
  b.node("Mul", {"norm", "w"}, {"scaled"});
  b.node("Add", {"scaled", "bb"}, {"y"});
  Tensor x = f32({1, 4, 1, 2}, {0, 2, 0, 2, 1, 1, 3, 3});  // groups {0, 2, 0, 2} and {1, 1, 3, 3}: mean 1 and 2, var 1
  auto m = b.import();
  expect_values(run(m, {x})[0], {1, 4, 1, 2}, {-1, 1, -2, 2, -3, -3, 5, 5});
  // The chain imports as the layer it is, so a repro names it.
  EXPECT_EQ(count_op(m.graph, Op::group_norm), 1);
  EXPECT_EQ(count_op(m.graph, Op::instance_norm), 0);
  EXPECT_EQ(count_op(m.graph, Op::mul) + count_op(m.graph, Op::add), 0);
}

// A chain whose inner values are used elsewhere, or whose InstanceNormalization scales, is not
// GroupNorm: it imports op by op.
TEST(OnnxImportConv, GroupNormChainWithOtherUsesIsNotFolded) {
  for (bool scaled : {false, true}) {
    ModelBuilder b(17);
    b.input("x", F32, {1, 4, 1, 2}).output("y", F32);
    if (!scaled) b.output("normed", F32);
    b.init("groups_shape", i64({3}, {0, 2, -1}));
    b.init("ones", f32({2}, {1, scaled ? 2.0f : 1.0f}));
    b.init("zeros", f32({2}, {0, 0}));
    b.init("weight", f32({4, 1, 1}, {1, 2, 3, 4}));
    b.node("Reshape", {"x", "groups_shape"}, {"grouped"});
    attr_f(b.node("InstanceNormalization", {"grouped", "ones", "zeros"}, {"normed"}), "epsilon", 0.0f);
    b.node("Shape", {"x"}, {"x_shape"});
    b.node("Reshape", {"normed", "x_shape"}, {"norm"});
    b.node("Mul", {"weight", "norm"}, {"y"});
    auto m = b.import();
    EXPECT_EQ(count_op(m.graph, Op::group_norm), 0) << scaled;
    EXPECT_EQ(count_op(m.graph, Op::instance_norm), 1) << scaled;
    Tensor x = f32({1, 4, 1, 2}, {0, 2, 0, 2, 1, 1, 3, 3});
    expect_values(run(m, {x})[0], {1, 4, 1, 2},
                  scaled ? std::vector<double>{-1, 1, -2, 2, -6, -6, 8, 8} : std::vector<double>{-1, 1, -2, 2, -3, -3, 4, 4});
  }
}

// Mul(weight, norm) without an Add: group_norm with a weight only.
TEST(OnnxImportConv, GroupNormChainWithoutBiasFolds) {
  ModelBuilder b(17);
  b.input("x", F32, {1, 4, 1, 2}).output("y", F32);
  b.init("groups_shape", i64({3}, {0, 2, -1}));
  b.init("ones", f32({2}, {1, 1}));
  b.init("zeros", f32({2}, {0, 0}));
  b.init("weight", f32({4, 1, 1}, {1, 2, 3, 4}));
  b.node("Reshape", {"x", "groups_shape"}, {"grouped"});
  attr_f(b.node("InstanceNormalization", {"grouped", "ones", "zeros"}, {"normed"}), "epsilon", 0.0f);
  b.node("Shape", {"x"}, {"x_shape"});
  b.node("Reshape", {"normed", "x_shape"}, {"norm"});
  b.node("Mul", {"weight", "norm"}, {"y"});
  auto m = b.import();
  EXPECT_EQ(count_op(m.graph, Op::group_norm), 1);
  Tensor x = f32({1, 4, 1, 2}, {0, 2, 0, 2, 1, 1, 3, 3});
  expect_values(run(m, {x})[0], {1, 4, 1, 2}, {-1, 1, -2, 2, -3, -3, 4, 4});
}

TEST(OnnxImportConv, PadGrowsAndCrops) {
  ModelBuilder b(17);
  b.input("x", F32, {2, 3}).output("y", F32);
  b.init("pads", i64({4}, {1, -1, 0, 1}));  // begins (dim 0, dim 1), then ends
  b.init("value", f32({}, {9}));
  b.node("Pad", {"x", "pads", "value"}, {"y"});
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_values(run(b.import(), {x})[0], {3, 3}, {9, 9, 9, 2, 3, 9, 5, 6, 9});
}

TEST(OnnxImportConv, ClipWithConstantBoundsIsOneClamp) {
  Tensor x = f32({4}, {-2, -0.5, 0.5, 2});
  auto m = one("Clip", x, {{"lo", f32({}, {0})}, {"hi", f32({}, {1})}}, [](auto&) {});
  expect_values(run(m, {x})[0], {4}, {0, 0, 0.5, 1});
  EXPECT_EQ(count_op(m.graph, Op::clamp), 1);
  EXPECT_EQ(count_op(m.graph, Op::maximum) + count_op(m.graph, Op::minimum), 0);
}

TEST(OnnxImportConv, WhatCannotBeExpressedIsNamed) {
  Tensor x = x3x3();
  EXPECT_HAS(import_error([&] {
               ModelBuilder b(17);
               b.input("x", F32, {1, 1, 3, 3}).output("y", F32).output("i", I64);
               auto& n = b.node("MaxPool", {"x"}, {"y", "i"}, "pool");
               attr_ints(n, "kernel_shape", {2, 2});
               return b.import();
             }),
             "the Indices output");
  EXPECT_HAS(import_error([&] {
               return one("Pad", x, {{"pads", i64({8}, {0, 0, 1, 1, 0, 0, 1, 1})}}, [](auto& n) { attr_s(n, "mode", "reflect"); });
             }),
             "mode 'reflect'");
  EXPECT_HAS(import_error([&] {
               return one("BatchNormalization", x, {{"s", f32({1}, {1})}, {"b", f32({1}, {0})}, {"m", f32({1}, {0})}, {"v", f32({1}, {1})}},
                          [](auto& n) { attr(n, "training_mode", 1); });
             }),
             "training_mode=1");
  Tensor x6 = f32({1, 1, 2, 2, 2, 1}, std::vector<double>(8, 1.0));
  EXPECT_HAS(import_error([&] { return one("MaxPool", x6, {}, [](auto& n) { attr_ints(n, "kernel_shape", {1, 1, 1, 1}); }); }), "6-D input");
  EXPECT_HAS(import_error([&] {
               return one("InstanceNormalization", f32({2, 3}, std::vector<double>(6, 1.0)), {{"s", f32({3}, {1, 1, 1})}, {"b", f32({3}, {0, 0, 0})}},
                          [](auto&) {});
             }),
             "input must be [N, C, D1, ...], got [2, 3]");
  EXPECT_HAS(import_error([&] {
               return one("InstanceNormalization", x, {{"s", f32({2}, {1, 1})}, {"b", f32({1}, {0})}}, [](auto&) {});
             }),
             "input 2 has shape [2], expected [1] (the channels)");
  Tensor x5 = f32({1, 1, 2, 2, 2}, std::vector<double>(8, 1.0));
  EXPECT_HAS(import_error([&] { return one("MaxPool", x5, {}, [](auto& n) {
                                  attr_ints(n, "kernel_shape", {1, 1});
                                }); }),
             "kernel_shape has 2 values for 3 spatial dims");
}

}  // namespace
}  // namespace reprokit::testing
