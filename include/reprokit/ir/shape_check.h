// Checked arithmetic for shapes, strides and element counts. Every shape that enters reprokit
// (parsed, read from JSON or .npy, or inferred) passes check_shape before anything is allocated,
// so later products of dims cannot overflow. The size limit is DESIGN.md's.
#pragma once
#include <cstdint>
#include <string_view>

#include "reprokit/ir/tensor_type.h"

namespace reprokit {

// The largest tensor reprokit accepts, in elements (2^31: 8 GiB of f32).
constexpr int64_t kMaxTensorElements = int64_t{1} << 31;

// a * b and a + b of non-negative sizes; VerifyError "<what> overflows" past kMaxTensorElements.
int64_t checked_mul(int64_t a, int64_t b, std::string_view what);
int64_t checked_add(int64_t a, int64_t b, std::string_view what);

// Dims are non-negative and the element count is at most kMaxTensorElements; VerifyError
// naming `what` otherwise.
void check_shape(const Shape& shape, std::string_view what);
// Strides (one per dim, non-negative) whose storage span stays within kMaxTensorElements.
void check_strides(const Shape& shape, const Shape& strides, std::string_view what);
// Elements of storage a strided layout spans (1 + sum (size - 1) * stride; 0 when empty), for
// shapes and strides that passed check_strides.
int64_t storage_span(const Shape& shape, const Shape& strides);

}  // namespace reprokit
