// Internal to rk_onnx: small helpers the op handlers share.
#pragma once
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "import_context.h"
#include "reprokit/ir/dtype.h"

namespace reprokit::onnx_detail {

inline std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

inline int64_t norm_axis(const NodeCtx& c, int64_t axis, int64_t rank, const char* what = "axis") {
  if (axis < -rank || axis >= rank) c.bad(fmt::format("{} {} is out of range for a tensor of rank {}", what, axis, rank));
  return axis < 0 ? axis + rank : axis;
}

inline AttrValue lit(double x) { return AttrValue(x); }
inline Operand flit(double x) { return Operand::scalar(AttrValue(x)); }
inline Operand v(int id) { return Operand::of(id); }
// A literal 0 (or `x`) of the kind matching dtype.
inline Operand typed_lit(DType dt, double x) {
  if (dt == DType::boolean) return Operand::scalar(AttrValue(x != 0));
  if (is_integral(dt)) return Operand::scalar(AttrValue(static_cast<int64_t>(x)));
  return Operand::scalar(AttrValue(x));
}

// A one-element constant input as a literal, else the input as a value.
inline Operand scalar_operand(NodeCtx& c, int i) {
  const Tensor* k = c.constant(i);
  if (k && k->numel() == 1 && k->rank() == 0) {
    if (k->dtype() == DType::boolean) return Operand::scalar(AttrValue(k->get_int(0) != 0));
    if (is_integral(k->dtype())) return Operand::scalar(AttrValue(k->get_int(0)));
    return Operand::scalar(AttrValue(k->get(0)));
  }
  return v(c.value(i));
}

// x's elements at positions idx along axis (a constant index laid along the axis, expanded over
// the other dims, gathered); onnx_ops.cpp. Refused past kFoldLimit indices.
int take_along(NodeCtx& c, int x, int64_t axis, const std::vector<int64_t>& idx);

inline void require_float(const NodeCtx& c, int i) {
  if (!is_floating(c.dtype(i)))
    c.unsupported(fmt::format("input {} of type {} (reprokit's mapping needs a floating type)", i + 1, dtype_name(c.dtype(i))));
}

}  // namespace reprokit::onnx_detail
