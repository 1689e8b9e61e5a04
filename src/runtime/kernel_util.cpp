// The kernel registry and index helpers of the reference kernels.
#include "kernel_util.h"

#include <map>

namespace reprokit::kernels {

static std::map<std::string, Kernel, std::less<>>& registry() {
  static std::map<std::string, Kernel, std::less<>> r = [] {
    std::map<std::string, Kernel, std::less<>> m;
    for (auto list : {pointwise_kernels(), reduction_kernels(), linalg_kernels(), shape_kernels()})
      for (auto& [name, k] : list) m[name] = k;
    return m;
  }();
  return r;
}

const Kernel* find_kernel(std::string_view op) {
  auto& r = registry();
  auto it = r.find(op);
  return it == r.end() ? nullptr : &it->second;
}

std::vector<double> read_view(const std::vector<double>& src, const Shape& shape, const Shape& strides, int64_t offset) {
  int64_t n = numel(shape);
  std::vector<double> out(static_cast<size_t>(n));
  if (n == 0) return out;
  std::vector<int64_t> idx(shape.size(), 0);
  int64_t off = offset;
  for (int64_t i = 0; i < n; ++i) {
    out[static_cast<size_t>(i)] = src[static_cast<size_t>(off)];
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) { off += strides[d]; break; }
      off -= (shape[d] - 1) * strides[d];
      idx[d] = 0;
    }
  }
  return out;
}

std::vector<int64_t> broadcast_map(const Shape& out_shape, const Shape& in_shape) {
  // A view of `in` with stride 0 on broadcast dimensions, walked like read_view.
  Shape strides(out_shape.size(), 0);
  Shape in_strides = contiguous_strides(in_shape);
  size_t lead = out_shape.size() - in_shape.size();
  for (size_t d = 0; d < in_shape.size(); ++d)
    strides[lead + d] = in_shape[d] == 1 ? 0 : in_strides[d];
  int64_t n = numel(out_shape);
  std::vector<int64_t> out(static_cast<size_t>(n));
  if (n == 0) return out;
  std::vector<int64_t> idx(out_shape.size(), 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    out[static_cast<size_t>(i)] = off;
    for (size_t d = out_shape.size(); d-- > 0;) {
      if (++idx[d] < out_shape[d]) { off += strides[d]; break; }
      off -= (out_shape[d] - 1) * strides[d];
      idx[d] = 0;
    }
  }
  return out;
}

}  // namespace reprokit::kernels
