// Reference kernels of scans and sorts along one dim: cumsum and cumprod (floating values
// accumulate in double, integers in wrapping int64 as PyTorch's), sort and argsort (stable),
// topk and topk_indices (the first k of the stable sort). NaN counts as the largest value, as in
// torch.sort.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernel_util.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/op_semantics.h"

namespace reprokit::kernels {

namespace {

// The flat index of element j of line `line` (outer-major) of `l`.
size_t at(const ScanLines& l, int64_t line, int64_t j) {
  int64_t o = line / l.inner, i = line % l.inner;
  return static_cast<size_t>((o * l.length + j) * l.inner + i);
}

Values cumulative(const Node& n, const Values& x, const Shape& out) {
  ScanLines l = scan_lines(n, x.shape);
  const bool product = n.op == Op::cumprod;
  const int64_t lines = l.outer * l.inner;
  if (!is_floating(n.type.dtype)) {
    std::vector<int64_t> r(x.size());
    for (int64_t line = 0; line < lines; ++line) {
      uint64_t acc = product ? 1 : 0;  // wraps, as int64 arithmetic in PyTorch
      for (int64_t j = 0; j < l.length; ++j) {
        auto v = static_cast<uint64_t>(x.as_int(at(l, line, j)));
        acc = product ? acc * v : acc + v;
        r[at(l, line, j)] = static_cast<int64_t>(acc);
      }
    }
    return Values::ints(n.type.dtype, out, std::move(r));
  }
  std::vector<double> r(x.size());
  for (int64_t line = 0; line < lines; ++line) {
    double acc = product ? 1.0 : 0.0;
    for (int64_t j = 0; j < l.length; ++j) {
      double v = x.as_double(at(l, line, j));
      acc = product ? acc * v : acc + v;
      r[at(l, line, j)] = acc;
    }
  }
  return Values::floats(n.type.dtype, out, std::move(r));
}

// Whether a sorts strictly before b in ascending order, NaN last (the largest).
bool before(double a, double b) {
  if (std::isnan(a)) return false;
  return std::isnan(b) || a < b;
}

// sort, argsort, topk, topk_indices: each line's positions stably sorted, the first `keep` of them
// gathered (values) or returned (indices).
Values sorted(const Node& n, const Values& x, const Shape& out) {
  ScanLines l = scan_lines(n, x.shape);
  const bool topk = n.op == Op::topk || n.op == Op::topk_indices;
  const bool indices = n.op == Op::argsort || n.op == Op::topk_indices;
  const bool descending = orders_descending(n);
  const int64_t keep = topk ? topk_k(n, x.shape) : l.length;
  const int64_t lines = l.outer * l.inner;
  ScanLines o = l;  // the result's lines: `keep` long
  o.length = keep;
  std::vector<int64_t> order(static_cast<size_t>(l.length)), idx(static_cast<size_t>(lines * keep));
  for (int64_t line = 0; line < lines; ++line) {
    std::iota(order.begin(), order.end(), int64_t{0});
    auto value = [&](int64_t j) { return x.as_double(at(l, line, j)); };
    if (x.is_int()) {  // exact: int64 values past 2^53 compare as integers
      auto iv = [&](int64_t j) { return x.i[at(l, line, j)]; };
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return descending ? iv(a) > iv(b) : iv(a) < iv(b); });
    } else {
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return descending ? before(value(b), value(a)) : before(value(a), value(b)); });
    }
    for (int64_t j = 0; j < keep; ++j) idx[at(o, line, j)] = order[static_cast<size_t>(j)];
  }
  if (indices) return Values::ints(n.type.dtype, out, std::move(idx));
  std::vector<int64_t> map(idx.size());
  for (int64_t line = 0; line < lines; ++line)
    for (int64_t j = 0; j < keep; ++j) map[at(o, line, j)] = static_cast<int64_t>(at(l, line, idx[at(o, line, j)]));
  return take(x, map, n.type.dtype, out);
}

}  // namespace

Values scan(const Node& n, const std::vector<Values>& a, const Shape& out) {
  if (n.op == Op::cumsum || n.op == Op::cumprod) return cumulative(n, a[0], out);
  return sorted(n, a[0], out);
}

}  // namespace reprokit::kernels
