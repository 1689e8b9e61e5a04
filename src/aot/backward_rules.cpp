// Backward rules, one per differentiable primitive op, with PyTorch's formulas (ties of
// maximum/amax split evenly, abs'(0) = 0, relu'(0) = 0, pow's masked zero cases).
#include "backward_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "reprokit/support/errors.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/op_semantics.h"

namespace reprokit::aot_detail {

Expr sum_to(Expr x, const Shape& shape) {
  const Shape s = x.shape();
  if (s == shape) return x;
  size_t lead = s.size() - shape.size();
  std::vector<int64_t> dims;
  for (size_t i = 0; i < s.size(); ++i)
    if (i < lead || (shape[i - lead] == 1 && s[i] != 1)) dims.push_back(static_cast<int64_t>(i));
  return reshape(dims.empty() ? x : sum(x, dims), shape);
}

Expr zeros(Expr like, const Shape& shape, DType dtype) {
  if (like.type().device == Device::cpu) return full(like.builder(), shape, AttrValue(0.0), dtype);
  Expr zero = cast(sum_all(slice(reshape(like, {-1}), 0, 0, 0)), dtype);
  if (shape.empty()) return zero;
  return expand(reshape(zero, Shape(shape.size(), 1)), shape);
}

namespace {

Expr none() { return Expr(); }

// 0, 1, ..., n-1 as i64 on the device of `like`, built by doubling with cat (log2(n) nodes): the
// op set has no iota. On cpu the start is a constant, which the partitioner recomputes.
Expr iota(Expr like, int64_t n) {
  Expr r = zeros(like, {1}, DType::i64);
  for (int64_t len = 1; len < n; len *= 2) r = cat({r, r + len}, 0);
  return r.shape()[0] == n ? r : slice(r, 0, 0, n);
}

// maximum/minimum: the operand that wins gets g; on a tie both get g/2 (as PyTorch). Either
// operand may be a literal.
Grads extremum(const std::vector<Arg>& a, Expr g, const std::vector<bool>& need, bool is_max) {
  Expr half = g * 0.5;
  Expr tie = eq(a[0], a[1]);
  Grads r{none(), none()};
  for (size_t i = 0; i < 2; ++i) {
    if (!need[i]) continue;
    Expr win = is_max ? gt(a[i], a[1 - i]) : lt(a[i], a[1 - i]);
    r[i] = where(win, g, where(tie, half, 0.0));
  }
  return r;
}

// amax/amin: g is split evenly among the elements equal to the result (PyTorch's amax backward).
Expr extremum_reduction(const Node& n, Expr x, Expr y, Expr g) {
  auto dims = reduction_dims(n, x.rank());
  Shape ks = keepdim_shape(x.shape(), dims);
  Expr mask = cast(eq(x, reshape(y, ks)), x.dtype());
  return mask * (reshape(g, ks) / sum(mask, dims));
}

// Undoes slice: g is spread to every step-th position from start and zeros fill the rest.
Expr unslice(const Node& n, const Shape& in, Expr g) {
  SliceBounds sb = slice_bounds(n, in);
  auto d = static_cast<size_t>(sb.dim);
  int64_t size = in[d];
  if (sb.length == 0) return zeros(g, in, g.dtype());
  auto with_dim = [&](Shape s, int64_t len) {
    s[d] = len;
    return s;
  };
  Expr r = g;
  int64_t len = sb.length;
  if (sb.step > 1) {
    // Interleave step-1 zeros after each element: [.., count, 1, ..] ++ zeros [.., count, step-1, ..].
    Expr u = unsqueeze(g, sb.dim + 1);
    Shape zs = u.shape();
    zs[d + 1] = sb.step - 1;
    len = sb.length * sb.step;
    r = reshape(cat({u, zeros(g, zs, g.dtype())}, sb.dim + 1), with_dim(g.shape(), len));
    if (len > size - sb.start) {
      len = size - sb.start;
      r = slice(r, sb.dim, 0, len);
    }
  }
  std::vector<Expr> parts;
  if (sb.start > 0) parts.push_back(zeros(g, with_dim(g.shape(), sb.start), g.dtype()));
  parts.push_back(r);
  if (size - sb.start - len > 0) parts.push_back(zeros(g, with_dim(g.shape(), size - sb.start - len), g.dtype()));
  return parts.size() == 1 ? r : cat(parts, sb.dim);
}

}  // namespace

// src (cut to index's size) summed at the positions index names along dim into zeros of shape
// `target`, without a scatter: a one-hot mask [.., J, M, ..] (index == iota) times src, summed
// over the indexed dim, then zero-padded where the index is smaller than the target.
Expr scatter_sum(Expr index, Expr src, const Shape& target, int64_t dim) {
  const int64_t rank = static_cast<int64_t>(target.size());
  if (rank == 0) return reshape(src, {});  // a 0-d target's only element (the index was checked) gets all of src
  dim = normalize_dim(dim, rank);
  const int64_t m = target[static_cast<size_t>(dim)];
  for (int64_t d = 0; d < rank; ++d)  // src may be larger than index: only its first elements count
    if (src.shape()[static_cast<size_t>(d)] > index.shape()[static_cast<size_t>(d)]) src = slice(src, d, 0, index.shape()[static_cast<size_t>(d)]);
  // Each index read through a gather of 0..m-1: negative ones count from the end, and one out of
  // range is refused with the gather's own check, as every backend does for a gather. (A one-hot
  // mask alone would silently drop it.)
  Shape positions(static_cast<size_t>(rank), 1), spread = index.shape();
  positions[static_cast<size_t>(dim)] = m;
  spread[static_cast<size_t>(dim)] = m;
  Expr idx = gather(expand(reshape(iota(src, m), positions), spread), index, dim);
  Shape iota_shape(static_cast<size_t>(rank + 1), 1);
  iota_shape[static_cast<size_t>(dim + 1)] = m;
  Expr hot = cast(eq(unsqueeze(idx, dim + 1), reshape(iota(src, m), iota_shape)), src.dtype());
  Expr r = sum(hot * unsqueeze(src, dim + 1), {dim}, false);
  for (int64_t d = 0; d < rank; ++d) {
    int64_t have = index.shape()[static_cast<size_t>(d)], want = target[static_cast<size_t>(d)];
    if (d == dim || have == want) continue;
    Shape zs = r.shape();
    zs[static_cast<size_t>(d)] = want - have;
    r = cat({r, zeros(src, zs, src.dtype())}, d);
  }
  return r;
}

namespace {

// gather backward: g summed back where the index took each element from.
Expr ungather(const Node& n, Expr x, Expr index, Expr g) { return scatter_sum(index, g, x.shape(), attr_int(n, "dim")); }

// embedding backward: one_hot(indices)^T @ g, with the one-hot built from eq against an iota.
Expr unembed(Expr w, Expr indices, Expr g) {
  int64_t rows = w.shape()[0], cols = w.shape()[1];
  Expr hot = reshape(cast(eq(unsqueeze(indices, -1), iota(g, rows)), g.dtype()), {-1, rows});
  return matmul(transpose(hot, 0, 1), reshape(g, {hot.shape()[0], cols}));
}

// x with spatial dim `dim` (2 or 3) spread by `step`: step - 1 zeros after each element, the
// trailing ones dropped (the zeros a strided convolution skipped).
Expr dilate(Expr x, int64_t dim, int64_t step) {
  if (step == 1) return x;
  Expr u = unsqueeze(x, dim + 1);
  Shape zs = u.shape();
  zs[static_cast<size_t>(dim + 1)] = step - 1;
  Shape merged = x.shape();
  int64_t len = merged[static_cast<size_t>(dim)];
  merged[static_cast<size_t>(dim)] = len * step;
  return slice(reshape(cat({u, zeros(x, zs, x.dtype())}, dim + 1), merged), dim, 0, (len - 1) * step + 1);
}

// cumsum and cumprod of x along `dim`, as the backward rules of the scans emit them.
Expr b_cumsum(Expr x, int64_t dim) { return x.builder().op(Op::cumsum, {x}, {{"dim", AttrValue(dim)}}); }
Expr b_cumprod(Expr x, int64_t dim) { return x.builder().op(Op::cumprod, {x}, {{"dim", AttrValue(dim)}}); }

// x reversed along `dim` (a gather with the index k-1, ..., 0: the op set has no flip).
Expr flip(Expr x, int64_t dim) {
  int64_t k = x.shape()[static_cast<size_t>(dim)];
  if (k == 1) return x;
  Shape ones(static_cast<size_t>(x.rank()), 1);
  ones[static_cast<size_t>(dim)] = k;
  Expr index = reshape((iota(x, k) * int64_t{-1}) + (k - 1), ones);
  return gather(x, expand(index, x.shape()), dim);
}

// cumsum backward: the reverse cumulative sum of g along dim (cumsum of g flipped, flipped back).
Expr uncumsum(const Node& n, Expr g) {
  if (g.rank() == 0) return g;
  int64_t dim = normalize_dim(attr_int(n, "dim"), g.rank());
  return flip(b_cumsum(flip(g, dim), dim), dim);
}

// cumprod backward, exact where x has zeros (no division): dx_j = sum over i >= j of g_i times
// the product of x_0..x_i without x_j. The products come from one cumprod of a [.., J, I, ..]
// tensor whose row j is x with x_j replaced by 1 (O(n^2) in the dim's length n).
Expr uncumprod(const Node& n, Expr x, Expr g) {
  if (x.rank() == 0) return g;
  int64_t dim = normalize_dim(attr_int(n, "dim"), x.rank());
  int64_t len = x.shape()[static_cast<size_t>(dim)];
  Shape rows(static_cast<size_t>(x.rank() + 1), 1), cols = rows;
  rows[static_cast<size_t>(dim)] = len;      // j
  cols[static_cast<size_t>(dim + 1)] = len;  // i (and the position within row j)
  Expr j = reshape(iota(g, len), rows), i = reshape(iota(g, len), cols);
  Shape square = x.shape();
  square.insert(square.begin() + dim, len);
  Expr without_j = where(eq(j, i), 1.0, expand(unsqueeze(x, dim), square));
  Expr products = b_cumprod(without_j, dim + 1);
  Expr later = cast(ge(i, j), g.dtype());  // i >= j
  return sum(products * later * unsqueeze(g, dim), {dim + 1}, false);
}

}  // namespace

// conv2d or conv3d (by the rank of x) with the given window.
Expr conv_nd(Expr x, Expr w, const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
             int64_t groups) {
  if (x.rank() == 4) return conv2d(x, w, stride, padding, dilation, groups);
  return x.builder().op(Op::conv3d, {x, w},
                        {{"stride", AttrValue::ints(stride)},
                         {"padding", AttrValue::ints(padding)},
                         {"dilation", AttrValue::ints(dilation)},
                         {"groups", AttrValue(groups)}});
}

// The weight gradient of a convolution of `input` whose output gradient is `grad` (window win,
// groups): [grad channels, input channels / groups, kernel...], as conv(input with channels as
// the batch, grad as the weight), cut to the kernel.
Expr conv_weight_grad(Expr input, Expr grad, const Window& win, int64_t groups, const Shape& kernel) {
  const Shape xs = input.shape();
  const int r = win.rank;
  const size_t rank = static_cast<size_t>(r) + 2;
  const int64_t N = xs[0], cg = xs[1] / groups;
  const Shape spatial(xs.begin() + 2, xs.end());
  const std::vector<int64_t> stride(win.stride, win.stride + r), padding(win.padding, win.padding + r), dilation(win.dilation, win.dilation + r);
  Shape split{N, groups, cg}, merged{cg, groups * N};
  split.insert(split.end(), spatial.begin(), spatial.end());
  merged.insert(merged.end(), spatial.begin(), spatial.end());
  std::vector<int64_t> order{2, 1, 0}, swap{1, 0};
  for (size_t d = 0; d < rank - 2; ++d) {
    order.push_back(static_cast<int64_t>(d) + 3);
    swap.push_back(static_cast<int64_t>(d) + 2);
  }
  Expr xc = reshape(permute(reshape(input, split), order), merged);
  Expr gw = permute(grad, swap);  // [O, N, spatial...]: per group, N input channels
  Expr dw = conv_nd(xc, gw, dilation, padding, stride, groups);
  for (int d = 0; d < r; ++d)
    if (dw.shape()[2 + static_cast<size_t>(d)] != kernel[static_cast<size_t>(d)]) dw = slice(dw, 2 + d, 0, kernel[static_cast<size_t>(d)]);
  return permute(dw, swap);
}

// conv_transpose2d's and conv_transpose3d's gradients: dx is the convolution of g with the same
// weight and window (cut to x's size), dw the weight gradient of that convolution with x as its
// output gradient ([in, out / groups, kernel...], the transposed op's weight layout).
Grads conv_transpose_grads(const Node& n, const std::vector<Arg>& a, Builder& b, Expr g, const std::vector<bool>& need) {
  Expr x = b.value(a[0].operand), w = b.value(a[1].operand);
  const Shape xs = x.shape(), ws = w.shape();
  const Window win = window_of(n, &ws[2]);
  const int r = win.rank;
  const int64_t groups = attr_int(n, "groups");
  const Shape kernel(ws.begin() + 2, ws.end());
  Grads res(a.size());
  if (need[0]) {
    Expr dx = conv_nd(g, w, std::vector<int64_t>(win.stride, win.stride + r), std::vector<int64_t>(win.padding, win.padding + r),
                      std::vector<int64_t>(win.dilation, win.dilation + r), groups);
    for (int d = 0; d < r; ++d)
      if (dx.shape()[2 + static_cast<size_t>(d)] != xs[2 + static_cast<size_t>(d)]) dx = slice(dx, 2 + d, 0, xs[2 + static_cast<size_t>(d)]);
    res[0] = dx;
  }
  if (need[1]) res[1] = conv_weight_grad(g, x, win, groups, kernel);
  if (a.size() > 2 && need[2]) {
    std::vector<int64_t> dims{0};
    for (int d = 0; d < r; ++d) dims.push_back(2 + d);
    res[2] = sum(g, dims, false);
  }
  return res;
}

// The input gradient of a convolution (window win, groups) of an input of shape xs with weight w,
// given its output gradient g, as a convolution (PyTorch's conv backward, without a transposed
// op): g dilated by the stride and padded, with the weight flipped and in/out swapped per group.
Expr conv_input_grad(Expr g, const Shape& xs, Expr w, const Window& win, int64_t groups) {
  const Shape ws = w.shape();
  const int r = win.rank;
  const size_t rank = static_cast<size_t>(r) + 2;
  const int64_t O = ws[0], cg = ws[1], og = O / groups;
  const Shape kernel(ws.begin() + 2, ws.end());
  const std::vector<int64_t> dilation(win.dilation, win.dilation + r);
  Expr gd = g;
  for (int d = 0; d < r; ++d) gd = dilate(gd, 2 + d, win.stride[d]);
  std::vector<int64_t> before(static_cast<size_t>(r)), after(static_cast<size_t>(r)), pads;
  for (int d = 0; d < r; ++d) {
    const size_t sd = static_cast<size_t>(d);
    int64_t span = win.dilation[d] * (win.kernel[d] - 1);
    int64_t full = gd.shape()[2 + sd] - 1 - 2 * win.padding[d] + span + 1;  // transposed conv size
    before[sd] = span - win.padding[d];
    after[sd] = span - win.padding[d] + (xs[2 + sd] - full);
  }
  for (int d = r - 1; d >= 0; --d) {  // pad's pairs run from the last dim backwards
    pads.push_back(std::max<int64_t>(before[static_cast<size_t>(d)], 0));
    pads.push_back(std::max<int64_t>(after[static_cast<size_t>(d)], 0));
  }
  // Negative amounts crop instead of pad.
  Expr p = pad(gd, pads);
  for (int d = 0; d < r; ++d) {
    const size_t sd = static_cast<size_t>(d);
    int64_t lo = before[sd] < 0 ? -before[sd] : 0;
    int64_t hi = p.shape()[2 + sd] - (after[sd] < 0 ? -after[sd] : 0);
    if (lo > 0 || hi < p.shape()[2 + sd]) p = slice(p, 2 + d, lo, hi);
  }
  Shape grouped{groups, og, cg}, swapped{groups * cg, og};
  grouped.insert(grouped.end(), kernel.begin(), kernel.end());
  swapped.insert(swapped.end(), kernel.begin(), kernel.end());
  Expr wt = reshape(transpose(reshape(w, grouped), 1, 2), swapped);
  for (int d = 0; d < r; ++d) wt = flip(wt, 2 + d);
  return conv_nd(p, wt, std::vector<int64_t>(rank - 2, 1), std::vector<int64_t>(rank - 2, 0), dilation, groups);
}

namespace {

// conv2d's and conv3d's gradients, as convolutions: dx as conv_input_grad, dw = conv(x with
// channels as the batch, g as the weight), both cut to size.
Grads conv_grads(const Node& n, const std::vector<Arg>& a, Builder& b, Expr g, const std::vector<bool>& need) {
  Expr x = b.value(a[0].operand), w = b.value(a[1].operand);
  const Shape xs = x.shape(), ws = w.shape();
  const Window win = window_of(n, &ws[2]);
  const int64_t groups = attr_int(n, "groups");
  Grads res(a.size());
  if (need[0]) res[0] = conv_input_grad(g, xs, w, win, groups);
  if (need[1]) res[1] = conv_weight_grad(x, g, win, groups, Shape(ws.begin() + 2, ws.end()));
  if (a.size() > 2 && need[2]) {
    std::vector<int64_t> dims{0};
    for (size_t d = 2; d < xs.size(); ++d) dims.push_back(static_cast<int64_t>(d));
    res[2] = sum(g, dims, false);
  }
  return res;
}

// A pool's backward op: grad, then the forward input, with the forward's attributes.
Expr pool_backward(Builder& b, Op op, const Node& n, Expr x, Expr g) {
  Attrs attrs = n.attrs;
  attrs.erase("group");
  return b.op(op, {g, x}, attrs);
}

Grads pow_grads(Builder& b, const std::vector<Arg>& a, Expr y, Expr g, const std::vector<bool>& need) {
  Grads r{none(), none()};
  bool base_is_value = a[0].operand.is_value(), exp_is_value = a[1].operand.is_value();
  if (need[0]) {
    // g * b * a^(b-1), zero where b == 0 (so 0^0 does not give 0 * inf).
    Expr x = b.value(a[0].operand);
    Arg bm1 = exp_is_value ? Arg(b.value(a[1].operand) - 1.0) : Arg(a[1].operand.literal.as_float() - 1.0);
    Expr d = (g * a[1]) * pow(x, bm1);
    if (exp_is_value) d = where(eq(b.value(a[1].operand), 0.0), 0.0, d);
    else if (a[1].operand.literal.as_float() == 0.0) d = g * 0.0;
    r[0] = d;
  }
  if (need[1]) {
    // g * a^b * log(a), zero where a == 0 and b >= 0 (PyTorch's mask for the 0 * -inf case).
    Expr e = b.value(a[1].operand);
    Arg log_a = base_is_value ? Arg(log(b.value(a[0].operand))) : Arg(std::log(a[0].operand.literal.as_float()));
    Expr d = (g * y) * log_a;
    Expr masked = where(ge(e, 0.0), 0.0, d);
    if (base_is_value) d = where(eq(b.value(a[0].operand), 0.0), masked, d);
    else if (a[0].operand.literal.as_float() == 0.0) d = masked;
    r[1] = d;
  }
  return r;
}

}  // namespace

Grads backward(Builder& b, const Node& n, const std::vector<Arg>& a, Expr y, Expr g, const std::vector<bool>& need) {
  auto val = [&](size_t i) { return b.value(a[i].operand); };
  auto want = [&](size_t i) { return i < need.size() && need[i]; };
  switch (n.op) {
    case Op::neg: return {-g};
    case Op::abs: return {where(gt(val(0), 0.0), g, 0.0) + where(lt(val(0), 0.0), -g, 0.0)};
    case Op::exp: return {g * y};
    case Op::log: return {g / val(0)};
    case Op::sqrt: return {g / (y * 2.0)};
    case Op::rsqrt: return {g * ((y * (y * y)) * -0.5)};
    case Op::reciprocal: return {g * -(y * y)};
    case Op::sin: return {g * cos(val(0))};
    case Op::cos: return {g * -sin(val(0))};
    case Op::tanh: return {g * (1.0 - y * y)};
    case Op::relu: return {where(gt(y, 0.0), g, 0.0)};
    case Op::erf: return {g * (exp(-(val(0) * val(0))) * M_2_SQRTPI)};
    case Op::add: return {g, g};
    case Op::sub: return {g, want(1) ? -g : none()};
    case Op::mul: return {want(0) ? g * a[1] : none(), want(1) ? g * a[0] : none()};
    case Op::div: return {want(0) ? g / a[1] : none(), want(1) ? -((g * a[0]) / (val(1) * a[1])) : none()};
    case Op::pow: return pow_grads(b, a, y, g, need);
    case Op::maximum: return extremum(a, g, need, true);
    case Op::minimum: return extremum(a, g, need, false);
    case Op::where: {
      Expr c = val(0);
      return {none(), want(1) ? where(c, g, 0.0) : none(), want(2) ? where(c, 0.0, g) : none()};
    }
    // The driver casts every gradient to its operand's dtype, which is all `to` needs.
    case Op::to:
    case Op::clone:
    case Op::contiguous: return {g};
    case Op::sum: {
      Expr x = val(0);
      return {expand(reshape(g, keepdim_shape(x.shape(), reduction_dims(n, x.rank()))), x.shape())};
    }
    case Op::amax:
    case Op::amin: return {extremum_reduction(n, val(0), y, g)};
    case Op::matmul:  // batch broadcasting is summed away by the driver's sum_to
      return {want(0) ? matmul(g, transpose(val(1), -1, -2)) : none(), want(1) ? matmul(transpose(val(0), -1, -2), g) : none()};
    case Op::reshape:
    case Op::squeeze:
    case Op::unsqueeze: return {reshape(g, val(0).shape())};
    case Op::permute:
    case Op::transpose: {
      auto dims = permutation(n, val(0).rank());
      std::vector<int64_t> inv(dims.size());
      for (size_t i = 0; i < dims.size(); ++i) inv[static_cast<size_t>(dims[i])] = static_cast<int64_t>(i);
      return {permute(g, inv)};
    }
    case Op::expand: return {sum_to(g, val(0).shape())};
    case Op::slice: return {unslice(n, val(0).shape(), g)};
    case Op::cat: {
      int64_t dim = normalize_dim(attr_int(n, "dim"), val(0).rank());
      Grads r(a.size());
      int64_t at = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        int64_t len = val(i).shape()[static_cast<size_t>(dim)];
        if (want(i)) r[i] = slice(g, dim, at, at + len);
        at += len;
      }
      return r;
    }
    case Op::clamp: {  // g where min <= x <= max (PyTorch's clamp backward), 0 elsewhere and at NaN
      Expr x = val(0), r = g;
      if (auto hi = attr_opt(n, "max")) r = where(le(x, hi->as_float()), r, 0.0);
      if (auto lo = attr_opt(n, "min")) r = where(ge(x, lo->as_float()), r, 0.0);
      if (!attr_opt(n, "min") && !attr_opt(n, "max")) return {g};
      return {r};
    }
    case Op::pad: {
      auto amounts = pad_amounts(n, val(0).rank());
      Expr r = g;
      for (size_t d = 0; d < amounts.size(); ++d)
        if (amounts[d].first || amounts[d].second) r = slice(r, static_cast<int64_t>(d), amounts[d].first, amounts[d].first + val(0).shape()[d]);
      return {r};
    }
    case Op::conv2d:
    case Op::conv3d: return conv_grads(n, a, b, g, need);
    case Op::conv_transpose2d:
    case Op::conv_transpose3d: return conv_transpose_grads(n, a, b, g, need);
    case Op::max_pool2d: return {pool_backward(b, Op::max_pool2d_backward, n, val(0), g)};
    case Op::avg_pool2d: return {pool_backward(b, Op::avg_pool2d_backward, n, val(0), g)};
    case Op::max_pool3d: return {pool_backward(b, Op::max_pool3d_backward, n, val(0), g)};
    case Op::avg_pool3d: return {pool_backward(b, Op::avg_pool3d_backward, n, val(0), g)};
    case Op::adaptive_avg_pool2d: {
      // Windows are uniform when the output size divides the input size: then it is an average
      // pool with kernel = stride = in / out, and so is its backward.
      Expr x = val(0);
      auto os = attr_ints(n, "output_size");
      if (os.size() == 1) os.push_back(os[0]);
      int64_t h = x.shape()[2], w = x.shape()[3];
      if (h % os[0] || w % os[1])
        throw UserError(
            fmt::format("node %{} = adaptive_avg_pool2d: the backward rule needs the output size [{}, {}] to divide the input size [{}, {}]", n.name,
                        os[0], os[1], h, w));
      Attrs attrs{{"kernel", AttrValue::ints({h / os[0], w / os[1]})}};
      return {b.op(Op::avg_pool2d_backward, {g, x}, attrs)};
    }
    case Op::embedding: return {unembed(val(0), val(1), g), none()};
    case Op::gather: return {ungather(n, val(0), val(1), g), none()};
    case Op::cumsum: return {uncumsum(n, g)};
    case Op::cumprod: return {uncumprod(n, val(0), g)};
    // Composite ops are decomposed before autodiff; the rest are not differentiable.
    case Op::input:
    case Op::sigmoid:
    case Op::silu:
    case Op::gelu:
    case Op::eq:
    case Op::ne:
    case Op::lt:
    case Op::le:
    case Op::gt:
    case Op::ge:
    case Op::mean:
    case Op::var:
    case Op::argmax:
    case Op::softmax:
    case Op::log_softmax:
    case Op::layer_norm:
    case Op::linear:
    case Op::full:
    case Op::batch_norm:
    case Op::max_pool2d_backward:
    case Op::avg_pool2d_backward:
    case Op::sort:
    case Op::argsort:
    case Op::topk:
    case Op::topk_indices:
    case Op::max_pool3d_backward:
    case Op::avg_pool3d_backward:
    case Op::group_norm:
    case Op::instance_norm:
    case Op::pixel_shuffle:
    case Op::pixel_unshuffle:
    case Op::einsum:
    case Op::conv2d_input_grad:
    case Op::conv2d_weight_grad:
    case Op::conv3d_input_grad:
    case Op::conv3d_weight_grad:
    case Op::grid_sample:
    case Op::affine_grid:
    case Op::scatter_add: break;
  }
  throw InternalError(fmt::format("autodiff: op '{}' has no backward rule", op_name(n.op)));
}

}  // namespace reprokit::aot_detail
