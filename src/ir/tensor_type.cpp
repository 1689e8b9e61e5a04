// TensorType helpers and its .rk spelling.
#include "reprokit/ir/tensor_type.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace reprokit {

Shape contiguous_strides(const Shape& shape) {
  Shape s(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= std::max<int64_t>(shape[i], 1);
  }
  return s;
}

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

Shape TensorType::effective_strides() const { return strides.empty() ? contiguous_strides(shape) : strides; }

bool TensorType::is_contiguous() const { return strides.empty() || strides == contiguous_strides(shape); }

std::string TensorType::str() const {
  std::string s = fmt::format("{}[{}]", dtype_name(dtype), fmt::join(shape, ", "));
  if (!strides.empty()) s += fmt::format(" strides=[{}]", fmt::join(strides, ", "));
  if (device == Device::cuda) s += " @cuda";
  if (requires_grad) s += " grad";
  return s;
}

}  // namespace reprokit
