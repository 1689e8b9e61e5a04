// Reference kernels of convolution and pooling (NCHW): conv2d, max_pool2d, avg_pool2d,
// adaptive_avg_pool2d and the pools' backward ops, as direct loops in double. They follow
// PyTorch's CPU kernels: a max pool's NaN wins and ties go to the first element of the window;
// an average pool divides by the padded window (count_include_pad) or the valid part of it.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "accumulation.h"
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

// Each output element sums its taps in (input channel, kernel row, kernel column) order, then adds
// the bias; the loops run a whole output row per tap so that the inner loop is a plain axpy.
std::vector<double> conv2d(const Node& n, const std::vector<Values>& a, const Shape& out, AccumulationOrder order) {
  const Values &x = a[0], &wt = a[1];
  Dims in(x.shape), o(out);
  const int64_t kh = wt.shape[2], kw = wt.shape[3];
  Window2d win = window_of(n, &wt.shape[2]);
  const int64_t groups = attr_int(n, "groups"), cg = in.c / groups, og = o.c / groups;
  const bool exact = order == AccumulationOrder::exact;
  std::vector<double> r(static_cast<size_t>(numel(out)), 0.0);
  // Output planes are independent (each sums its own taps in the same order): side by side on
  // the machine's cores, with the same result as one after another.
  parallel_for(o.n * o.c, numel(out) * cg * kh * kw > (int64_t{1} << 22), [&](int64_t plane_index) {
      const int64_t b = plane_index / o.c, oc = plane_index % o.c;
      const int64_t g = oc / og;
      double* plane = r.data() + o.at(b, oc, 0, 0);
      // In another order each tap is one step of a StepSum over the plane (see accumulation.h).
      StepSum taps(order, exact ? 0 : o.h * o.w, cg * kh * kw, n.type.dtype == DType::f64);
      for (int64_t s = 0; s < cg * kh * kw; ++s) {
        const int64_t tap = exact ? s : taps.step_at(s);
        const int64_t ic = tap / (kh * kw), i = tap / kw % kh, j = tap % kw;
        double* step = exact ? plane : taps.open();
        const double w = wt.f[static_cast<size_t>(((oc * cg + ic) * kh + i) * kw + j)];
        const int64_t off = j * win.dilation[1] - win.padding[1];
        auto [lo, hi] = valid_columns(off, win.stride[1], in.w, o.w);
        for (int64_t oy = 0; oy < o.h; ++oy) {
          const int64_t y = oy * win.stride[0] - win.padding[0] + i * win.dilation[0];
          if (y < 0 || y >= in.h) continue;
          const double* row = x.f.data() + in.at(b, g * cg + ic, y, 0);
          double* dst = step + oy * o.w;
          for (int64_t ox = lo; ox < hi; ++ox) dst[ox] += w * row[ox * win.stride[1] + off];
        }
        if (!exact) taps.close();
      }
      if (!exact) taps.finish(plane);
      if (a.size() > 2)
        for (int64_t k = 0; k < o.h * o.w; ++k) plane[k] += a[2].f[static_cast<size_t>(oc)];
  });
  return r;
}

// Calls f(output index, input index) for every element of every window (in window order),
// and done(output index, window divisor) after each window, plane by plane.
template <class F, class Done>
void for_each_window(const Node& n, const Shape& in_shape, const Shape& out_shape, F f, Done done) {
  Dims in(in_shape), o(out_shape);
  const Window2d win = window_of(n);
  const bool avg = n.op == Op::avg_pool2d || n.op == Op::avg_pool2d_backward;
  const bool include_pad = avg && attr_bool(n, "count_include_pad");
  for (int64_t plane = 0; plane < o.n * o.c; ++plane) {
    const int64_t ibase = plane * in.h * in.w, obase = plane * o.h * o.w;
    for_each_pool_window(
        win, include_pad, in.h, in.w, o.h, o.w, [&](int64_t oi, int64_t ii) { f(obase + oi, ibase + ii); },
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

Values conv(const Node& n, const std::vector<Values>& a, const Shape& out, AccumulationOrder order) {
  DType dt = n.type.dtype;
  if (n.op == Op::conv2d) return Values::floats(dt, out, conv2d(n, a, out, order));
  if (n.op == Op::max_pool2d) {
      auto arg = max_positions(n, a[0], out);
      std::vector<double> r(arg.size());
      for (size_t k = 0; k < arg.size(); ++k) r[k] = arg[k] < 0 ? -INFINITY : a[0].f[static_cast<size_t>(arg[k])];  // as PyTorch
      return Values::floats(dt, out, std::move(r));
    }
  if (n.op == Op::avg_pool2d) {
      std::vector<double> r(static_cast<size_t>(numel(out)), 0.0);
      for_each_window(n, a[0].shape, out, [&](int64_t oi, int64_t ii) { r[static_cast<size_t>(oi)] += a[0].f[static_cast<size_t>(ii)]; },
                      [&](int64_t oi, double div) { r[static_cast<size_t>(oi)] /= div; });
      return Values::floats(dt, out, std::move(r));
    }
  if (n.op == Op::max_pool2d_backward) {  // g flows to the position each output took its value from
      const Values &g = a[0], &x = a[1];
      auto arg = max_positions(n, x, g.shape);
      std::vector<double> r(x.f.size(), 0.0);
      for (size_t k = 0; k < arg.size(); ++k)
        if (arg[k] >= 0) r[static_cast<size_t>(arg[k])] += g.f[k];  // an empty window passes no gradient
      return Values::floats(dt, out, std::move(r));
    }
  if (n.op == Op::avg_pool2d_backward) {  // each window element receives g / divisor
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
