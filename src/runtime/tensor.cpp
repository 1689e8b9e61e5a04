// Tensor: strided storage, element access through doubles, and f16/bf16 rounding.
#include "reprokit/runtime/tensor.h"

#include <cmath>
#include <cstring>

#include "reprokit/ir/errors.h"
#include "strided_walk.h"

namespace reprokit {

uint16_t float_to_half_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));  // inf / nan
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow to inf
  if (e <= 0) {  // subnormal half (or zero)
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // may carry into the exponent: correct
  return static_cast<uint16_t>(half);
}

float half_bits_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0x1f) {
    x = sign | 0x7f800000u | (mant << 13);
  } else if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do { ++e; mant <<= 1; } while (!(mant & 0x400u));
      x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else {
    x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t float_to_bf16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

float bf16_bits_to_float(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

double round_to_dtype(double x, DType dtype) {
  switch (dtype) {
    case DType::f16: return half_bits_to_float(float_to_half_bits(static_cast<float>(x)));
    case DType::bf16: return bf16_bits_to_float(float_to_bf16_bits(static_cast<float>(x)));
    case DType::f32: return static_cast<float>(x);
    case DType::f64: return x;
    case DType::i32: return std::isfinite(x) ? static_cast<double>(static_cast<int32_t>(static_cast<int64_t>(x))) : 0.0;
    case DType::i64: return std::isfinite(x) ? static_cast<double>(static_cast<int64_t>(x)) : 0.0;
    case DType::boolean: return x != 0 ? 1.0 : 0.0;
  }
  return x;
}

namespace {

double load(const uint8_t* p, DType t) {
  switch (t) {
    case DType::f16: { uint16_t h; std::memcpy(&h, p, 2); return half_bits_to_float(h); }
    case DType::bf16: { uint16_t h; std::memcpy(&h, p, 2); return bf16_bits_to_float(h); }
    case DType::f32: { float f; std::memcpy(&f, p, 4); return f; }
    case DType::f64: { double d; std::memcpy(&d, p, 8); return d; }
    case DType::i32: { int32_t i; std::memcpy(&i, p, 4); return i; }
    case DType::i64: { int64_t i; std::memcpy(&i, p, 8); return static_cast<double>(i); }
    case DType::boolean: return *p ? 1.0 : 0.0;
  }
  return 0;
}

void store(uint8_t* p, DType t, double v) {
  switch (t) {
    case DType::f16: { uint16_t h = float_to_half_bits(static_cast<float>(v)); std::memcpy(p, &h, 2); break; }
    case DType::bf16: { uint16_t h = float_to_bf16_bits(static_cast<float>(v)); std::memcpy(p, &h, 2); break; }
    case DType::f32: { float f = static_cast<float>(v); std::memcpy(p, &f, 4); break; }
    case DType::f64: std::memcpy(p, &v, 8); break;
    case DType::i32: { int32_t i = static_cast<int32_t>(std::isfinite(v) ? static_cast<int64_t>(v) : 0); std::memcpy(p, &i, 4); break; }
    case DType::i64: { int64_t i = std::isfinite(v) ? static_cast<int64_t>(v) : 0; std::memcpy(p, &i, 8); break; }
    case DType::boolean: *p = v != 0 ? 1 : 0; break;
  }
}

}  // namespace

Tensor Tensor::zeros(DType dtype, const Shape& shape) {
  return empty_strided(dtype, shape, contiguous_strides(shape));
}

Tensor Tensor::empty_strided(DType dtype, const Shape& shape, const Shape& strides) {
  if (strides.size() != shape.size()) throw InternalError("empty_strided: rank mismatch");
  int64_t span = 1;
  bool empty = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) empty = true;
    if (strides[i] < 0) throw UserError("negative strides are not supported");
    span += (shape[i] - 1) * strides[i];
  }
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.strides_ = strides;
  t.storage_ = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(empty ? 0 : span) * dtype_size(dtype));
  return t;
}

Tensor Tensor::from_doubles(DType dtype, const Shape& shape, const std::vector<double>& values) {
  Tensor t = zeros(dtype, shape);
  if (static_cast<int64_t>(values.size()) != t.numel()) throw InternalError("from_doubles: size mismatch");
  size_t es = dtype_size(dtype);
  uint8_t* p = t.storage_->data();
  for (size_t i = 0; i < values.size(); ++i) store(p + i * es, dtype, values[i]);
  return t;
}

bool Tensor::is_contiguous() const { return strides_ == contiguous_strides(shape_); }

static int64_t storage_index(const Shape& shape, const Shape& strides, int64_t flat) {
  int64_t off = 0;
  for (size_t d = shape.size(); d-- > 0;) {
    int64_t i = flat % shape[d];
    flat /= shape[d];
    off += i * strides[d];
  }
  return off;
}

double Tensor::get(int64_t i) const {
  int64_t off = is_contiguous() ? i : storage_index(shape_, strides_, i);
  return load(data() + off * static_cast<int64_t>(dtype_size(dtype_)), dtype_);
}

void Tensor::set(int64_t i, double v) {
  int64_t off = is_contiguous() ? i : storage_index(shape_, strides_, i);
  store(data() + off * static_cast<int64_t>(dtype_size(dtype_)), dtype_, v);
}

std::vector<double> Tensor::to_doubles() const {
  std::vector<double> out(static_cast<size_t>(numel()));
  size_t es = dtype_size(dtype_);
  if (is_contiguous()) {
    const uint8_t* p = data();
    for (size_t i = 0; i < out.size(); ++i) out[i] = load(p + i * es, dtype_);
    return out;
  }
  walk_strided(shape_, strides_, 0, [&](int64_t i, int64_t off) {
    out[static_cast<size_t>(i)] = load(data() + off * static_cast<int64_t>(es), dtype_);
  });
  return out;
}

Tensor Tensor::contiguous() const {
  if (is_contiguous() && offset_ == 0) return *this;
  return from_doubles(dtype_, shape_, to_doubles());
}

Tensor Tensor::to(DType dtype) const { return from_doubles(dtype, shape_, to_doubles()); }

}  // namespace reprokit
