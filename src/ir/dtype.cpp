// dtype names, sizes, categories and PyTorch's promotion lattice.
#include "reprokit/ir/dtype.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

namespace reprokit {

namespace {
constexpr std::array<std::pair<DType, std::string_view>, 11> kNames{{{DType::f16, "f16"},
                                                                     {DType::bf16, "bf16"},
                                                                     {DType::f32, "f32"},
                                                                     {DType::f64, "f64"},
                                                                     {DType::i32, "i32"},
                                                                     {DType::i64, "i64"},
                                                                     {DType::boolean, "bool"},
                                                                     {DType::i8, "i8"},
                                                                     {DType::u8, "u8"},
                                                                     {DType::i16, "i16"},
                                                                     {DType::u16, "u16"}}};

int category(DType t) { return t == DType::boolean ? 0 : is_integral(t) ? 1 : 2; }
}  // namespace

std::string_view dtype_name(DType t) {
  for (auto& [d, n] : kNames)
    if (d == t) return n;
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  for (auto& [d, n] : kNames)
    if (n == s) return d;
  return std::nullopt;
}

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::boolean:
    case DType::i8:
    case DType::u8: return 1;
    case DType::f16:
    case DType::bf16:
    case DType::i16:
    case DType::u16: return 2;
    case DType::f32:
    case DType::i32: return 4;
    case DType::f64:
    case DType::i64: return 8;
  }
  return 0;
}

bool is_floating(DType t) { return t == DType::f16 || t == DType::bf16 || t == DType::f32 || t == DType::f64; }
bool is_integral(DType t) { return !is_floating(t) && t != DType::boolean; }
bool is_unsigned(DType t) { return t == DType::u8 || t == DType::u16; }

int64_t dtype_min(DType t) {
  switch (t) {
    case DType::i8: return INT8_MIN;
    case DType::i16: return INT16_MIN;
    case DType::i32: return INT32_MIN;
    case DType::i64: return INT64_MIN;
    default: return 0;
  }
}

int64_t dtype_max(DType t) {
  switch (t) {
    case DType::i8: return INT8_MAX;
    case DType::u8: return UINT8_MAX;
    case DType::i16: return INT16_MAX;
    case DType::u16: return UINT16_MAX;
    case DType::i32: return INT32_MAX;
    case DType::i64: return INT64_MAX;
    default: return 1;
  }
}

// Two different integral dtypes, as torch.result_type: the narrowest that holds both ranges (u8
// with i8 is i16; u16, which PyTorch 1.13 lacks, with a signed type of its width or narrower is i32).
static DType promote_integral(DType a, DType b) {
  for (DType t : {DType::u8, DType::i8, DType::i16, DType::u16, DType::i32, DType::i64})
    if (dtype_min(t) <= std::min(dtype_min(a), dtype_min(b)) && dtype_max(t) >= std::max(dtype_max(a), dtype_max(b))) return t;
  return DType::i64;
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  int ca = category(a), cb = category(b);
  if (ca != cb) return ca > cb ? a : b;
  if (ca == 1) return promote_integral(a, b);
  // Both floating and different.
  if (a == DType::f64 || b == DType::f64) return DType::f64;
  return DType::f32;  // f16/bf16 with f32, or f16 with bf16
}

DType promote_with_scalar(DType tensor, ScalarKind scalar) {
  int cs = scalar == ScalarKind::boolean ? 0 : scalar == ScalarKind::integer ? 1 : 2;
  if (cs <= category(tensor)) return tensor;
  return cs == 1 ? DType::i64 : DType::f32;  // PyTorch's default int / float dtypes
}

double ulp_of(double x, DType t) {
  const int bits = t == DType::f16 ? 11 : t == DType::bf16 ? 8 : t == DType::f32 ? 24 : 53;  // precision, implicit bit included
  const int min_exp = t == DType::f16 ? -14 : t == DType::f64 ? -1022 : -126;
  const double a = std::fabs(x);
  if (!std::isfinite(a)) return 0;
  return std::ldexp(1.0, std::max(a > 0 ? std::ilogb(a) : min_exp, min_exp) - (bits - 1));
}

}  // namespace reprokit
