// Tensor: strided storage, element access through doubles, and f16/bf16 rounding.
#include "reprokit/runtime/tensor.h"

#include <cmath>
#include <cstring>
#include <memory>

#include "reprokit/support/errors.h"
#include "reprokit/ir/shape_check.h"
#include "reprokit/runtime/memory_budget.h"
#include "strided_walk.h"

namespace reprokit {

namespace half {
// The shared conversion source of repro_templates/, compiled here for the host.
#define RK_HD
inline uint32_t rk_bits_of(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}
inline float rk_float_of(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
#include "rk_half.h"
#undef RK_HD
}  // namespace half

uint16_t float_to_half_bits(float f) { return half::rk_f2h(f); }
float half_bits_to_float(uint16_t h) { return half::rk_h2f(h); }
uint16_t float_to_bf16_bits(float f) { return half::rk_f2b(f); }
float bf16_bits_to_float(uint16_t b) { return half::rk_b2f(b); }

int64_t float_to_int64(double x) {
  // [-2^63, 2^63): the doubles that truncate into int64.
  if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0)) return INT64_MIN;
  return static_cast<int64_t>(x);
}

int32_t float_to_int32(double x) {
  if (!(x > -2147483649.0 && x < 2147483648.0)) return INT32_MIN;
  return static_cast<int32_t>(x);
}

int64_t wrap_int(int64_t x, DType dtype) {
  const auto u = static_cast<uint64_t>(x);
  switch (dtype) {
    case DType::i32: return static_cast<int32_t>(static_cast<uint32_t>(u));
    case DType::i16: return static_cast<int16_t>(static_cast<uint16_t>(u));
    case DType::i8: return static_cast<int8_t>(static_cast<uint8_t>(u));
    case DType::u16: return static_cast<uint16_t>(u);
    case DType::u8: return static_cast<uint8_t>(u);
    case DType::boolean: return x != 0;
    default: return x;
  }
}

// A float into a narrow integer type: through int32 as x86's truncating conversion does, then
// wrapped to the width (what PyTorch's CPU casts give for values out of range).
static int64_t float_to_narrow(double x, DType dtype) { return wrap_int(float_to_int32(x), dtype); }

double round_to_dtype(double x, DType dtype) {
  switch (dtype) {
    case DType::f16: return half_bits_to_float(float_to_half_bits(static_cast<float>(x)));
    case DType::bf16: return bf16_bits_to_float(float_to_bf16_bits(static_cast<float>(x)));
    case DType::f32: return static_cast<float>(x);
    case DType::f64: return x;
    case DType::i32: return float_to_int32(x);
    case DType::i64: return static_cast<double>(float_to_int64(x));
    case DType::boolean: return x != 0 ? 1.0 : 0.0;
    case DType::i8:
    case DType::u8:
    case DType::i16:
    case DType::u16: return static_cast<double>(float_to_narrow(x, dtype));
  }
  return x;
}

namespace {

int64_t load_narrow(const uint8_t* p, DType t) {
  switch (t) {
    case DType::i8: return static_cast<int8_t>(*p);
    case DType::u8: return *p;
    case DType::i16: {
      int16_t i;
      std::memcpy(&i, p, 2);
      return i;
    }
    case DType::u16: {
      uint16_t i;
      std::memcpy(&i, p, 2);
      return i;
    }
    default: return 0;
  }
}

void store_narrow(uint8_t* p, DType t, int64_t v) {
  const int64_t w = wrap_int(v, t);
  if (dtype_size(t) == 1) {
    *p = static_cast<uint8_t>(static_cast<uint64_t>(w));
  } else {
    auto i = static_cast<uint16_t>(static_cast<uint64_t>(w));
    std::memcpy(p, &i, 2);
  }
}

double load(const uint8_t* p, DType t) {
  switch (t) {
    case DType::f16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return half_bits_to_float(h);
    }
    case DType::bf16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return bf16_bits_to_float(h);
    }
    case DType::f32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DType::f64: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
    case DType::i32: {
      int32_t i;
      std::memcpy(&i, p, 4);
      return i;
    }
    case DType::i64: {
      int64_t i;
      std::memcpy(&i, p, 8);
      return static_cast<double>(i);
    }
    case DType::boolean: return *p ? 1.0 : 0.0;
    case DType::i8:
    case DType::u8:
    case DType::i16:
    case DType::u16: return static_cast<double>(load_narrow(p, t));
  }
  return 0;
}

void store(uint8_t* p, DType t, double v) {
  switch (t) {
    case DType::f16: {
      uint16_t h = float_to_half_bits(static_cast<float>(v));
      std::memcpy(p, &h, 2);
      break;
    }
    case DType::bf16: {
      uint16_t h = float_to_bf16_bits(static_cast<float>(v));
      std::memcpy(p, &h, 2);
      break;
    }
    case DType::f32: {
      float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
      break;
    }
    case DType::f64: std::memcpy(p, &v, 8); break;
    case DType::i32: {
      int32_t i = float_to_int32(v);
      std::memcpy(p, &i, 4);
      break;
    }
    case DType::i64: {
      int64_t i = float_to_int64(v);
      std::memcpy(p, &i, 8);
      break;
    }
    case DType::boolean: *p = v != 0 ? 1 : 0; break;
    case DType::i8:
    case DType::u8:
    case DType::i16:
    case DType::u16: store_narrow(p, t, float_to_narrow(v, t)); break;
  }
}

int64_t load_int(const uint8_t* p, DType t) {
  switch (t) {
    case DType::i32: {
      int32_t i;
      std::memcpy(&i, p, 4);
      return i;
    }
    case DType::i64: {
      int64_t i;
      std::memcpy(&i, p, 8);
      return i;
    }
    case DType::boolean: return *p ? 1 : 0;
    case DType::i8:
    case DType::u8:
    case DType::i16:
    case DType::u16: return load_narrow(p, t);
    case DType::f16:
    case DType::bf16:
    case DType::f32:
    case DType::f64: return float_to_int64(load(p, t));
  }
  return 0;
}

void store_int(uint8_t* p, DType t, int64_t v) {
  switch (t) {
    case DType::i32: {
      auto i = static_cast<int32_t>(wrap_int(v, t));
      std::memcpy(p, &i, 4);
      break;
    }
    case DType::i64: std::memcpy(p, &v, 8); break;
    case DType::boolean: *p = v != 0 ? 1 : 0; break;
    case DType::i8:
    case DType::u8:
    case DType::i16:
    case DType::u16: store_narrow(p, t, v); break;
    case DType::f16:
    case DType::bf16:
    case DType::f32:
    case DType::f64: store(p, t, static_cast<double>(v)); break;
  }
}

}  // namespace

Tensor Tensor::zeros(DType dtype, const Shape& shape) { return empty_strided(dtype, shape, contiguous_strides(shape)); }

Tensor Tensor::empty_strided(DType dtype, const Shape& shape, const Shape& strides) {
  check_shape(shape, "a tensor");
  check_strides(shape, strides, "a tensor");
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.strides_ = strides;
  const size_t bytes = static_cast<size_t>(storage_span(shape, strides)) * dtype_size(dtype);
  reserve_tensor_bytes(bytes);  // the memory budget: a clear refusal rather than the OOM killer
  std::unique_ptr<std::vector<uint8_t>> storage;
  try {
    storage = std::make_unique<std::vector<uint8_t>>(bytes);
  } catch (...) {
    release_tensor_bytes(bytes);
    throw;
  }
  // From here the deleter releases the bytes (also when the shared_ptr's own allocation throws).
  t.storage_ = std::shared_ptr<std::vector<uint8_t>>(storage.release(), [bytes](std::vector<uint8_t>* v) {
    delete v;
    release_tensor_bytes(bytes);
  });
  return t;
}

Tensor Tensor::from_int64s(DType dtype, const Shape& shape, const std::vector<int64_t>& values) {
  Tensor t = zeros(dtype, shape);
  if (static_cast<int64_t>(values.size()) != t.numel()) throw InternalError("from_int64s: size mismatch");
  size_t es = dtype_size(dtype);
  uint8_t* p = t.storage_->data();
  for (size_t i = 0; i < values.size(); ++i) store_int(p + i * es, dtype, values[i]);
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

int64_t Tensor::get_int(int64_t i) const {
  int64_t off = is_contiguous() ? i : storage_index(shape_, strides_, i);
  return load_int(data() + off * static_cast<int64_t>(dtype_size(dtype_)), dtype_);
}

void Tensor::set_int(int64_t i, int64_t v) {
  int64_t off = is_contiguous() ? i : storage_index(shape_, strides_, i);
  store_int(data() + off * static_cast<int64_t>(dtype_size(dtype_)), dtype_, v);
}

std::vector<int64_t> Tensor::to_int64s() const {
  check_room_for(static_cast<size_t>(numel()) * sizeof(int64_t), "a value's copy as integers needs");
  std::vector<int64_t> out(static_cast<size_t>(numel()));
  size_t es = dtype_size(dtype_);
  walk_strided(shape_, strides_, 0,
               [&](int64_t i, int64_t off) { out[static_cast<size_t>(i)] = load_int(data() + off * static_cast<int64_t>(es), dtype_); });
  return out;
}

Tensor Tensor::with_strides(const Shape& strides) const {
  Tensor out = empty_strided(dtype_, shape_, strides);
  size_t es = dtype_size(dtype_);
  std::vector<int64_t> dst(static_cast<size_t>(numel()));
  walk_strided(shape_, strides, 0, [&](int64_t i, int64_t off) { dst[static_cast<size_t>(i)] = off; });
  walk_strided(shape_, strides_, 0, [&](int64_t i, int64_t off) {
    std::memcpy(out.data() + dst[static_cast<size_t>(i)] * static_cast<int64_t>(es), data() + off * static_cast<int64_t>(es), es);
  });
  return out;
}

std::vector<double> Tensor::to_doubles() const {
  check_room_for(static_cast<size_t>(numel()) * sizeof(double), "a value's copy as doubles needs");
  std::vector<double> out(static_cast<size_t>(numel()));
  size_t es = dtype_size(dtype_);
  if (is_contiguous()) {
    const uint8_t* p = data();
    for (size_t i = 0; i < out.size(); ++i) out[i] = load(p + i * es, dtype_);
    return out;
  }
  walk_strided(shape_, strides_, 0,
               [&](int64_t i, int64_t off) { out[static_cast<size_t>(i)] = load(data() + off * static_cast<int64_t>(es), dtype_); });
  return out;
}

Tensor Tensor::contiguous() const {
  if (is_contiguous() && offset_ == 0) return *this;
  return with_strides(contiguous_strides(shape_));
}

Tensor Tensor::to(DType dtype) const {
  if (is_floating(dtype_)) return from_doubles(dtype, shape_, to_doubles());
  return from_int64s(dtype, shape_, to_int64s());
}

}  // namespace reprokit
