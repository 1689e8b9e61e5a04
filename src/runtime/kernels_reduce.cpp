// Reference kernels of reductions and normalizations: sum mean amax amin var argmax, softmax,
// log_softmax, layer_norm. All accumulate in double.
#include <cmath>
#include <limits>

#include "kernel_util.h"
#include "strided_walk.h"
#include "reprokit/ir/errors.h"
#include "reprokit/ir/op_registry.h"

namespace reprokit::kernels {

namespace {

std::vector<int64_t> reduced_dims(const Node& n, int64_t rank) {
  std::vector<int64_t> dims;
  if (auto d = attr_opt(n, n.op == "argmax" ? "dim" : "dims")) {
    for (auto x : d->as_ints()) dims.push_back(normalize_dim(x, rank));
  } else {
    for (int64_t i = 0; i < rank; ++i) dims.push_back(i);
  }
  return dims;
}

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
  group_of.assign(static_cast<size_t>(numel(in)), 0);
  walk_strided(in, view, 0, [&](int64_t i, int64_t off) { group_of[static_cast<size_t>(i)] = off; });
  return numel(kept_shape);
}

Kernel reduction(const char* which) {
  std::string kind = which;
  return [kind](const Node& n, const std::vector<Arg>& a, const Shape&) {
    const Arg& x = a[0];
    auto dims = reduced_dims(n, static_cast<int64_t>(x.shape.size()));
    std::vector<int64_t> group;
    int64_t groups = group_elements(x.shape, dims, group);
    int64_t count = groups ? numel(x.shape) / groups : 0;
    std::vector<double> acc(static_cast<size_t>(groups), 0.0);
    if (kind == "amax") acc.assign(acc.size(), -std::numeric_limits<double>::infinity());
    if (kind == "amin") acc.assign(acc.size(), std::numeric_limits<double>::infinity());
    std::vector<int64_t> arg(static_cast<size_t>(groups), -1);
    std::vector<int64_t> pos(static_cast<size_t>(groups), 0);  // position within the group (argmax)
    for (size_t i = 0; i < x.v.size(); ++i) {
      auto gi = static_cast<size_t>(group[i]);
      double v = x.v[i];
      if (kind == "sum" || kind == "mean" || kind == "var") acc[gi] += v;
      else if (kind == "amax") acc[gi] = std::isnan(v) || std::isnan(acc[gi]) ? NAN : std::max(acc[gi], v);
      else if (kind == "amin") acc[gi] = std::isnan(v) || std::isnan(acc[gi]) ? NAN : std::min(acc[gi], v);
      else if (kind == "argmax") {
        // First maximum; a NaN counts as the maximum (as torch.argmax).
        if (arg[gi] < 0 || (!std::isnan(acc[gi]) && (std::isnan(v) || v > acc[gi]))) {
          acc[gi] = v;
          arg[gi] = pos[gi];
        }
        ++pos[gi];
      }
    }
    if (kind == "mean")
      for (auto& v : acc) v /= static_cast<double>(count);
    if (kind == "var") {
      std::vector<double> mean = acc, ss(acc.size(), 0.0);
      for (auto& v : mean) v /= static_cast<double>(count);
      for (size_t i = 0; i < x.v.size(); ++i) {
        double d = x.v[i] - mean[static_cast<size_t>(group[i])];
        ss[static_cast<size_t>(group[i])] += d * d;
      }
      double denom = static_cast<double>(count - attr_int(n, "correction"));
      for (size_t g = 0; g < acc.size(); ++g) acc[g] = ss[g] / std::max(denom, 0.0);
    }
    if (kind == "argmax")
      for (size_t g = 0; g < acc.size(); ++g) acc[g] = static_cast<double>(arg[g]);
    return acc;
  };
}

// Visits the 1-D rows along `dim`: calls f(base offset, stride, length) for each row.
template <class F>
void for_each_row(const Shape& shape, int64_t dim, F f) {
  int64_t len = shape.empty() ? 1 : shape[static_cast<size_t>(dim)];
  int64_t inner = 1, outer = 1;
  for (size_t d = static_cast<size_t>(dim) + 1; d < shape.size(); ++d) inner *= shape[d];
  for (size_t d = 0; d < static_cast<size_t>(dim); ++d) outer *= shape[d];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) f(o * len * inner + i, inner, len);
}

Kernel softmax_kernel(bool log) {
  return [log](const Node& n, const std::vector<Arg>& a, const Shape&) {
    const Arg& x = a[0];
    std::vector<double> out(x.v.size());
    int64_t dim = normalize_dim(attr_int(n, "dim"), static_cast<int64_t>(x.shape.size()));
    for_each_row(x.shape, dim, [&](int64_t base, int64_t stride, int64_t len) {
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < len; ++j) m = std::max(m, x.v[static_cast<size_t>(base + j * stride)]);
      double s = 0;
      for (int64_t j = 0; j < len; ++j) s += std::exp(x.v[static_cast<size_t>(base + j * stride)] - m);
      for (int64_t j = 0; j < len; ++j) {
        double v = x.v[static_cast<size_t>(base + j * stride)] - m;
        out[static_cast<size_t>(base + j * stride)] = log ? v - std::log(s) : std::exp(v) / s;
      }
    });
    return out;
  };
}

std::vector<double> layer_norm(const Node& n, const std::vector<Arg>& a, const Shape&) {
  const Arg& x = a[0];
  int64_t group = numel(attr_ints(n, "normalized_shape"));
  double eps = attr_float(n, "eps");
  std::vector<double> out(x.v.size());
  for (size_t base = 0; base < x.v.size(); base += static_cast<size_t>(group)) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < group; ++j) mean += x.v[base + static_cast<size_t>(j)];
    mean /= static_cast<double>(group);
    for (int64_t j = 0; j < group; ++j) {
      double d = x.v[base + static_cast<size_t>(j)] - mean;
      var += d * d;
    }
    var /= static_cast<double>(group);
    double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < group; ++j) {
      auto sj = static_cast<size_t>(j);
      double v = (x.v[base + sj] - mean) * inv;
      if (a.size() > 1) v *= a[1].v[sj];
      if (a.size() > 2) v += a[2].v[sj];
      out[base + sj] = v;
    }
  }
  return out;
}

}  // namespace

KernelList reduction_kernels() {
  return {{"sum", reduction("sum")},       {"mean", reduction("mean")},       {"amax", reduction("amax")},
          {"amin", reduction("amin")},     {"var", reduction("var")},         {"argmax", reduction("argmax")},
          {"softmax", softmax_kernel(false)}, {"log_softmax", softmax_kernel(true)}, {"layer_norm", layer_norm}};
}

}  // namespace reprokit::kernels
