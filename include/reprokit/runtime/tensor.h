// Tensor: a dense, strided CPU tensor of any reprokit dtype, with shared storage.
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
  static Tensor empty_strided(DType dtype, const Shape& shape, const Shape& strides);
  // Contiguous tensor from doubles, rounding each value to dtype (f16/bf16 round to nearest even,
  // integers truncate toward zero, bool is x != 0).
  static Tensor from_doubles(DType dtype, const Shape& shape, const std::vector<double>& values);

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
  // All elements in logical C order.
  std::vector<double> to_doubles() const;
  // A contiguous copy (or this tensor when it already is contiguous with offset 0).
  Tensor contiguous() const;
  // Same values converted to another dtype (contiguous).
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

}  // namespace reprokit
