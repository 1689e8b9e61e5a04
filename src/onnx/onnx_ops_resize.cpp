// The importer's handlers for Resize and Upsample (nearest and linear). The output size is known
// at import, so each resized axis becomes gathers of the input at source indices computed here:
// one gather for nearest, two blended with constant weights for linear (bilinear and trilinear
// are linear along each axis in turn). Every layer below needs nothing new, and the gradients are
// those of gather, mul and add.
#include <fmt/format.h>

#include <cmath>
#include <string>
#include <vector>

#include "handler_util.h"
#include "import_context.h"
#include "reprokit/support/errors.h"

namespace reprokit::onnx_detail {

namespace {

constexpr int64_t kMaxResizedDim = int64_t{1} << 24;

// Where output index `o` of an axis of `in` -> `out` elements samples the input, per ONNX's
// coordinate_transformation_mode; `scale` is the one the model gives (or out / in from sizes).
// align_corners divides by the resized length less one, which ONNX takes unrounded (in * scale)
// when the model gives scales.
double source_coordinate(const NodeCtx& c, const std::string& mode, int64_t o, int64_t in, int64_t out, double scale) {
  const double x = static_cast<double>(o);
  if (mode == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (mode == "align_corners") {
    const double resized = static_cast<double>(in) * scale;
    return out > 1 ? x * static_cast<double>(in - 1) / (resized - 1) : 0.0;
  }
  if (mode == "asymmetric") return x / scale;
  if (mode == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  c.unsupported(fmt::format("coordinate_transformation_mode '{}'", mode));
}

int64_t nearest_index(const NodeCtx& c, const std::string& rounding, double x, int64_t in) {
  double i;
  if (rounding == "round_prefer_floor") i = x - std::floor(x) == 0.5 ? std::floor(x) : std::round(x);
  else if (rounding == "round_prefer_ceil") i = x - std::floor(x) == 0.5 ? std::ceil(x) : std::round(x);
  else if (rounding == "floor") i = std::floor(x);
  else if (rounding == "ceil") i = std::ceil(x);
  else c.bad(fmt::format("nearest_mode '{}'", rounding));
  return std::clamp(static_cast<int64_t>(i), int64_t{0}, in - 1);
}

// A constant of x's dtype holding `w` along `axis` (1 elsewhere), to broadcast against x.
int weights_along(NodeCtx& c, DType dt, size_t rank, int64_t axis, const std::vector<double>& w) {
  Shape s(rank, 1);
  s[static_cast<size_t>(axis)] = static_cast<int64_t>(w.size());
  return c.const_value(Tensor::from_doubles(dt, s, w));
}

void resize(NodeCtx& c) {
  const bool upsample = c.n.op_type() == "Upsample";
  c.allow({"mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside", "extrapolation_value", "scales"});
  const std::string mode = c.attr_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "bilinear")
    c.unsupported(fmt::format("mode '{}' (reprokit imports nearest and linear)", mode));
  const bool linear = mode != "nearest";
  if (linear) require_float(c, 0);
  // Before opset 11 sampling is asymmetric, and Resize-10 / Upsample have no roi or sizes.
  const bool v11 = !upsample && c.opset() >= 11;
  const std::string coords = v11 ? c.attr_string("coordinate_transformation_mode", "half_pixel") : "asymmetric";
  const std::string rounding = v11 ? c.attr_string("nearest_mode", "round_prefer_floor") : "floor";
  if (coords == "tf_crop_and_resize") c.unsupported("coordinate_transformation_mode 'tf_crop_and_resize'");
  const Shape& in = c.shape(0);
  const size_t r = in.size();
  std::vector<double> scales(r, 1.0);
  Shape out = in;
  auto from_scales = [&](std::vector<double> s) {
    if (s.size() != r) c.bad(fmt::format("{} scales for an input of rank {}", s.size(), r));
    for (size_t k = 0; k < r; ++k) {
      if (!(s[k] > 0) || !std::isfinite(s[k])) c.bad(fmt::format("scale {} must be positive", s[k]));
      const double o = std::floor(static_cast<double>(in[k]) * s[k]);
      if (o > static_cast<double>(kMaxResizedDim)) c.unsupported(fmt::format("an output dim of {} (at most {})", o, kMaxResizedDim));
      out[k] = static_cast<int64_t>(o);
    }
    scales = std::move(s);
  };
  const int scales_input = v11 ? 2 : 1;
  if (v11 && c.has(3)) {
    std::vector<int64_t> sizes = c.need_ints(3, "sizes");
    if (sizes.size() != r) c.bad(fmt::format("{} sizes for an input of rank {}", sizes.size(), r));
    for (size_t k = 0; k < r; ++k) {
      if (sizes[k] < 1 || sizes[k] > kMaxResizedDim) c.bad(fmt::format("size {} must be in [1, {}]", sizes[k], kMaxResizedDim));
      out[k] = sizes[k];
      scales[k] = static_cast<double>(sizes[k]) / static_cast<double>(in[k]);
    }
  } else if (c.has(scales_input) && numel(c.shape(scales_input)) > 0) {
    from_scales(c.need_constant(scales_input, "scales").to_doubles());
  } else if (const auto* a = c.attr("scales")) {  // Upsample-7
    from_scales(std::vector<double>(a->floats().begin(), a->floats().end()));
  } else {
    c.bad("neither scales nor sizes are given");
  }
  for (size_t k = 0; k < r; ++k)
    if (out[k] < 1 || in[k] < 1) c.unsupported(fmt::format("resizing dim {} from {} to {} elements", k, in[k], out[k]));
  int y = c.value(0);
  const DType dt = c.dtype(0);
  for (size_t k = 0; k < r; ++k) {
    const auto axis = static_cast<int64_t>(k);
    if (out[k] == in[k] && scales[k] == 1.0) continue;
    std::vector<int64_t> i0(static_cast<size_t>(out[k])), i1(i0.size());
    std::vector<double> w0(i0.size()), w1(i0.size());
    for (int64_t o = 0; o < out[k]; ++o) {
      const double x = source_coordinate(c, coords, o, in[k], out[k], scales[k]);
      const auto j = static_cast<size_t>(o);
      if (!linear) {
        i0[j] = nearest_index(c, rounding, x, in[k]);
        continue;
      }
      // Linear: the two neighbours of x clamped into the input, as ONNX Runtime and PyTorch do.
      const double xc = std::clamp(x, 0.0, static_cast<double>(in[k] - 1));
      i0[j] = static_cast<int64_t>(std::floor(xc));
      i1[j] = std::min(i0[j] + 1, in[k] - 1);
      w1[j] = xc - static_cast<double>(i0[j]);
      w0[j] = 1.0 - w1[j];
    }
    if (!linear) {
      y = take_along(c, y, axis, i0);
      continue;
    }
    const int a = c.emit(Op::mul, {v(take_along(c, y, axis, i0)), v(weights_along(c, dt, r, axis, w0))});
    const int b = c.emit(Op::mul, {v(take_along(c, y, axis, i1)), v(weights_along(c, dt, r, axis, w1))});
    y = c.emit(Op::add, {v(a), v(b)});
  }
  if (y == c.value(0)) return c.pass(0, 0);
  c.set(0, y);
}

}  // namespace

const std::map<std::string, Handler, std::less<>>& resize_handlers() {
  static const std::map<std::string, Handler, std::less<>> table{
      {"Resize", resize},
      {"Upsample", resize},
  };
  return table;
}

}  // namespace reprokit::onnx_detail
