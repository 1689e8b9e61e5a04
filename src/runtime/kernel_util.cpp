// The kernel registry and index helpers of the reference kernels.
#include "kernel_util.h"

#include "strided_walk.h"

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
  std::vector<double> out(static_cast<size_t>(numel(shape)));
  walk_strided(shape, strides, offset, [&](int64_t i, int64_t off) { out[static_cast<size_t>(i)] = src[static_cast<size_t>(off)]; });
  return out;
}

std::vector<int64_t> broadcast_map(const Shape& out_shape, const Shape& in_shape) {
  // A view of `in` with stride 0 on broadcast dimensions.
  Shape strides(out_shape.size(), 0);
  Shape in_strides = contiguous_strides(in_shape);
  size_t lead = out_shape.size() - in_shape.size();
  for (size_t d = 0; d < in_shape.size(); ++d) strides[lead + d] = in_shape[d] == 1 ? 0 : in_strides[d];
  std::vector<int64_t> out(static_cast<size_t>(numel(out_shape)));
  walk_strided(out_shape, strides, 0, [&](int64_t i, int64_t off) { out[static_cast<size_t>(i)] = off; });
  return out;
}

}  // namespace reprokit::kernels
