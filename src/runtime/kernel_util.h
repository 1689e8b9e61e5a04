// Shared pieces of the reference kernels: operand and result values (floating values as doubles,
// integer and bool values as int64, so integers stay exact), the kernels' entry points by op
// group, and index helpers for broadcasting and strided views.
#pragma once
#include <cstdint>
#include <vector>

#include "reprokit/ir/graph.h"
#include "reprokit/runtime/interpreter.h"
#include "reprokit/runtime/tensor.h"

namespace reprokit::kernels {

// A float as a value of an integer or bool dtype, as PyTorch casts it: bool is "nonzero" (0.5 is
// true), integers truncate toward zero.
inline int64_t to_integer_dtype(double x, DType dtype) { return dtype == DType::boolean ? int64_t{x != 0} : float_to_int64(x); }

// Values of one tensor in C order: `f` when floating, `i` otherwise.
struct Values {
  DType dtype = DType::f64;
  Shape shape;
  std::vector<double> f;
  std::vector<int64_t> i;

  bool is_int() const { return !is_floating(dtype); }
  size_t size() const { return is_int() ? i.size() : f.size(); }
  double as_double(size_t k) const { return is_int() ? static_cast<double>(i[k]) : f[k]; }
  int64_t as_int(size_t k) const { return is_int() ? i[k] : float_to_int64(f[k]); }
  static Values of(const Tensor& t);
  static Values floats(DType dtype, Shape shape, std::vector<double> v);
  static Values ints(DType dtype, Shape shape, std::vector<int64_t> v);
};

// Kernels by op group; each computes node n's result (dtype n.type.dtype, or f64 for floating
// results in float64 mode, shape `out`) from its operand values. Literal operands arrive as 0-d
// values (int64 for int and bool literals). Integer arithmetic wraps as PyTorch's does.
Values pointwise(const Node& n, const std::vector<Values>& a, const Shape& out);
Values reduction(const Node& n, const std::vector<Values>& a, const Shape& out, AccumulationOrder order);
Values normalization(const Node& n, const std::vector<Values>& a, const Shape& out);
Values linalg(const Node& n, const std::vector<Values>& a, const Shape& out, AccumulationOrder order);
Values conv(const Node& n, const std::vector<Values>& a, const Shape& out, AccumulationOrder order);  // conv and pooling
Values data_movement(const Node& n, const std::vector<Values>& a, const Shape& out);                  // shape, indexing
Values scan(const Node& n, const std::vector<Values>& a, const Shape& out);                           // cumsum, cumprod, sorts, top-k
Values creation(const Node& n, const Shape& out);
Values sampling(const Node& n, const std::vector<Values>& a, const Shape& out);  // grid_sample, affine_grid

// For each element of out_shape, the flat index of the element of `in` (broadcast to out_shape).
std::vector<int64_t> broadcast_map(const Shape& out_shape, const Shape& in_shape);
// Flat indices into contiguous data of a view (shape, strides in elements, offset).
std::vector<int64_t> view_map(const Shape& shape, const Shape& strides, int64_t offset);
// The values of `v` at `map` (a gather), keeping its representation; `dtype` is the result's.
Values take(const Values& v, const std::vector<int64_t>& map, DType dtype, const Shape& shape);

}  // namespace reprokit::kernels
