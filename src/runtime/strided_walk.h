// walk_strided: visits the elements of a strided view in C order with an odometer, so each step
// costs O(1) instead of an unravel per element. Shared by tensors and the reference kernels.
#pragma once
#include <cstdint>
#include <vector>

#include "reprokit/ir/tensor_type.h"

namespace reprokit {

// Calls f(flat_index, storage_offset) for every element of `shape` read through `strides`
// (in elements) from `offset`.
template <class F> void walk_strided(const Shape& shape, const Shape& strides, int64_t offset, F&& f) {
  int64_t n = numel(shape);
  if (n == 0) return;
  std::vector<int64_t> idx(shape.size(), 0);
  int64_t off = offset;
  for (int64_t i = 0; i < n; ++i) {
    f(i, off);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) {
        off += strides[d];
        break;
      }
      off -= (shape[d] - 1) * strides[d];
      idx[d] = 0;
    }
  }
}

}  // namespace reprokit
