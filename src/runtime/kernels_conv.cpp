// Reference kernels of convolution and pooling (NCHW, NCDHW): conv2d, conv3d (in tiles: conv_tiles.h), conv_transpose2d/3d, max_pool2d/3d,
// avg_pool2d/3d, adaptive_avg_pool2d and the pools' backward ops, as direct loops in double. They follow
// PyTorch's CPU kernels: a max pool's NaN wins and ties go to the first element of the window;
// an average pool divides by the padded window (count_include_pad) or the valid part of it.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "accumulation.h"
#include "conv_tiles.h"
#include "kernel_util.h"
#include "reprokit/support/errors.h"
#include "reprokit/support/parallel_for.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/op_semantics.h"

namespace reprokit::kernels {

namespace {

struct Dims {
  int64_t n, c, h, w;
  explicit Dims(const Shape& s) : n(s[0]), c(s[1]), h(s[2]), w(s[3]) {}
  int64_t at(int64_t b, int64_t ch, int64_t y, int64_t x) const { return ((b * c + ch) * h + y) * w + x; }
};

// The output columns [lo, hi) whose input column ox * stride + off lies inside [0, w).
std::pair<int64_t, int64_t> valid_columns(int64_t off, int64_t stride, int64_t w, int64_t ow) {
  int64_t lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
  int64_t hi = w - off <= 0 ? 0 : std::min(ow, (w - off - 1) / stride + 1);
  return {lo, std::max(lo, hi)};
}

// The product of dims [from, to) of s.
int64_t span(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < to; ++d) p *= s[d];
  return p;
}

// conv_transpose2d and conv_transpose3d, gathered: each output element sums, in (input channel,
// kernel index) order, every input element whose window tap lands on it, then adds the bias.
std::vector<double> conv_transpose_nd(const Node& n, const std::vector<Values>& a, const Shape& out) {
  const Values &x = a[0], &wt = a[1];
  const Window win = window_of(n, &wt.shape[2]);
  const int r = win.rank;
  const size_t rank = static_cast<size_t>(r) + 2;
  const int64_t groups = attr_int(n, "groups"), cg = x.shape[1] / groups, og = out[1] / groups;
  const int64_t in_plane = span(x.shape, 2, rank), out_plane = span(out, 2, rank), ktaps = span(wt.shape, 2, rank);
  std::vector<double> res(static_cast<size_t>(numel(out)), 0.0);
  parallel_for(out[0] * out[1], numel(out) * cg * ktaps > (int64_t{1} << 22), [&](int64_t plane_index) {
    const int64_t b = plane_index / out[1], oc = plane_index % out[1], g = oc / og;
    double* plane = res.data() + plane_index * out_plane;
    for (int64_t o = 0; o < out_plane; ++o) {
      int64_t pos[3] = {0, 0, 0}, rest = o;
      for (int d = r - 1; d >= 0; --d) {
        pos[d] = rest % out[static_cast<size_t>(d) + 2];
        rest /= out[static_cast<size_t>(d) + 2];
      }
      double acc = 0;
      for (int64_t ic = 0; ic < cg; ++ic) {
        const int64_t c = g * cg + ic;
        const double* image = x.f.data() + (b * x.shape[1] + c) * in_plane;
        const double* kernel = wt.f.data() + (c * og + oc % og) * ktaps;
        for (int64_t t = 0; t < ktaps; ++t) {
          int64_t kr = t, i = 0;
          int64_t k[3] = {0, 0, 0};
          for (int d = r - 1; d >= 0; --d) {
            k[d] = kr % wt.shape[static_cast<size_t>(d) + 2];
            kr /= wt.shape[static_cast<size_t>(d) + 2];
          }
          bool hit = true;
          for (int d = 0; d < r && hit; ++d) {
            const int64_t num = pos[d] + win.padding[d] - k[d] * win.dilation[d];
            hit = num >= 0 && num % win.stride[d] == 0 && num / win.stride[d] < x.shape[static_cast<size_t>(d) + 2];
            i = i * x.shape[static_cast<size_t>(d) + 2] + num / win.stride[d];
          }
          if (hit) acc += image[i] * kernel[t];
        }
      }
      plane[o] = acc + (a.size() > 2 ? a[2].f[static_cast<size_t>(oc)] : 0.0);
    }
  });
  return res;
}

// conv*_weight_grad: each weight element sums, in (batch, output position) order, the output
// gradient times the input element its tap read in the forward convolution.
std::vector<double> conv_weight_grad(const Node& n, const std::vector<Values>& a, const Shape& out) {
  const Values &g = a[0], &x = a[1];
  const Window win = window_of(n, &out[2]);
  const int r = win.rank;
  const size_t rank = static_cast<size_t>(r) + 2;
  const int64_t groups = attr_int(n, "groups"), cg = out[1], og = out[0] / groups;
  const int64_t in_plane = span(x.shape, 2, rank), g_plane = span(g.shape, 2, rank), ktaps = span(out, 2, rank);
  std::vector<double> res(static_cast<size_t>(numel(out)), 0.0);
  parallel_for(out[0] * cg, numel(g.shape) * cg * ktaps > (int64_t{1} << 22), [&](int64_t filter) {
    const int64_t oc = filter / cg, ic = filter % cg, c = oc / og * cg + ic;
    for (int64_t t = 0; t < ktaps; ++t) {
      int64_t k[3] = {0, 0, 0}, kr = t;
      for (int d = r - 1; d >= 0; --d) {
        k[d] = kr % out[static_cast<size_t>(d) + 2];
        kr /= out[static_cast<size_t>(d) + 2];
      }
      double acc = 0;
      for (int64_t b = 0; b < x.shape[0]; ++b) {
        const double* image = x.f.data() + (b * x.shape[1] + c) * in_plane;
        const double* grad = g.f.data() + (b * g.shape[1] + oc) * g_plane;
        for (int64_t o = 0; o < g_plane; ++o) {
          int64_t rest = o, i = 0, scale = 1;
          bool inside = true;
          for (int d = r - 1; d >= 0 && inside; --d) {
            const size_t sd = static_cast<size_t>(d) + 2;
            const int64_t y = rest % g.shape[sd] * win.stride[d] - win.padding[d] + k[d] * win.dilation[d];
            rest /= g.shape[sd];
            inside = y >= 0 && y < x.shape[sd];
            i += y * scale;
            scale *= x.shape[sd];
          }
          if (inside) acc += grad[o] * image[i];
        }
      }
      res[static_cast<size_t>(filter * ktaps + t)] = acc;
    }
  });
  return res;
}

// Calls f(output index, input index) for every element of every window (in window order),
// and done(output index, window divisor) after each window, plane by plane.
template <class F, class Done> void for_each_window(const Node& n, const Shape& in_shape, const Shape& out_shape, F f, Done done) {
  const Window win = window_of(n);
  const size_t rank = static_cast<size_t>(win.rank) + 2;
  const int64_t in_plane = span(in_shape, 2, rank), out_plane = span(out_shape, 2, rank);
  const bool avg = n.op == Op::avg_pool2d || n.op == Op::avg_pool2d_backward || n.op == Op::avg_pool3d || n.op == Op::avg_pool3d_backward;
  const bool include_pad = avg && attr_bool(n, "count_include_pad");
  for (int64_t plane = 0; plane < out_shape[0] * out_shape[1]; ++plane) {
    const int64_t ibase = plane * in_plane, obase = plane * out_plane;
    for_each_pool_window(
        win, include_pad, &in_shape[2], &out_shape[2], [&](int64_t oi, int64_t ii) { f(obase + oi, ibase + ii); },
        [&](int64_t oi, double div) { done(obase + oi, div); });
  }
}

// The input index each max-pool output takes its value from (first maximum; NaN wins); -1 for a
// window with no element (all of it padding, which dilation allows).
std::vector<int64_t> max_positions(const Node& n, const Values& x, const Shape& out) {
  std::vector<int64_t> arg(static_cast<size_t>(numel(out)), -1);
  for_each_window(
      n, x.shape, out,
      [&](int64_t oi, int64_t ii) {
        int64_t& best = arg[static_cast<size_t>(oi)];
        double v = x.f[static_cast<size_t>(ii)];
        if (best < 0 || (!std::isnan(x.f[static_cast<size_t>(best)]) && (std::isnan(v) || v > x.f[static_cast<size_t>(best)]))) best = ii;
      },
      [](int64_t, double) {});
  return arg;
}

}  // namespace

// conv2d and conv3d: each output element sums its taps in (input channel, kernel index) order,
// then adds the bias; the loops run a whole output row (the last spatial dim) per tap so that
// the inner loop is a plain axpy.
std::vector<double> conv_direct(const Node& n, const std::vector<Values>& a, const Shape& out, AccumulationOrder order) {
  const Values &x = a[0], &wt = a[1];
  const Window win = window_of(n, &wt.shape[2]);
  const int r = win.rank, last = r - 1;
  const size_t rank = static_cast<size_t>(r) + 2;
  const int64_t ic_n = x.shape[1], oc_n = out[1], in_w = x.shape[rank - 1], out_w = out[rank - 1];
  const int64_t in_plane = span(x.shape, 2, rank), out_plane = span(out, 2, rank), rows = out_plane / out_w, ktaps = span(wt.shape, 2, rank);
  const int64_t groups = attr_int(n, "groups"), cg = ic_n / groups, og = oc_n / groups;
  const bool exact = order == AccumulationOrder::exact;
  std::vector<double> res(static_cast<size_t>(numel(out)), 0.0);
  // Output planes are independent (each sums its own taps in the same order): side by side on
  // the machine's cores, with the same result as one after another.
  parallel_for(out[0] * oc_n, numel(out) * cg * ktaps > (int64_t{1} << 22), [&](int64_t plane_index) {
    const int64_t b = plane_index / oc_n, oc = plane_index % oc_n;
    const int64_t g = oc / og;
    double* plane = res.data() + plane_index * out_plane;
    // In another order each tap is one step of a StepSum over the plane (see accumulation.h).
    StepSum taps(order, exact ? 0 : out_plane, cg * ktaps, n.type.dtype == DType::f64);
    for (int64_t s = 0; s < cg * ktaps; ++s) {
      const int64_t tap = exact ? s : taps.step_at(s);
      const int64_t ic = tap / ktaps;
      int64_t k[3] = {0, 0, 0}, kr = tap % ktaps;
      for (int d = last; d >= 0; --d) {
        k[d] = kr % wt.shape[static_cast<size_t>(d) + 2];
        kr /= wt.shape[static_cast<size_t>(d) + 2];
      }
      double* step = exact ? plane : taps.open();
      const double w = wt.f[static_cast<size_t>((oc * cg + ic) * ktaps + tap % ktaps)];
      const int64_t off = k[last] * win.dilation[last] - win.padding[last];
      auto [lo, hi] = valid_columns(off, win.stride[last], in_w, out_w);
      const double* image = x.f.data() + (b * ic_n + g * cg + ic) * in_plane;
      for (int64_t row = 0; row < rows; ++row) {
        // The input row under output row `row`: its coordinates in the spatial dims but the last.
        int64_t in_row = 0, rest = row, scale = 1;
        bool inside = true;
        for (int d = last - 1; d >= 0 && inside; --d) {
          const size_t sd = static_cast<size_t>(d) + 2;
          const int64_t y = rest % out[sd] * win.stride[d] - win.padding[d] + k[d] * win.dilation[d];
          rest /= out[sd];
          inside = y >= 0 && y < x.shape[sd];
          in_row += y * scale;
          scale *= x.shape[sd];
        }
        if (!inside) continue;
        const double* src = image + in_row * in_w;
        double* dst = step + row * out_w;
        for (int64_t ox = lo; ox < hi; ++ox) dst[ox] += w * src[ox * win.stride[last] + off];
      }
      if (!exact) taps.close();
    }
    if (!exact) taps.finish(plane);
    if (a.size() > 2)
      for (int64_t k = 0; k < out_plane; ++k) plane[k] += a[2].f[static_cast<size_t>(oc)];
  });
  return res;
}

Values conv(const Node& n, const std::vector<Values>& a, const Shape& out, AccumulationOrder order) {
  DType dt = n.type.dtype;
  if (n.op == Op::conv2d || n.op == Op::conv3d)
    return Values::floats(dt, out, conv_tiles_apply(a[1]) ? conv_tiled(n, a, out, order) : conv_direct(n, a, out, order));
  if (n.op == Op::conv_transpose2d || n.op == Op::conv_transpose3d) return Values::floats(dt, out, conv_transpose_nd(n, a, out));
  // The input's gradient is the transposed convolution of grad with the same weight and window,
  // at x's size.
  if (n.op == Op::conv2d_input_grad || n.op == Op::conv3d_input_grad) return Values::floats(dt, out, conv_transpose_nd(n, {a[0], a[2]}, out));
  if (n.op == Op::conv2d_weight_grad || n.op == Op::conv3d_weight_grad) return Values::floats(dt, out, conv_weight_grad(n, a, out));
  if (n.op == Op::max_pool2d || n.op == Op::max_pool3d) {
    auto arg = max_positions(n, a[0], out);
    std::vector<double> r(arg.size());
    for (size_t k = 0; k < arg.size(); ++k) r[k] = arg[k] < 0 ? -INFINITY : a[0].f[static_cast<size_t>(arg[k])];  // as PyTorch
    return Values::floats(dt, out, std::move(r));
  }
  if (n.op == Op::avg_pool2d || n.op == Op::avg_pool3d) {
    std::vector<double> r(static_cast<size_t>(numel(out)), 0.0);
    for_each_window(
        n, a[0].shape, out, [&](int64_t oi, int64_t ii) { r[static_cast<size_t>(oi)] += a[0].f[static_cast<size_t>(ii)]; },
        [&](int64_t oi, double div) { r[static_cast<size_t>(oi)] /= div; });
    return Values::floats(dt, out, std::move(r));
  }
  if (n.op == Op::max_pool2d_backward || n.op == Op::max_pool3d_backward) {  // g flows to the position each output took its value from
    const Values &g = a[0], &x = a[1];
    auto arg = max_positions(n, x, g.shape);
    std::vector<double> r(x.f.size(), 0.0);
    for (size_t k = 0; k < arg.size(); ++k)
      if (arg[k] >= 0) r[static_cast<size_t>(arg[k])] += g.f[k];  // an empty window passes no gradient
    return Values::floats(dt, out, std::move(r));
  }
  if (n.op == Op::avg_pool2d_backward || n.op == Op::avg_pool3d_backward) {  // each window element receives g / divisor
    const Values &g = a[0], &x = a[1];
    std::vector<double> r(x.f.size(), 0.0);
    std::vector<int64_t> members;
    for_each_window(
        n, x.shape, g.shape, [&](int64_t, int64_t ii) { members.push_back(ii); },
        [&](int64_t oi, double div) {
          for (int64_t ii : members) r[static_cast<size_t>(ii)] += g.f[static_cast<size_t>(oi)] / div;
          members.clear();
        });
    return Values::floats(dt, out, std::move(r));
  }
  if (n.op == Op::adaptive_avg_pool2d) {
    Dims in(a[0].shape), o(out);
    std::vector<double> r(static_cast<size_t>(numel(out)));
    for (int64_t b = 0; b < o.n; ++b)
      for (int64_t ch = 0; ch < o.c; ++ch)
        for (int64_t oy = 0; oy < o.h; ++oy)
          for (int64_t ox = 0; ox < o.w; ++ox) {
            int64_t y0 = adaptive_start(oy, in.h, o.h), y1 = adaptive_end(oy, in.h, o.h);
            int64_t x0 = adaptive_start(ox, in.w, o.w), x1 = adaptive_end(ox, in.w, o.w);
            double acc = 0;
            for (int64_t y = y0; y < y1; ++y)
              for (int64_t xx = x0; xx < x1; ++xx) acc += a[0].f[static_cast<size_t>(in.at(b, ch, y, xx))];
            r[static_cast<size_t>(o.at(b, ch, oy, ox))] = acc / static_cast<double>((y1 - y0) * (x1 - x0));
          }
    return Values::floats(dt, out, std::move(r));
  }
  throw InternalError(fmt::format("reference kernels: '{}' is not a convolution or pooling op", op_name(n.op)));
}

}  // namespace reprokit::kernels
