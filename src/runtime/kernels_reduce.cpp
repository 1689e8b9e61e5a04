// Reference kernels of reductions (sum mean amax amin var argmax) and normalizations (softmax,
// log_softmax, layer_norm). Floating values accumulate in double; integer sums, maxima and
// argmax stay exact in int64.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "accumulation.h"
#include "kernel_util.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/op_semantics.h"
#include "strided_walk.h"

namespace reprokit::kernels {

namespace {

// Groups the input's elements by output position: group_of[i] = flat index (in the reduced,
// keepdim-free shape) of input element i. Returns the number of groups.
int64_t group_elements(const Shape& in, const std::vector<int64_t>& dims, std::vector<int64_t>& group_of) {
  Shape kept_shape;
  std::vector<bool> reduced(in.size(), false);
  for (auto d : dims) reduced[static_cast<size_t>(d)] = true;
  for (size_t d = 0; d < in.size(); ++d)
    if (!reduced[d]) kept_shape.push_back(in[d]);
  Shape view(in.size(), 0);  // out index strides per input dim (0 for reduced dims)
  Shape ks = contiguous_strides(kept_shape);
  for (size_t d = 0, k = 0; d < in.size(); ++d)
    if (!reduced[d]) view[d] = ks[k++];
  group_of = view_map(in, view, 0);
  return numel(kept_shape);
}

// First maximum; a NaN counts as the maximum (as torch.argmax).
template <class T> bool beats(T v, T best, bool first) {
  if (first) return true;
  if constexpr (std::is_floating_point_v<T>) return !std::isnan(best) && (std::isnan(v) || v > best);
  else return v > best;
}

Values int_reduction(const Node& n, const Values& x, const std::vector<int64_t>& group, int64_t groups, const Shape& out) {
  std::vector<int64_t> acc(static_cast<size_t>(groups), 0), arg(static_cast<size_t>(groups), -1), pos(static_cast<size_t>(groups), 0);
  std::vector<bool> seen(static_cast<size_t>(groups), false);
  for (size_t i = 0; i < x.i.size(); ++i) {
    auto g = static_cast<size_t>(group[i]);
    int64_t v = x.i[i];
    if (n.op == Op::sum) acc[g] = static_cast<int64_t>(static_cast<uint64_t>(acc[g]) + static_cast<uint64_t>(v));
    else if (n.op == Op::amax) acc[g] = seen[g] ? std::max(acc[g], v) : v;
    else if (n.op == Op::amin) acc[g] = seen[g] ? std::min(acc[g], v) : v;
    else if (beats(v, acc[g], !seen[g])) acc[g] = v, arg[g] = pos[g];
    seen[g] = true;
    ++pos[g];
  }
  return Values::ints(n.type.dtype, out, n.op == Op::argmax ? arg : acc);
}

// A floating sum (or mean) with its terms added in `order` (see accumulation.h).
std::vector<double> ordered_group_sums(const Values& x, const std::vector<int64_t>& group, int64_t groups, int64_t count, AccumulationOrder order,
                                       bool f64) {
  std::vector<double> terms(x.f.size()), acc(static_cast<size_t>(groups));
  std::vector<int64_t> pos(static_cast<size_t>(groups), 0);
  for (size_t i = 0; i < x.f.size(); ++i) {
    auto g = static_cast<size_t>(group[i]);
    terms[g * static_cast<size_t>(count) + static_cast<size_t>(pos[g]++)] = x.f[i];
  }
  for (size_t g = 0; g < acc.size(); ++g) acc[g] = ordered_sum(terms.data() + g * static_cast<size_t>(count), count, order, f64);
  return acc;
}

}  // namespace

Values reduction(const Node& n, const std::vector<Values>& a, const Shape& out, AccumulationOrder order) {
  const Values& x = a[0];
  auto dims = reduction_dims(n, static_cast<int64_t>(x.shape.size()));
  std::vector<int64_t> group;
  int64_t groups = group_elements(x.shape, dims, group);
  if (x.is_int()) {
    if (n.op == Op::mean || n.op == Op::var) throw InternalError("mean/var of an integer tensor passed verification");
    return int_reduction(n, x, group, groups, out);
  }
  int64_t count = groups ? numel(x.shape) / groups : 0;
  if (order != AccumulationOrder::exact && is_floating(n.type.dtype) && (n.op == Op::sum || n.op == Op::mean)) {
    auto acc = ordered_group_sums(x, group, groups, count, order, n.type.dtype == DType::f64);
    if (n.op == Op::mean)
      for (auto& v : acc) v /= static_cast<double>(count);
    return Values::floats(n.type.dtype, out, std::move(acc));
  }
  std::vector<double> acc(static_cast<size_t>(groups), 0.0);
  if (n.op == Op::amax) acc.assign(acc.size(), -std::numeric_limits<double>::infinity());
  if (n.op == Op::amin) acc.assign(acc.size(), std::numeric_limits<double>::infinity());
  std::vector<int64_t> arg(static_cast<size_t>(groups), -1), pos(static_cast<size_t>(groups), 0);
  for (size_t i = 0; i < x.f.size(); ++i) {
    auto gi = static_cast<size_t>(group[i]);
    double v = x.f[i];
    if (n.op == Op::amax) {
      acc[gi] = std::isnan(v) || std::isnan(acc[gi]) ? NAN : std::max(acc[gi], v);
    } else if (n.op == Op::amin) {
      acc[gi] = std::isnan(v) || std::isnan(acc[gi]) ? NAN : std::min(acc[gi], v);
    } else if (n.op == Op::argmax) {
      if (beats(v, acc[gi], arg[gi] < 0)) acc[gi] = v, arg[gi] = pos[gi];
      ++pos[gi];
    } else {  // sum, and the sums of mean and var
      acc[gi] += v;
    }
  }
  if (n.op == Op::argmax) return Values::ints(DType::i64, out, arg);
  if (n.op == Op::mean)
    for (auto& v : acc) v /= static_cast<double>(count);
  if (n.op == Op::var) {
    std::vector<double> ss(acc.size(), 0.0);
    for (size_t i = 0; i < x.f.size(); ++i) {
      auto g = static_cast<size_t>(group[i]);
      double d = x.f[i] - acc[g] / static_cast<double>(count);
      ss[g] += d * d;
    }
    double denom = static_cast<double>(count - attr_int(n, "correction"));
    for (size_t g = 0; g < acc.size(); ++g) acc[g] = ss[g] / std::max(denom, 0.0);
  }
  if (is_floating(n.type.dtype)) return Values::floats(n.type.dtype, out, std::move(acc));
  std::vector<int64_t> iv(acc.size());  // sum of bools
  for (size_t g = 0; g < acc.size(); ++g) iv[g] = static_cast<int64_t>(acc[g]);
  return Values::ints(n.type.dtype, out, std::move(iv));
}

namespace {

// Visits the 1-D rows along `dim`: calls f(base offset, stride, length) for each row.
template <class F> void for_each_row(const Shape& shape, int64_t dim, F f) {
  int64_t len = shape.empty() ? 1 : shape[static_cast<size_t>(dim)];
  int64_t inner = 1, outer = 1;
  for (size_t d = static_cast<size_t>(dim) + 1; d < shape.size(); ++d) inner *= shape[d];
  for (size_t d = 0; d < static_cast<size_t>(dim); ++d) outer *= shape[d];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) f(o * len * inner + i, inner, len);
}

std::vector<double> softmax(const Node& n, const std::vector<double>& x, const Shape& shape, bool log) {
  std::vector<double> out(x.size());
  int64_t dim = normalize_dim(attr_int(n, "dim"), static_cast<int64_t>(shape.size()));
  for_each_row(shape, dim, [&](int64_t base, int64_t stride, int64_t len) {
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < len; ++j) m = std::max(m, x[static_cast<size_t>(base + j * stride)]);
    double s = 0;
    for (int64_t j = 0; j < len; ++j) s += std::exp(x[static_cast<size_t>(base + j * stride)] - m);
    for (int64_t j = 0; j < len; ++j) {
      double v = x[static_cast<size_t>(base + j * stride)] - m;
      out[static_cast<size_t>(base + j * stride)] = log ? v - std::log(s) : std::exp(v) / s;
    }
  });
  return out;
}

std::vector<double> layer_norm(const Node& n, const std::vector<Values>& a) {
  const std::vector<double>& x = a[0].f;
  int64_t group = numel(attr_ints(n, "normalized_shape"));
  double eps = attr_float(n, "eps");
  std::vector<double> out(x.size());
  for (size_t base = 0; base < x.size(); base += static_cast<size_t>(group)) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < group; ++j) mean += x[base + static_cast<size_t>(j)];
    mean /= static_cast<double>(group);
    for (int64_t j = 0; j < group; ++j) {
      double d = x[base + static_cast<size_t>(j)] - mean;
      var += d * d;
    }
    var /= static_cast<double>(group);
    double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < group; ++j) {
      auto sj = static_cast<size_t>(j);
      double v = (x[base + sj] - mean) * inv;
      if (a.size() > 1) v *= a[1].f[sj];
      if (a.size() > 2) v += a[2].f[sj];
      out[base + sj] = v;
    }
  }
  return out;
}

// Inference form: (x - mean) / sqrt(var + eps) * weight + bias, per channel (dim 1).
std::vector<double> batch_norm(const Node& n, const std::vector<Values>& a) {
  const Values& x = a[0];
  int64_t channels = x.shape[1], inner = 1;
  for (size_t d = 2; d < x.shape.size(); ++d) inner *= x.shape[d];
  double eps = attr_float(n, "eps");
  std::vector<double> out(x.f.size());
  for (size_t i = 0; i < out.size(); ++i) {
    auto c = static_cast<size_t>((static_cast<int64_t>(i) / inner) % channels);
    double v = (x.f[i] - a[1].f[c]) / std::sqrt(a[2].f[c] + eps);
    if (a.size() > 3) v *= a[3].f[c];
    if (a.size() > 4) v += a[4].f[c];
    out[i] = v;
  }
  return out;
}

// group_norm and instance_norm: each (sample, group) of an [N, C, ...] input is one contiguous
// block of C / groups channels; normalized with its biased variance, then weight and bias per
// channel.
std::vector<double> group_norm(const Node& n, const std::vector<Values>& a) {
  const Values& x = a[0];
  const int64_t channels = x.shape[1], groups = norm_groups(n, x.shape);
  int64_t inner = 1;
  for (size_t d = 2; d < x.shape.size(); ++d) inner *= x.shape[d];
  // Of no channels instance_norm has no groups either: nothing to normalize.
  const auto block = groups > 0 ? static_cast<size_t>(channels / groups * inner) : size_t{0};
  const double eps = attr_float(n, "eps");
  std::vector<double> out(x.f.size());
  for (size_t base = 0; block > 0 && base < out.size(); base += block) {
    double mean = 0, var = 0;
    for (size_t j = 0; j < block; ++j) mean += x.f[base + j];
    mean /= static_cast<double>(block);
    for (size_t j = 0; j < block; ++j) var += (x.f[base + j] - mean) * (x.f[base + j] - mean);
    var /= static_cast<double>(block);
    const double inv = 1.0 / std::sqrt(var + eps);
    for (size_t j = 0; j < block; ++j) {
      const size_t i = base + j;
      const auto c = static_cast<size_t>((static_cast<int64_t>(i) / inner) % channels);
      double v = (x.f[i] - mean) * inv;
      if (a.size() > 1) v *= a[1].f[c];
      if (a.size() > 2) v += a[2].f[c];
      out[i] = v;
    }
  }
  return out;
}

}  // namespace

Values normalization(const Node& n, const std::vector<Values>& a, const Shape& out) {
  if (n.op == Op::layer_norm) return Values::floats(n.type.dtype, out, layer_norm(n, a));
  if (n.op == Op::batch_norm) return Values::floats(n.type.dtype, out, batch_norm(n, a));
  if (n.op == Op::group_norm || n.op == Op::instance_norm) return Values::floats(n.type.dtype, out, group_norm(n, a));
  return Values::floats(n.type.dtype, out, softmax(n, a[0].f, a[0].shape, n.op == Op::log_softmax));
}

}  // namespace reprokit::kernels
