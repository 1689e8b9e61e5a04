// Resize and Upsample imported as gathers: hand-computed nearest and linear cases in the
// coordinate modes PyTorch exports, and what is refused. ONNX's own resize/upsample node cases are
// in the conformance suite, PyTorch's interpolate in the real-model tests (lraspp).
#include <gtest/gtest.h>

#include "onnx_test_util.h"
#include "reprokit/support/errors.h"

namespace reprokit::testing {
namespace {

// Resize of x [1, 1, 1, w] by scales (or to sizes), with the given attributes.
ModelBuilder resize(int64_t w, std::vector<double> scales, std::vector<int64_t> sizes, std::vector<std::pair<std::string, std::string>> attrs) {
  ModelBuilder b(13);
  b.input("x", F32, {1, 1, 1, w}).output("y", F32);
  b.init("roi", f32({0}, {}));
  std::vector<std::string> ins{"x", "roi"};
  if (!scales.empty()) {
    b.init("scales", f32({4}, scales));
    ins.push_back("scales");
  } else {
    b.init("scales", f32({0}, {}));
    b.init("sizes", i64({4}, sizes));
    ins.insert(ins.end(), {"scales", "sizes"});
  }
  auto& n = b.node("Resize", ins, {"y"}, "rs");
  for (const auto& [k, val] : attrs) attr_s(n, k, val);
  return b;
}

TEST(OnnxImportResize, NearestAndLinearInPyTorchsCoordinateModes) {
  const Tensor x = f32({1, 1, 1, 2}, {10, 20});
  // F.interpolate(scale_factor=2, mode="nearest"): asymmetric, floor.
  auto near = resize(2, {1, 1, 1, 2}, {}, {{"mode", "nearest"}, {"coordinate_transformation_mode", "asymmetric"}, {"nearest_mode", "floor"}});
  expect_values(run(near.import(), {x})[0], {1, 1, 1, 4}, {10, 10, 20, 20});
  // bilinear, align_corners=False: pytorch_half_pixel; the source -0.25 and 1.25 clamp to the ends.
  auto lin = resize(2, {}, {1, 1, 1, 4}, {{"mode", "linear"}, {"coordinate_transformation_mode", "pytorch_half_pixel"}});
  expect_values(run(lin.import(), {x})[0], {1, 1, 1, 4}, {10, 12.5, 17.5, 20});
  // align_corners=True: the ends map to the ends.
  auto ac = resize(2, {}, {1, 1, 1, 3}, {{"mode", "linear"}, {"coordinate_transformation_mode", "align_corners"}});
  expect_values(run(ac.import(), {x})[0], {1, 1, 1, 3}, {10, 15, 20});
  // Downsampling to one element: pytorch_half_pixel samples index 0.
  auto one = resize(2, {}, {1, 1, 1, 1}, {{"mode", "linear"}, {"coordinate_transformation_mode", "pytorch_half_pixel"}});
  expect_values(run(one.import(), {x})[0], {1, 1, 1, 1}, {10});
}

TEST(OnnxImportResize, RefusesCubicAndCropNamingTheNode) {
  const std::string e = import_error(resize(2, {1, 1, 1, 2}, {}, {{"mode", "cubic"}}));
  EXPECT_HAS(e, "node 0 'rs' (Resize)");
  EXPECT_HAS(e, "mode 'cubic'");
  EXPECT_HAS(import_error(resize(2, {1, 1, 1, 2}, {}, {{"coordinate_transformation_mode", "tf_crop_and_resize"}})), "tf_crop_and_resize");
}

}  // namespace
}  // namespace reprokit::testing
