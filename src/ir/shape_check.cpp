// Checked shape arithmetic (see shape_check.h).
#include "reprokit/ir/shape_check.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "reprokit/support/errors.h"

namespace reprokit {

int64_t checked_mul(int64_t a, int64_t b, std::string_view what) {
  int64_t r = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r) || r > kMaxTensorElements)
    throw VerifyError(fmt::format("{} is too large ({} x {}; the limit is {} elements)", what, a, b, kMaxTensorElements));
  return r;
}

int64_t checked_add(int64_t a, int64_t b, std::string_view what) {
  int64_t r = 0;
  if (a < 0 || b < 0 || __builtin_add_overflow(a, b, &r) || r > kMaxTensorElements)
    throw VerifyError(fmt::format("{} is too large ({} + {}; the limit is {} elements)", what, a, b, kMaxTensorElements));
  return r;
}

namespace {
bool numel_is_zero(const Shape& shape) { return std::find(shape.begin(), shape.end(), 0) != shape.end(); }
}  // namespace

void check_shape(const Shape& shape, std::string_view what) {
  if (shape.size() > 64) throw VerifyError(fmt::format("{} has rank {} (at most 64)", what, shape.size()));
  for (auto d : shape)
    if (d < 0) throw VerifyError(fmt::format("{} has a negative dimension: [{}]", what, fmt::join(shape, ", ")));
  // Multiply the dims, zeros counted as 1: a [0, 2^40, 2^40] tensor is empty, but its contiguous
  // strides (and its siblings of the same other dims) would overflow, and no dim may exceed the
  // limit on its own. (libFuzzer's npy target found [0, 90, 999999999, ...] overflowing strides.)
  int64_t n = 1;
  for (auto d : shape) {
    if (d > kMaxTensorElements)
      throw VerifyError(fmt::format("{} [{}] has a dimension over the limit of {} elements", what, fmt::join(shape, ", "), kMaxTensorElements));
    if (__builtin_mul_overflow(n, std::max<int64_t>(d, 1), &n) || n > kMaxTensorElements)
      throw VerifyError(fmt::format("{} [{}] has more than {} elements (the size limit{})", what, fmt::join(shape, ", "), kMaxTensorElements,
                                    numel_is_zero(shape) ? ", its dims other than 0 counted" : ""));
  }
}

void check_strides(const Shape& shape, const Shape& strides, std::string_view what) {
  if (strides.size() != shape.size()) throw VerifyError(fmt::format("{} has {} strides for rank {}", what, strides.size(), shape.size()));
  int64_t span = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (strides[i] < 0) throw VerifyError(fmt::format("{} has a negative stride: [{}]", what, fmt::join(strides, ", ")));
    if (shape[i] == 0) return;  // empty: no storage is read
    int64_t step = 0;
    if (__builtin_mul_overflow(shape[i] - 1, strides[i], &step) || __builtin_add_overflow(span, step, &span) || span > kMaxTensorElements)
      throw VerifyError(fmt::format("{} with strides [{}] spans more than {} elements of storage (the size limit)", what, fmt::join(strides, ", "),
                                    kMaxTensorElements));
  }
}

int64_t storage_span(const Shape& shape, const Shape& strides) {
  int64_t span = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) return 0;
    span += (shape[i] - 1) * strides[i];
  }
  return span;
}

}  // namespace reprokit
