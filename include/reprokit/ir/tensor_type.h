// TensorType: the full static metadata of a tensor value (dtype, shape, strides, device, grad).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "reprokit/ir/dtype.h"

namespace reprokit {

enum class Device { cpu, cuda };

using Shape = std::vector<int64_t>;

Shape contiguous_strides(const Shape& shape);
int64_t numel(const Shape& shape);

struct TensorType {
  DType dtype = DType::f32;
  Shape shape;
  Shape strides;  // empty means contiguous (C order)
  Device device = Device::cpu;
  bool requires_grad = false;

  int64_t numel() const { return reprokit::numel(shape); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  // The strides actually in effect (declared ones, or contiguous ones).
  Shape effective_strides() const;
  bool is_contiguous() const;
  bool operator==(const TensorType&) const = default;
  // "f32[8, 16]" plus " strides=[..]", " @cuda", " grad" where they apply: the .rk spelling.
  std::string str() const;
};

}  // namespace reprokit
