// The importer's handlers for ONNX's linear quantisation: QuantizeLinear and DequantizeLinear
// (per-tensor or per-axis scale and zero point), DynamicQuantizeLinear and Round, written with the
// op set's pointwise ops and reductions. The
// rounding is half to even, as ONNX specifies: the op set has no round, so it is built from a
// truncating cast, the fraction it leaves and the parity of the truncated value.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "handler_util.h"
#include "import_context.h"
#include "reprokit/support/errors.h"

namespace reprokit::onnx_detail {

namespace {

// Scale or zero point input i shaped to broadcast against x: a scalar as it is, a 1-D per-axis
// tensor along `axis` (its length that of x's dim).
int along_axis(NodeCtx& c, int i, int64_t axis, const Shape& xs) {
  const int id = c.value(i);
  if (c.rank(i) == 0) return id;
  if (c.rank(i) != 1) c.bad(fmt::format("input {} must be a scalar or 1-D, it is {}", i + 1, shape_str(c.shape(i))));
  if (c.shape(i)[0] == 1) return c.reshape(id, {});  // one value for every element
  if (xs.empty() || c.shape(i)[0] != xs[static_cast<size_t>(axis)])
    c.bad(fmt::format("input {} has {} values for an input of shape {} (axis {})", i + 1, c.shape(i)[0], shape_str(xs), axis));
  Shape s(xs.size(), 1);
  s[static_cast<size_t>(axis)] = xs[static_cast<size_t>(axis)];
  return c.reshape(id, s);
}

// The axis of a per-axis scale (input 1 of length > 1); with a per-tensor one it is not read.
int64_t quant_axis(NodeCtx& c) {
  const bool per_axis = c.rank(1) == 1 && c.shape(1)[0] > 1;
  if (!per_axis || c.rank(0) == 0) return 0;
  return norm_axis(c, c.attr_int("axis", 1), c.rank(0));
}

// DequantizeLinear(x, scale, zero_point) = (x - zero_point) * scale, in scale's type.
void dequantize_linear(NodeCtx& c) {
  c.allow({"axis"});
  const DType xt = c.dtype(0);
  if (xt != DType::i8 && xt != DType::u8 && xt != DType::i32) c.unsupported(fmt::format("DequantizeLinear of {} (i8, u8 or i32)", dtype_name(xt)));
  const DType ft = c.dtype(1);
  if (!is_floating(ft)) c.bad("the scale must be floating-point");
  if (c.has(2) && c.dtype(2) != xt) c.bad(fmt::format("the zero point is {}, x is {}", dtype_name(c.dtype(2)), dtype_name(xt)));
  const Shape xs = c.shape(0);
  const int64_t axis = quant_axis(c);
  int x = c.cast(c.value(0), ft);
  if (c.has(2)) x = c.emit(Op::sub, {v(x), v(c.cast(along_axis(c, 2, axis, xs), ft))});
  c.set(0, c.emit(Op::mul, {v(x), v(along_axis(c, 1, axis, xs))}));
}

// v rounded to the nearest integer, ties to even, as a floating value of v's type. The truncating
// cast goes through i32, so v is first clamped far outside every quantised range.
int round_half_even(NodeCtx& c, int x) {
  const DType ft = c.type_of(x).dtype;
  const int clamped = c.emit1(Op::clamp, x, {{"min", AttrValue(-1e9)}, {"max", AttrValue(1e9)}});
  const int t = c.cast(c.cast(clamped, DType::i32), ft);  // toward zero
  const int frac = c.emit(Op::sub, {v(clamped), v(t)});   // in (-1, 1), with x's sign
  const int a = c.emit1(Op::abs, frac);
  // t odd: t / 2 truncated, doubled, is not t.
  const int half = c.cast(c.cast(c.emit(Op::mul, {v(t), flit(0.5)}), DType::i32), ft);
  const int odd = c.emit(Op::ne, {v(c.emit(Op::mul, {v(half), flit(2.0)})), v(t)});
  const int tie = c.emit(Op::where, {v(c.emit(Op::eq, {v(a), flit(0.5)})), v(odd), Operand::scalar(AttrValue(false))});
  const int away = c.emit(Op::where, {v(c.emit(Op::gt, {v(a), flit(0.5)})), Operand::scalar(AttrValue(true)), v(tie)});
  const int sign = c.emit(Op::sub, {v(c.emit(Op::mul, {v(c.cast(c.emit(Op::ge, {v(frac), flit(0.0)}), ft)), flit(2.0)})), flit(1.0)});  // +-1
  return c.emit(Op::add, {v(t), v(c.emit(Op::where, {v(away), v(sign), flit(0.0)}))});
}

// QuantizeLinear(x, scale, zero_point) = saturate(round(x / scale) + zero_point), in the zero
// point's type (u8 without one).
void quantize_linear(NodeCtx& c) {
  c.allow({"axis"});
  const DType ft = c.dtype(0);
  if (!is_floating(ft)) c.unsupported(fmt::format("QuantizeLinear of {} (floating-point x)", dtype_name(ft)));
  if (c.dtype(1) != ft) c.bad(fmt::format("the scale is {}, x is {}", dtype_name(c.dtype(1)), dtype_name(ft)));
  const DType qt = c.has(2) ? c.dtype(2) : DType::u8;
  if (qt != DType::i8 && qt != DType::u8) c.unsupported(fmt::format("QuantizeLinear to {} (i8 or u8)", dtype_name(qt)));
  const Shape xs = c.shape(0);
  const int64_t axis = quant_axis(c);
  int q = round_half_even(c, c.emit(Op::div, {v(c.value(0)), v(along_axis(c, 1, axis, xs))}));
  if (c.has(2)) q = c.emit(Op::add, {v(q), v(c.cast(along_axis(c, 2, axis, xs), ft))});
  q = c.emit1(Op::clamp, q, {{"min", AttrValue(static_cast<double>(dtype_min(qt)))}, {"max", AttrValue(static_cast<double>(dtype_max(qt)))}});
  c.set(0, c.cast(q, qt));
}

// Round: half to even, as above.
void round_op(NodeCtx& c) {
  c.allow({});
  require_float(c, 0);
  c.set(0, round_half_even(c, c.value(0)));
}

// DynamicQuantizeLinear(x) -> (y u8, scale, zero point): the range of x widened to hold 0, over
// 255 steps; the zero point is where 0 lands.
void dynamic_quantize_linear(NodeCtx& c) {
  c.allow({});
  if (c.dtype(0) != DType::f32) c.unsupported(fmt::format("DynamicQuantizeLinear of {} (f32)", dtype_name(c.dtype(0))));
  const int x = c.value(0);
  const int lo = c.emit(Op::minimum, {v(c.emit1(Op::amin, x)), flit(0.0)});
  const int hi = c.emit(Op::maximum, {v(c.emit1(Op::amax, x)), flit(0.0)});
  const int scale = c.emit(Op::div, {v(c.emit(Op::sub, {v(hi), v(lo)})), flit(255.0)});
  auto saturate = [&](int q) { return c.emit1(Op::clamp, q, {{"min", AttrValue(0.0)}, {"max", AttrValue(255.0)}}); };
  const int zp = saturate(round_half_even(c, c.emit(Op::neg, {v(c.emit(Op::div, {v(lo), v(scale)}))})));
  const int q = saturate(c.emit(Op::add, {v(round_half_even(c, c.emit(Op::div, {v(x), v(scale)}))), v(zp)}));
  c.set(0, c.cast(q, DType::u8));
  if (c.wants(1)) c.set(1, scale);
  if (c.wants(2)) c.set(2, c.cast(zp, DType::u8));
}

}  // namespace

const std::map<std::string, Handler, std::less<>>& quantize_handlers() {
  static const std::map<std::string, Handler, std::less<>> table{
      {"QuantizeLinear", quantize_linear},
      {"DequantizeLinear", dequantize_linear},
      {"DynamicQuantizeLinear", dynamic_quantize_linear},
      {"Round", round_op},
  };
  return table;
}

}  // namespace reprokit::onnx_detail
