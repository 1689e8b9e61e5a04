// Tensor: a dense, strided CPU tensor of any reprokit dtype, with shared storage. Floating values
// are read and written as doubles; integer and bool values as int64, exactly.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "reprokit/ir/tensor_type.h"

namespace reprokit {

class Tensor {
 public:
  Tensor() = default;
  // A new zero-filled contiguous tensor.
  static Tensor zeros(DType dtype, const Shape& shape);
  // A new tensor with the given strides over a storage just large enough for them (zero-filled).
  // Shape and strides are checked (shape_check.h): UserError past the size limit.
  static Tensor empty_strided(DType dtype, const Shape& shape, const Shape& strides);
  // Contiguous tensor from doubles, rounding each value to dtype (f16/bf16 round to nearest even,
  // integers truncate toward zero, bool is x != 0).
  static Tensor from_doubles(DType dtype, const Shape& shape, const std::vector<double>& values);
  // Contiguous tensor from int64 values: integers wrap to the dtype's width as PyTorch's casts do,
  // bool is x != 0, floating dtypes round the value.
  static Tensor from_int64s(DType dtype, const Shape& shape, const std::vector<int64_t>& values);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int64_t offset() const { return offset_; }  // in elements
  int64_t numel() const { return reprokit::numel(shape_); }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  bool defined() const { return storage_ != nullptr; }
  bool is_contiguous() const;

  // Element at logical flat index i (C order over shape), as a double.
  double get(int64_t flat_index) const;
  void set(int64_t flat_index, double value);  // rounds to dtype
  // Element as int64: exact for integer and bool dtypes; floats convert as float_to_int64.
  int64_t get_int(int64_t flat_index) const;
  void set_int(int64_t flat_index, int64_t value);  // wraps to the dtype (see from_int64s)
  // All elements in logical C order.
  std::vector<double> to_doubles() const;
  std::vector<int64_t> to_int64s() const;
  // A contiguous copy (or this tensor when it already is contiguous with offset 0); exact.
  Tensor contiguous() const;
  // The same values in another layout: a new tensor with `strides`, bytes copied exactly.
  Tensor with_strides(const Shape& strides) const;
  // Same values converted to another dtype (contiguous); exact between integer dtypes.
  Tensor to(DType dtype) const;

  // Raw storage access (bytes), for the codegen runtime and .npy I/O.
  uint8_t* data() { return storage_->data() + offset_ * dtype_size(dtype_); }
  const uint8_t* data() const { return storage_->data() + offset_ * dtype_size(dtype_); }
  size_t storage_bytes() const { return storage_ ? storage_->size() : 0; }

 private:
  DType dtype_ = DType::f32;
  Shape shape_, strides_;
  int64_t offset_ = 0;
  std::shared_ptr<std::vector<uint8_t>> storage_;
};

// f16 / bf16 bit conversions (round to nearest even).
uint16_t float_to_half_bits(float f);
float half_bits_to_float(uint16_t h);
uint16_t float_to_bf16_bits(float f);
float bf16_bits_to_float(uint16_t b);
// Rounds a double through dtype and back (what storing into a tensor of dtype does).
double round_to_dtype(double x, DType dtype);
// A float to an integer as PyTorch's CPU casts do on x86: truncation toward zero, and NaN, inf or
// an out-of-range value give the minimum of the target type.
int64_t float_to_int64(double x);
int32_t float_to_int32(double x);
// int64 wrapped to the width of an integer dtype (i32 keeps the low 32 bits, bool is x != 0).
int64_t wrap_int(int64_t x, DType dtype);

}  // namespace reprokit
