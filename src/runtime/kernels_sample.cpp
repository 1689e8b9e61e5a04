// Reference kernels of 2-D sampling: grid_sample (bilinear and nearest, each padding mode) and
// affine_grid, in double, written as PyTorch's scalar CPU kernels (GridSampler.h) compute them:
// the decompositions are checked against these.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kernel_util.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/op_semantics.h"
#include "reprokit/support/errors.h"

namespace reprokit::kernels {

namespace {

double clip(double x, int64_t size) { return std::min(static_cast<double>(size - 1), std::max(x, 0.0)); }

// x reflected into [twice_low / 2, twice_high / 2], as PyTorch's reflect_coordinates.
double reflect(double x, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return 0.0;
  const double min = static_cast<double>(twice_low) / 2, span = static_cast<double>(twice_high - twice_low) / 2;
  x = std::fabs(x - min);
  const double extra = std::fmod(x, span);
  return std::fmod(std::floor(x / span), 2.0) == 0 ? extra + min : span - extra + min;
}

// Where grid coordinate g (in [-1, 1] across the axis) samples an axis of `size` pixels.
double source_index(double g, int64_t size, const GridSample& s) {
  const auto n = static_cast<double>(size);
  double x = s.align_corners ? (g + 1) / 2 * (n - 1) : ((g + 1) * n - 1) / 2;
  if (s.padding == SamplePadding::zeros) return x;
  if (s.padding == SamplePadding::reflection) x = s.align_corners ? reflect(x, 0, 2 * (size - 1)) : reflect(x, -1, 2 * size - 1);
  return clip(x, size);
}

Values grid_sample(const Node& n, const Values& x, const Values& grid, const Shape& out) {
  const GridSample s = grid_sample_of(n, x.shape, grid.shape);
  const int64_t N = out[0], C = out[1], Ho = out[2], Wo = out[3], H = x.shape[2], W = x.shape[3];
  std::vector<double> r(static_cast<size_t>(numel(out)), 0.0);
  auto in = [&](int64_t b, int64_t c, double py, double px) {  // 0 outside the input
    if (!(px >= 0 && px < static_cast<double>(W) && py >= 0 && py < static_cast<double>(H))) return 0.0;
    return x.as_double(static_cast<size_t>(((b * C + c) * H + static_cast<int64_t>(py)) * W + static_cast<int64_t>(px)));
  };
  for (int64_t b = 0; b < N; ++b)
    for (int64_t i = 0; i < Ho; ++i)
      for (int64_t j = 0; j < Wo; ++j) {
        const size_t gk = static_cast<size_t>(((b * Ho + i) * Wo + j) * 2);
        const double ix = source_index(grid.as_double(gk), W, s), iy = source_index(grid.as_double(gk + 1), H, s);
        for (int64_t c = 0; c < C; ++c) {
          double v;
          if (s.mode == SampleMode::nearest) {
            v = in(b, c, std::nearbyint(iy), std::nearbyint(ix));  // half to even
          } else {
            const double x0 = std::floor(ix), y0 = std::floor(iy), x1 = x0 + 1, y1 = y0 + 1;
            // North-west, north-east, south-west, south-east, PyTorch's order of the sum.
            v = in(b, c, y0, x0) * ((x1 - ix) * (y1 - iy)) + in(b, c, y0, x1) * ((ix - x0) * (y1 - iy)) + in(b, c, y1, x0) * ((x1 - ix) * (iy - y0)) +
                in(b, c, y1, x1) * ((ix - x0) * (iy - y0));
          }
          r[static_cast<size_t>(((b * C + c) * Ho + i) * Wo + j)] = v;
        }
      }
  return Values::floats(n.type.dtype, out, std::move(r));
}

// grid[b, h, w] = theta[b] @ (x_w, y_h, 1), the base coordinates from affine_grid_base.
Values affine_grid(const Node& n, const Values& theta, const Shape& out) {
  const int64_t N = out[0], H = out[1], W = out[2];
  const bool align = attr_bool(n, "align_corners");
  std::vector<double> r(static_cast<size_t>(numel(out)));
  for (int64_t b = 0; b < N; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t w = 0; w < W; ++w)
        for (int64_t k = 0; k < 2; ++k) {
          auto t = [&](int64_t j) { return theta.as_double(static_cast<size_t>((b * 2 + k) * 3 + j)); };
          r[static_cast<size_t>(((b * H + h) * W + w) * 2 + k)] = t(0) * affine_grid_base(w, W, align) + t(1) * affine_grid_base(h, H, align) + t(2);
        }
  return Values::floats(n.type.dtype, out, std::move(r));
}

}  // namespace

Values sampling(const Node& n, const std::vector<Values>& a, const Shape& out) {
  if (n.op == Op::grid_sample) return grid_sample(n, a[0], a[1], out);
  if (n.op == Op::affine_grid) return affine_grid(n, a[0], out);
  throw InternalError(fmt::format("sampling kernel: op '{}'", op_name(n.op)));
}

}  // namespace reprokit::kernels
