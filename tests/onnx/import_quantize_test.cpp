// QuantizeLinear, DequantizeLinear and Round imported as pointwise ops: ties round to even, values
// saturate at the quantised type's ends, per-axis scales broadcast along their axis. ONNX's own
// cases are in the conformance suite; a quantisation-aware MLP against PyTorch in tests/models.
#include <gtest/gtest.h>

#include "onnx_test_util.h"

namespace reprokit::testing {
namespace {

TEST(OnnxImportQuantize, QuantizeRoundsHalfToEvenAndSaturates) {
  ModelBuilder b(13);
  b.input("x", F32, {8}).output("y", U8, std::vector<int64_t>{8});
  b.init("s", f32({}, {0.5})).init("z", Tensor::from_int64s(DType::u8, {}, {10}));
  b.node("QuantizeLinear", {"x", "s", "z"}, {"y"});
  // x / 0.5: 2.5 -> 2, 3.5 -> 4, -2.5 -> -2, -3.5 -> -4, 1.3 -> 1; then + 10, within [0, 255].
  auto y = run(b.import(), {f32({8}, {1.25, 1.75, -1.25, -1.75, 0.65, -100, 1000, 0})})[0];
  EXPECT_EQ(y.dtype(), DType::u8);
  EXPECT_EQ(y.to_int64s(), (std::vector<int64_t>{12, 14, 8, 6, 11, 0, 255, 10}));
}

TEST(OnnxImportQuantize, PerAxisScalesAndZeroPointsRoundTripThroughDequantize) {
  ModelBuilder b(13);
  b.input("x", F32, {2, 3}).output("q", I8_T, std::vector<int64_t>{2, 3}).output("y", F32, std::vector<int64_t>{2, 3});
  b.init("s", f32({3}, {0.1, 1.0, 10.0})).init("z", Tensor::from_int64s(DType::i8, {3}, {0, -5, 100}));
  b.node("QuantizeLinear", {"x", "s", "z"}, {"q"});
  b.node("DequantizeLinear", {"q", "s", "z"}, {"y"});
  auto out = run(b.import(), {f32({2, 3}, {0.26, 2.6, 260, -0.26, -200, 1e6})});
  // Column 0: 2.6 -> 3 (0.3), -2.6 -> -3; column 1: 2.6 -> 3 - 5 = -2, -200 -> -205 -> -128;
  // column 2: 26 + 100 = 126, 1e5 + 100 -> 127.
  EXPECT_EQ(out[0].to_int64s(), (std::vector<int64_t>{3, -2, 126, -3, -128, 127}));
  expect_values(out[1], {2, 3}, {0.3, 3, 260, -0.3, -123, 270});
}

TEST(OnnxImportQuantize, RoundIsHalfToEven) {
  ModelBuilder b(13);
  b.input("x", F32, {7}).output("y", F32, std::vector<int64_t>{7});
  b.node("Round", {"x"}, {"y"});
  expect_values(run(b.import(), {f32({7}, {0.5, 1.5, 2.5, -0.5, -1.5, 2.4999, -7.51})})[0], {7}, {0, 2, 2, -0, -2, 2, -8});
}

}  // namespace
}  // namespace reprokit::testing
