// The importer's table: one handler per ONNX op type, each mapping the node onto reprokit ops (or
// onto a constant known at import time). Anything a handler cannot map exactly is unsupported().
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <utility>

#include "handler_util.h"
#include "onnx_op_names.h"
#include "import_context.h"
#include "proto_util.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/names.h"
#include "reprokit/ir/op_semantics.h"
#include "reprokit/ir/shape_check.h"
#include "reprokit/onnx/onnx_tensor.h"

namespace reprokit::onnx_detail {

namespace {

// Normalised, distinct axes.
std::vector<int64_t> norm_axes(const NodeCtx& c, const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t a : axes) {
    int64_t d = norm_axis(c, a, rank);
    if (std::find(out.begin(), out.end(), d) != out.end()) c.bad(fmt::format("axis {} is repeated", a));
    out.push_back(d);
  }
  return out;
}

}  // namespace

int take_along(NodeCtx& c, int x, int64_t axis, const std::vector<int64_t>& idx) {
  const Shape xs = c.type_of(x).shape;
  if (static_cast<int64_t>(idx.size()) > kFoldLimit) c.unsupported("an index this long along one axis");
  Shape flat(xs.size(), 1);
  flat[static_cast<size_t>(axis)] = static_cast<int64_t>(idx.size());
  int i = c.const_value(Tensor::from_int64s(DType::i64, flat, idx));
  Shape ex = xs;
  ex[static_cast<size_t>(axis)] = static_cast<int64_t>(idx.size());
  if (ex != flat) i = c.emit1(Op::expand, i, {{"shape", AttrValue::ints(ex)}});
  return c.emit(Op::gather, {v(x), v(i)}, {{"dim", AttrValue(axis)}});
}

namespace {

// ---- pointwise

template <Op op> void unary(NodeCtx& c) {
  c.allow({"consumed_inputs"});
  int y = c.emit1(op, c.value(0));
  if (c.type_of(y).dtype != c.dtype(0))
    c.unsupported(fmt::format("{} of {} (reprokit computes it in {})", c.n.op_type(), dtype_name(c.dtype(0)), dtype_name(c.type_of(y).dtype)));
  c.set(0, y);
}

// Opset < 7: `broadcast=1` with `axis` aligns B at A's dim `axis`; otherwise shapes must agree.
std::vector<Operand> legacy_or_numpy_operands(NodeCtx& c) {
  if (c.opset() >= 7) return c.pointwise({0, 1});
  bool bcast = c.attr_int("broadcast", 0) != 0;
  if (!bcast) {
    if (c.shape(0) != c.shape(1)) c.bad(fmt::format("shapes {} and {} differ and broadcast=0", shape_str(c.shape(0)), shape_str(c.shape(1))));
    return c.pointwise({0, 1});
  }
  if (!c.attr("axis")) return c.pointwise({0, 1});  // suffix alignment: NumPy's rule
  int64_t ra = c.rank(0), rb = c.rank(1);
  int64_t axis = norm_axis(c, c.attr_int("axis", 0), ra);
  int64_t trailing = ra - axis - rb;
  if (trailing < 0) c.bad(fmt::format("B of rank {} does not fit A of rank {} at axis {}", rb, ra, axis));
  if (trailing == 0) return c.pointwise({0, 1});
  Shape s = c.shape(1);
  s.insert(s.end(), static_cast<size_t>(trailing), 1);
  return {v(c.value(0)), v(c.reshape(c.value(1), s))};
}

template <Op op> void binary(NodeCtx& c) {
  c.allow({"broadcast", "axis", "consumed_inputs"});
  std::vector<Operand> ops = legacy_or_numpy_operands(c);
  const DType a = c.dtype(0);
  if (op == Op::div && !is_floating(a)) {
    // ONNX's integer division truncates toward zero: divide in f64 (exact below 2^53), truncate.
    if (a == DType::boolean) c.unsupported("Div of bool");
    for (auto& o : ops)
      if (o.is_value()) o = v(c.cast(o.value, DType::f64));
    c.set(0, c.cast(c.emit(Op::div, ops), a));
    return;
  }
  int y = c.emit(op, ops);
  if (op == Op::pow && c.type_of(y).dtype != a) y = c.cast(y, a);  // ONNX: the base's type
  if (!is_comparison(op) && c.type_of(y).dtype != a)
    c.unsupported(fmt::format("{} of {} and {}", c.n.op_type(), dtype_name(a), dtype_name(c.dtype(1))));
  c.set(0, y);
}

void not_op(NodeCtx& c) {
  c.allow({});
  if (c.dtype(0) != DType::boolean) c.bad("Not needs a bool input");
  c.set(0, c.emit(Op::eq, {v(c.value(0)), Operand::scalar(AttrValue(false))}));
}

template <Op op> void logical(NodeCtx& c) {  // And -> mul, Or -> maximum, Xor -> ne, on bools
  c.allow({"broadcast", "axis"});
  if (c.dtype(0) != DType::boolean || c.dtype(1) != DType::boolean) c.bad(fmt::format("{} needs bool inputs", c.n.op_type()));
  std::vector<Operand> ops = legacy_or_numpy_operands(c);
  c.set(0, c.emit(op, ops));
}

template <Op op> void variadic(NodeCtx& c) {  // Max, Min, Sum: a chain of binary ops
  c.allow({"consumed_inputs"});
  if (c.num_inputs() == 1) return c.pass(0, 0);
  int acc = c.value(0);
  for (int i = 1; i < c.num_inputs(); ++i) acc = c.emit(op, {v(acc), v(c.value(i))});
  if (c.type_of(acc).dtype != c.dtype(0)) c.unsupported(fmt::format("{} of mixed types", c.n.op_type()));
  c.set(0, acc);
}

void mean_op(NodeCtx& c) {
  c.allow({"consumed_inputs"});
  require_float(c, 0);
  if (c.num_inputs() == 1) return c.pass(0, 0);
  int acc = c.value(0);
  for (int i = 1; i < c.num_inputs(); ++i) acc = c.emit(Op::add, {v(acc), v(c.value(i))});
  c.set(0, c.emit(Op::div, {v(acc), flit(static_cast<double>(c.num_inputs()))}));
}

void where_op(NodeCtx& c) {
  c.allow({});
  int cond = c.value(0);
  std::vector<Operand> ab = c.pointwise({1, 2});
  c.set(0, c.emit(Op::where, {v(cond), ab[0], ab[1]}));
}

DType cast_target(NodeCtx& c, int elem_type) {
  auto dt = dtype_from_onnx(elem_type);
  if (!dt) c.unsupported(fmt::format("Cast to {} (reprokit has f16 bf16 f32 f64 i8 u8 i16 u16 i32 i64 bool)", onnx_elem_type_name(elem_type)));
  return *dt;
}

void cast_op(NodeCtx& c) {
  c.allow({"to"});
  const auto* a = c.attr("to");
  if (!a) c.bad("attribute 'to' is missing");
  if (a->type() != onnx::AttributeProto::INT) c.unsupported("a Cast whose 'to' is a type name (opset 1)");
  DType dt = cast_target(c, static_cast<int>(a->i()));
  if (c.dtype(0) == dt) return c.pass(0, 0);
  c.set(0, c.cast(c.value(0), dt));
}

void cast_like(NodeCtx& c) {
  c.allow({});
  DType dt = c.dtype(1);
  if (c.dtype(0) == dt) return c.pass(0, 0);
  c.set(0, c.cast(c.value(0), dt));
}

void identity(NodeCtx& c) {
  c.allow({});
  c.pass(0, 0);
}

void dropout(NodeCtx& c) {
  c.allow({"ratio", "seed", "is_test"});
  if (c.opset() < 7 && c.attr_int("is_test", 0) == 0) c.unsupported("training-mode Dropout (is_test=0 draws random masks)");
  if (c.has(2)) {
    Tensor t = c.need_constant(2, "training_mode");
    if (t.numel() != 1) c.bad("training_mode must have one element");
    // A ratio of 0 drops nothing: an identity in training mode too (torchvision's swin_t exports
    // its attention dropout so, as F.dropout's training flag defaults to true).
    const bool drops_nothing = c.has(1) && c.need_constant(1, "ratio").get(0) == 0.0;
    if (t.get_int(0) != 0 && !drops_nothing) c.unsupported("training_mode=true with a ratio other than 0 (Dropout then draws random masks)");
  }
  c.pass(0, 0);
  if (c.wants(1))
    c.set(1, c.emit(Op::full, {}, {{"shape", AttrValue::ints(c.shape(0))}, {"value", AttrValue(true)}, {"dtype", AttrValue(DType::boolean)}}));
}

// ---- activations written with pointwise ops

// Clip with bounds known at import time is clamp; a bound computed at run time is max/min.
void clip(NodeCtx& c) {
  std::optional<Operand> lo, hi;
  if (c.opset() < 11) {
    c.allow({"min", "max"});
    if (c.attr("min")) lo = flit(c.attr_float("min", 0));
    if (c.attr("max")) hi = flit(c.attr_float("max", 0));
  } else {
    c.allow({});
    if (c.has(1)) lo = scalar_operand(c, 1);
    if (c.has(2)) hi = scalar_operand(c, 2);
  }
  if (!lo && !hi) return c.pass(0, 0);
  int y = c.value(0);
  if ((!lo || !lo->is_value()) && (!hi || !hi->is_value())) {
    Attrs bounds;
    if (lo) bounds["min"] = lo->literal;
    if (hi) bounds["max"] = hi->literal;
    y = c.emit1(Op::clamp, y, std::move(bounds));
  } else {
    if (lo) y = c.emit(Op::maximum, {v(y), *lo});
    if (hi) y = c.emit(Op::minimum, {v(y), *hi});
  }
  if (c.type_of(y).dtype != c.dtype(0)) c.unsupported("Clip bounds of another type");
  c.set(0, y);
}

void leaky_relu(NodeCtx& c) {
  c.allow({"alpha"});
  require_float(c, 0);
  int x = c.value(0);
  int neg = c.emit(Op::lt, {v(x), flit(0)});
  c.set(0, c.emit(Op::where, {v(neg), v(c.emit(Op::mul, {v(x), flit(c.attr_float("alpha", 0.01))})), v(x)}));
}

void prelu(NodeCtx& c) {
  c.allow({"consumed_inputs"});
  require_float(c, 0);
  int x = c.value(0);
  int slope = c.value(1);
  // Opset < 7: a 1-D slope of C values is per channel (dim 1).
  if (c.opset() < 7 && c.rank(1) == 1 && c.rank(0) >= 2 && c.shape(1)[0] == c.shape(0)[1] && c.shape(1)[0] != 1) {
    Shape s(static_cast<size_t>(c.rank(0) - 1), 1);
    s[0] = c.shape(1)[0];
    slope = c.reshape(slope, s);
  }
  int neg = c.emit(Op::lt, {v(x), flit(0)});
  int scaled = c.emit(Op::mul, {v(x), v(slope)});
  if (c.type_of(scaled).shape != c.shape(0)) c.unsupported("a slope that broadcasts beyond the input's shape");
  c.set(0, c.emit(Op::where, {v(neg), v(scaled), v(x)}));
}

// alpha * (exp(x) - 1)
int expm1_scaled(NodeCtx& c, int x, double alpha) {
  int e = c.emit(Op::sub, {v(c.emit1(Op::exp, x)), flit(1)});
  return alpha == 1.0 ? e : c.emit(Op::mul, {v(e), flit(alpha)});
}

void elu(NodeCtx& c) {
  c.allow({"alpha"});
  require_float(c, 0);
  int x = c.value(0);
  int neg = c.emit(Op::lt, {v(x), flit(0)});
  c.set(0, c.emit(Op::where, {v(neg), v(expm1_scaled(c, x, c.attr_float("alpha", 1.0))), v(x)}));
}

void selu(NodeCtx& c) {
  c.allow({"alpha", "gamma"});
  require_float(c, 0);
  int x = c.value(0);
  double alpha = c.attr_float("alpha", 1.67326319217681884765625), gamma = c.attr_float("gamma", 1.05070102214813232421875);
  int le = c.emit(Op::le, {v(x), flit(0)});
  int w = c.emit(Op::where, {v(le), v(expm1_scaled(c, x, alpha)), v(x)});
  c.set(0, c.emit(Op::mul, {v(w), flit(gamma)}));
}

void celu(NodeCtx& c) {
  c.allow({"alpha"});
  require_float(c, 0);
  int x = c.value(0);
  double alpha = c.attr_float("alpha", 1.0);
  int scaled = alpha == 1.0 ? x : c.emit(Op::div, {v(x), flit(alpha)});
  int e = expm1_scaled(c, scaled, alpha);
  int pos = c.emit(Op::maximum, {v(x), flit(0)});
  int neg = c.emit(Op::minimum, {v(e), flit(0)});
  c.set(0, c.emit(Op::add, {v(pos), v(neg)}));
}

int hard_sigmoid_of(NodeCtx& c, int x, double alpha, double beta) {
  int y = c.emit(Op::add, {v(c.emit(Op::mul, {v(x), flit(alpha)})), flit(beta)});
  return c.emit(Op::maximum, {v(c.emit(Op::minimum, {v(y), flit(1)})), flit(0)});
}

void hard_sigmoid(NodeCtx& c) {
  c.allow({"alpha", "beta"});
  require_float(c, 0);
  c.set(0, hard_sigmoid_of(c, c.value(0), c.attr_float("alpha", 0.2), c.attr_float("beta", 0.5)));
}

void hard_swish(NodeCtx& c) {
  c.allow({});
  require_float(c, 0);
  int x = c.value(0);
  c.set(0, c.emit(Op::mul, {v(x), v(hard_sigmoid_of(c, x, 1.0 / 6.0, 0.5))}));
}

void softplus(NodeCtx& c) {
  c.allow({});
  require_float(c, 0);
  c.set(0, c.emit1(Op::log, c.emit(Op::add, {v(c.emit1(Op::exp, c.value(0))), flit(1)})));
}

void softsign(NodeCtx& c) {
  c.allow({});
  require_float(c, 0);
  int x = c.value(0);
  c.set(0, c.emit(Op::div, {v(x), v(c.emit(Op::add, {v(c.emit1(Op::abs, x)), flit(1)}))}));
}

void thresholded_relu(NodeCtx& c) {
  c.allow({"alpha"});
  require_float(c, 0);
  int x = c.value(0);
  int gt = c.emit(Op::gt, {v(x), flit(c.attr_float("alpha", 1.0))});
  c.set(0, c.emit(Op::where, {v(gt), v(x), flit(0)}));
}

void sign(NodeCtx& c) {
  c.allow({});
  int x = c.value(0);
  DType dt = c.dtype(0);
  if (dt == DType::boolean) c.unsupported("Sign of bool");
  int pos = c.cast(c.emit(Op::gt, {v(x), typed_lit(dt, 0)}), dt);
  int neg = c.cast(c.emit(Op::lt, {v(x), typed_lit(dt, 0)}), dt);
  c.set(0, c.emit(Op::sub, {v(pos), v(neg)}));
}

void tan_op(NodeCtx& c) {
  c.allow({});
  require_float(c, 0);
  int x = c.value(0);
  c.set(0, c.emit(Op::div, {v(c.emit1(Op::sin, x)), v(c.emit1(Op::cos, x))}));
}

void is_nan(NodeCtx& c) {
  c.allow({});
  require_float(c, 0);
  int x = c.value(0);
  c.set(0, c.emit(Op::ne, {v(x), v(x)}));
}

void is_inf(NodeCtx& c) {
  c.allow({"detect_negative", "detect_positive"});
  require_float(c, 0);
  int x = c.value(0);
  bool pos = c.attr_int("detect_positive", 1) != 0, neg = c.attr_int("detect_negative", 1) != 0;
  const double inf = std::numeric_limits<double>::infinity();
  int y;
  if (pos && neg) y = c.emit(Op::eq, {v(c.emit1(Op::abs, x)), flit(inf)});
  else if (pos) y = c.emit(Op::eq, {v(x), flit(inf)});
  else if (neg) y = c.emit(Op::eq, {v(x), flit(-inf)});
  else y = c.emit(Op::full, {}, {{"shape", AttrValue::ints(c.shape(0))}, {"value", AttrValue(false)}, {"dtype", AttrValue(DType::boolean)}});
  c.set(0, y);
}

// ---- normalization

template <Op op> void softmax(NodeCtx& c) {
  c.allow({"axis"});
  require_float(c, 0);
  const int64_t r = c.rank(0);
  const bool modern = c.opset() >= 13;
  int64_t axis = c.attr_int("axis", modern ? -1 : 1);
  int x = c.value(0);
  if (r == 0) return c.set(0, c.emit1(op, x, {{"dim", AttrValue(int64_t{0})}}));
  if (axis < -r || axis > (modern ? r - 1 : r)) c.bad(fmt::format("axis {} is out of range for rank {}", axis, r));
  if (axis < 0) axis += r;
  if (modern || axis == r - 1) return c.set(0, c.emit1(op, x, {{"dim", AttrValue(axis)}}));
  // Opset < 13: over the input coerced to 2-D at axis.
  const Shape& s = c.shape(0);
  int64_t outer = numel(Shape(s.begin(), s.begin() + axis)), inner = numel(Shape(s.begin() + axis, s.end()));
  int y = c.emit1(op, c.reshape(x, {outer, inner}), {{"dim", AttrValue(int64_t{1})}});
  c.set(0, c.reshape(y, s));
}

void layer_norm(NodeCtx& c) {
  c.allow({"axis", "epsilon", "stash_type"});
  require_float(c, 0);
  const Shape& xs = c.shape(0);
  const int64_t r = c.rank(0);
  const int64_t a = norm_axis(c, c.attr_int("axis", -1), r);
  const Shape ns(xs.begin() + a, xs.end());
  const double eps = c.attr_float("epsilon", 1e-5);
  // reprokit keeps the statistics in float32 for float16/bfloat16/float32 and in float64 for float64
  // (float64 as stash_type for a float64 X says just that).
  const int64_t stash = c.attr_int("stash_type", 1);
  if (stash != 1 && !(stash == onnx_elem_type(DType::f64) && c.dtype(0) == DType::f64))
    c.unsupported(fmt::format("stash_type {} for X of {}", stash, dtype_name(c.dtype(0))));
  int x = c.value(0);
  auto param = [&](int i) {
    int p = c.value(i);
    if (c.dtype(i) != c.dtype(0)) c.bad(fmt::format("input {} is {}, X is {}", i + 1, dtype_name(c.dtype(i)), dtype_name(c.dtype(0))));
    if (c.shape(i) == ns) return p;
    auto b = broadcast_shapes(c.shape(i), ns);
    if (!b || *b != ns) c.unsupported(fmt::format("input {} of shape {} for normalized shape {}", i + 1, shape_str(c.shape(i)), shape_str(ns)));
    return c.emit1(Op::expand, p, {{"shape", AttrValue::ints(ns)}});
  };
  std::vector<Operand> ops{v(x), v(param(1))};
  if (c.has(2)) ops.push_back(v(param(2)));
  c.set(0, c.emit(Op::layer_norm, ops, {{"normalized_shape", AttrValue::ints(ns)}, {"eps", lit(eps)}}));
  if (c.wants(1) || c.wants(2)) {  // Mean and InvStdDev, in the stash type (float)
    std::vector<int64_t> dims;
    for (int64_t d = a; d < r; ++d) dims.push_back(d);
    int x32 = c.cast(x, DType::f32);
    if (c.wants(1)) c.set(1, c.emit1(Op::mean, x32, {{"dims", AttrValue::ints(dims)}, {"keepdim", AttrValue(true)}}));
    if (c.wants(2)) {
      int var = c.emit1(Op::var, x32, {{"dims", AttrValue::ints(dims)}, {"correction", AttrValue(int64_t{0})}, {"keepdim", AttrValue(true)}});
      c.set(2, c.emit1(Op::rsqrt, c.emit(Op::add, {v(var), flit(eps)})));
    }
  }
}

// ---- linear algebra

void gemm(NodeCtx& c) {
  c.allow({"alpha", "beta", "transA", "transB", "broadcast"});
  const double alpha = c.attr_float("alpha", 1.0), beta = c.attr_float("beta", 1.0);
  const bool ta = c.attr_int("transA", 0) != 0, tb = c.attr_int("transB", 0) != 0;
  if (c.rank(0) != 2 || c.rank(1) != 2) c.bad("A and B must be 2-D");
  const bool has_c = c.has(2) && beta != 0.0;
  int A = c.value(0), B = c.value(1);
  int y;
  if (!ta && tb && alpha == 1.0 && (!has_c || (beta == 1.0 && c.rank(2) == 1 && c.shape(2)[0] == c.shape(1)[0]))) {
    std::vector<Operand> ops{v(A), v(B)};
    if (has_c) ops.push_back(v(c.value(2)));
    y = c.emit(Op::linear, ops);
  } else {
    int a = ta ? c.emit1(Op::transpose, A, {{"dim0", AttrValue(int64_t{0})}, {"dim1", AttrValue(int64_t{1})}}) : A;
    int b = tb ? c.emit1(Op::transpose, B, {{"dim0", AttrValue(int64_t{0})}, {"dim1", AttrValue(int64_t{1})}}) : B;
    y = c.emit(Op::matmul, {v(a), v(b)});
    if (alpha != 1.0) y = c.emit(Op::mul, {v(y), flit(alpha)});
    if (has_c) {
      int cc = c.value(2);
      if (beta != 1.0) cc = c.emit(Op::mul, {v(cc), flit(beta)});
      y = c.emit(Op::add, {v(y), v(cc)});
    }
  }
  if (c.type_of(y).dtype != c.dtype(0)) c.unsupported("Gemm of mixed types");
  c.set(0, y);
}

void matmul(NodeCtx& c) {
  c.allow({});
  const int64_t ra = c.rank(0), rb = c.rank(1);
  if (ra == 0 || rb == 0) c.bad("MatMul of a 0-d tensor");
  int a = c.value(0), b = c.value(1);
  if (ra == 1) a = c.emit1(Op::unsqueeze, a, {{"dim", AttrValue(int64_t{0})}});
  if (rb == 1) b = c.emit1(Op::unsqueeze, b, {{"dim", AttrValue(int64_t{1})}});
  int y = c.emit(Op::matmul, {v(a), v(b)});
  int64_t yr = c.type_of(y).rank();
  if (rb == 1) y = c.emit1(Op::squeeze, y, {{"dim", AttrValue(yr - 1)}}), --yr;
  if (ra == 1) y = c.emit1(Op::squeeze, y, {{"dim", AttrValue(rb == 1 ? yr - 1 : yr - 2)}});
  c.set(0, y);
}

// ---- reductions

enum class Pre { none, abs, square, exp };
enum class Post { none, sqrt, log };

void reduce(NodeCtx& c, Op op, Pre pre, Post post) {
  c.allow({"axes", "keepdims", "noop_with_empty_axes"});
  const bool keep = c.attr_int("keepdims", 1) != 0;
  const bool noop = c.attr_int("noop_with_empty_axes", 0) != 0;
  std::optional<std::vector<int64_t>> axes;
  if (c.n.op_type() == "ReduceSum" && c.opset() >= 13) {
    if (c.has(1)) axes = c.need_ints(1, "axes");
  } else {
    axes = c.attr_ints("axes");
  }
  if (axes && axes->empty()) axes.reset();
  if (!axes && noop) return c.pass(0, 0);
  const DType dt = c.dtype(0);
  if (dt == DType::boolean) c.unsupported(fmt::format("{} of bool", c.n.op_type()));
  Attrs at{{"keepdim", AttrValue(keep)}};
  if (axes) at["dims"] = AttrValue::ints(norm_axes(c, *axes, c.rank(0)));
  int x = c.value(0);
  if (pre == Pre::abs) x = c.emit1(Op::abs, x);
  if (pre == Pre::square) x = c.emit(Op::mul, {v(x), v(x)});
  if (pre == Pre::exp) x = c.emit1(Op::exp, x);
  int y = c.emit1(op, x, at);
  if (post == Post::sqrt) y = c.emit1(Op::sqrt, y);
  if (post == Post::log) y = c.emit1(Op::log, y);
  if (c.type_of(y).dtype != dt) {
    if (!is_integral(dt) || post != Post::none) c.unsupported(fmt::format("{} of {}", c.n.op_type(), dtype_name(dt)));
    y = c.cast(y, dt);  // reprokit sums i32 into i64; ONNX keeps i32
  }
  c.set(0, y);
}

template <Op op, Pre pre = Pre::none, Post post = Post::none> void reduce_op(NodeCtx& c) { reduce(c, op, pre, post); }

template <bool is_min> void argmax(NodeCtx& c) {
  c.allow({"axis", "keepdims", "select_last_index"});
  if (c.rank(0) == 0) c.bad("ArgMax/ArgMin of a 0-d tensor");
  const int64_t a = norm_axis(c, c.attr_int("axis", 0), c.rank(0));
  const bool keep = c.attr_int("keepdims", 1) != 0;
  const bool last = c.attr_int("select_last_index", 0) != 0;
  const int64_t dim = c.shape(0)[static_cast<size_t>(a)];
  int x = c.value(0);
  if (is_min) {
    if (!is_floating(c.dtype(0))) c.unsupported("ArgMin of an integer tensor (mapped as argmax of the negation, exact only for floats)");
    x = c.emit1(Op::neg, x);
  }
  if (last) {  // the first maximum of the reversed axis, counted from the end
    if (dim > kFoldLimit) c.unsupported("select_last_index=1 over an axis this long");
    std::vector<int64_t> rev;
    for (int64_t i = dim - 1; i >= 0; --i) rev.push_back(i);
    x = take_along(c, x, a, rev);
  }
  int y = c.emit1(Op::argmax, x, {{"dim", AttrValue(a)}, {"keepdim", AttrValue(keep)}});
  if (last) y = c.emit(Op::sub, {Operand::scalar(AttrValue(dim - 1)), v(y)});
  c.set(0, y);
}

// ---- shape

void reshape_op(NodeCtx& c) {
  c.allow({"allowzero", "shape", "consumed_inputs"});
  std::vector<int64_t> target;
  if (c.opset() >= 5) {
    target = c.need_ints(1, "the target shape");
  } else {
    auto s = c.attr_ints("shape");
    if (!s) c.bad("attribute 'shape' is missing");
    target = *s;
  }
  const bool allowzero = c.attr_int("allowzero", 0) != 0;
  const Shape& xs = c.shape(0);
  Shape out;
  bool infer = false;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t d = target[i];
    if (d == 0 && !allowzero) {
      if (i >= xs.size()) c.bad(fmt::format("shape {} copies dim {} of an input of rank {}", shape_str(target), i, xs.size()));
      d = xs[i];
    } else if (d == -1) {
      if (infer) c.bad(fmt::format("shape {} has two -1", shape_str(target)));
      infer = true;
    } else if (d < 0) {
      c.bad(fmt::format("shape {} has a negative dimension", shape_str(target)));
    }
    out.push_back(d);
  }
  c.set(0, c.reshape(c.value(0), out));
}

void flatten(NodeCtx& c) {
  c.allow({"axis"});
  const Shape& s = c.shape(0);
  const int64_t r = c.rank(0);
  int64_t a = c.attr_int("axis", 1);
  if (a < 0) a += r;
  if (a < 0 || a > r) c.bad(fmt::format("axis {} is out of range for rank {}", c.attr_int("axis", 1), r));
  int64_t outer = numel(Shape(s.begin(), s.begin() + a)), inner = numel(Shape(s.begin() + a, s.end()));
  c.set(0, c.reshape(c.value(0), {outer, inner}));
}

void expand(NodeCtx& c) {
  c.allow({});
  std::vector<int64_t> target = c.need_ints(1, "the target shape");
  for (int64_t d : target)
    if (d < 0) c.bad(fmt::format("shape {} has a negative dimension", shape_str(target)));
  auto out = broadcast_shapes(c.shape(0), target);
  if (!out) c.bad(fmt::format("shape {} does not broadcast to {}", shape_str(c.shape(0)), shape_str(target)));
  int x = c.value(0);
  if (*out == c.shape(0)) return c.set(0, x);
  c.set(0, c.emit1(Op::expand, x, {{"shape", AttrValue::ints(*out)}}));
}

void squeeze(NodeCtx& c) {
  c.allow({"axes"});
  std::optional<std::vector<int64_t>> axes;
  if (c.opset() >= 13) {
    if (c.has(1)) axes = c.need_ints(1, "axes");
  } else {
    axes = c.attr_ints("axes");
  }
  const Shape& s = c.shape(0);
  std::vector<int64_t> dims;
  if (!axes) {
    for (size_t d = 0; d < s.size(); ++d)
      if (s[d] == 1) dims.push_back(static_cast<int64_t>(d));
  } else {
    dims = norm_axes(c, *axes, c.rank(0));
    for (int64_t d : dims)
      if (s[static_cast<size_t>(d)] != 1) c.bad(fmt::format("cannot squeeze dim {} of size {}", d, s[static_cast<size_t>(d)]));
  }
  std::sort(dims.rbegin(), dims.rend());
  int x = c.value(0);
  for (int64_t d : dims) x = c.emit1(Op::squeeze, x, {{"dim", AttrValue(d)}});
  c.set(0, x);
}

void unsqueeze(NodeCtx& c) {
  c.allow({"axes"});
  std::vector<int64_t> axes;
  if (c.opset() >= 13) {
    axes = c.need_ints(1, "axes");
  } else {
    auto a = c.attr_ints("axes");
    if (!a) c.bad("attribute 'axes' is missing");
    axes = *a;
  }
  std::vector<int64_t> dims = norm_axes(c, axes, c.rank(0) + static_cast<int64_t>(axes.size()));
  std::sort(dims.begin(), dims.end());
  int x = c.value(0);
  for (int64_t d : dims) x = c.emit1(Op::unsqueeze, x, {{"dim", AttrValue(d)}});
  c.set(0, x);
}

// DepthToSpace and SpaceToDepth of [N, C, H, W] with blocksize b. DepthToSpace in CRD mode is
// pixel_shuffle; in DCR mode (the default) the channels split as [b, b, C / b^2], a different
// order: it imports as the reshape, permute and reshape ONNX defines, as does SpaceToDepth.
void depth_space(NodeCtx& c) {
  const bool to_space = c.n.op_type() == "DepthToSpace";
  c.allow(to_space ? std::initializer_list<std::string_view>{"blocksize", "mode"} : std::initializer_list<std::string_view>{"blocksize"});
  if (c.rank(0) != 4) c.bad(fmt::format("input must be 4-D [N, C, H, W], got {}", shape_str(c.shape(0))));
  const auto* bs = c.attr("blocksize");
  if (!bs) c.bad("blocksize is required");
  const int64_t b = c.attr_int("blocksize", 0);
  if (b < 1 || b > (int64_t{1} << 20)) c.bad(fmt::format("blocksize {} must be in [1, 2^20]", b));
  const Shape& s = c.shape(0);
  const int64_t n = s[0], ch = s[1], h = s[2], w = s[3];
  if (to_space) {
    if (ch % (b * b)) c.bad(fmt::format("{} channels do not divide by blocksize^2 = {}", ch, b * b));
    const std::string mode = c.attr_string("mode", "DCR");
    if (mode == "CRD") return c.set(0, c.emit1(Op::pixel_shuffle, c.value(0), {{"upscale_factor", AttrValue(b)}}));
    if (mode != "DCR") c.bad(fmt::format("mode '{}' (DCR or CRD)", mode));
    int y = c.reshape(c.value(0), {n, b, b, ch / (b * b), h, w});
    y = c.emit1(Op::permute, y, {{"dims", AttrValue::ints({0, 3, 4, 1, 5, 2})}});
    return c.set(0, c.reshape(y, {n, ch / (b * b), h * b, w * b}));
  }
  if (h % b || w % b) c.bad(fmt::format("height {} and width {} do not divide by blocksize {}", h, w, b));
  int y = c.reshape(c.value(0), {n, ch, h / b, b, w / b, b});
  y = c.emit1(Op::permute, y, {{"dims", AttrValue::ints({0, 3, 5, 1, 2, 4})}});
  c.set(0, c.reshape(y, {n, ch * b * b, h / b, w / b}));
}

// Einsum: the equation is checked by einsum's inference (letters, terms, sizes).
void einsum(NodeCtx& c) {
  c.allow({"equation"});
  const std::string eq = c.attr_string("equation", "");
  if (!c.attr("equation")) c.bad("equation is required");
  std::vector<Operand> ops;
  for (int i = 0; i < c.num_inputs(); ++i) {
    require_float(c, i);
    ops.push_back(v(c.value(i)));
  }
  c.set(0, c.emit(Op::einsum, ops, {{"equation", AttrValue(eq)}}));
}

void transpose(NodeCtx& c) {
  c.allow({"perm"});
  const int64_t r = c.rank(0);
  std::vector<int64_t> perm;
  if (auto p = c.attr_ints("perm")) perm = *p;
  else
    for (int64_t d = r - 1; d >= 0; --d) perm.push_back(d);
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t d = 0; d < r; ++d)
    if (static_cast<int64_t>(sorted.size()) != r || sorted[static_cast<size_t>(d)] != d)
      c.bad(fmt::format("perm [{}] is not a permutation of {} dims", fmt::join(perm, ", "), r));
  bool identity = true;
  for (int64_t d = 0; d < r; ++d) identity &= perm[static_cast<size_t>(d)] == d;
  int x = c.value(0);
  if (identity) return c.set(0, x);
  c.set(0, c.emit1(Op::permute, x, {{"dims", AttrValue::ints(perm)}}));
}

void concat(NodeCtx& c) {
  c.allow({"axis"});
  if (!c.attr("axis") && c.opset() >= 4) c.bad("attribute 'axis' is missing");
  const int64_t a = norm_axis(c, c.attr_int("axis", 1), c.rank(0));
  std::vector<Operand> ops;
  for (int i = 0; i < c.num_inputs(); ++i) ops.push_back(v(c.value(i)));
  if (ops.size() == 1) return c.pass(0, 0);
  int y = c.emit(Op::cat, ops, {{"dim", AttrValue(a)}});
  if (c.type_of(y).dtype != c.dtype(0)) c.bad("Concat of mixed types");
  c.set(0, y);
}

void split(NodeCtx& c) {
  c.allow({"axis", "split"});
  const int64_t a = norm_axis(c, c.attr_int("axis", 0), c.rank(0));
  const int64_t dim = c.shape(0)[static_cast<size_t>(a)];
  std::vector<int64_t> sizes;
  if (c.opset() >= 13) {
    if (c.has(1)) sizes = c.need_ints(1, "split");
  } else if (auto s = c.attr_ints("split")) {
    sizes = *s;
  }
  const int64_t k = c.n.output_size();
  if (sizes.empty()) {
    if (dim % k) c.bad(fmt::format("dim {} of size {} does not split into {} equal parts", a, dim, k));
    sizes.assign(static_cast<size_t>(k), dim / k);
  }
  if (static_cast<int64_t>(sizes.size()) != k) c.bad(fmt::format("{} split sizes for {} outputs", sizes.size(), k));
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) c.bad("negative split size");
    total += s;
  }
  if (total != dim) c.bad(fmt::format("split sizes add up to {}, dim {} has {}", total, a, dim));
  int x = c.value(0);
  int64_t start = 0;
  for (int64_t j = 0; j < k; ++j) {
    int64_t end = start + sizes[static_cast<size_t>(j)];
    if (start == 0 && end == dim) c.set(static_cast<int>(j), x);
    else c.set(static_cast<int>(j), c.emit1(Op::slice, x, {{"dim", AttrValue(a)}, {"start", AttrValue(start)}, {"end", AttrValue(end)}}));
    start = end;
  }
}

void slice(NodeCtx& c) {
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset() >= 10) {
    c.allow({});
    starts = c.need_ints(1, "starts");
    ends = c.need_ints(2, "ends");
    if (c.has(3)) axes = c.need_ints(3, "axes");
    if (c.has(4)) steps = c.need_ints(4, "steps");
  } else {
    c.allow({"starts", "ends", "axes"});
    auto s = c.attr_ints("starts"), e = c.attr_ints("ends");
    if (!s || !e) c.bad("attributes 'starts' and 'ends' are required");
    starts = *s, ends = *e;
    if (auto a = c.attr_ints("axes")) axes = *a;
  }
  if (starts.size() != ends.size()) c.bad("starts and ends differ in length");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) c.bad("starts, ends, axes and steps differ in length");
  std::vector<int64_t> dims = norm_axes(c, axes, c.rank(0));
  int x = c.value(0);
  for (size_t k = 0; k < dims.size(); ++k) {
    const int64_t a = dims[k], step = steps[k], dim = c.shape(0)[static_cast<size_t>(a)];
    if (step == 0) c.bad("a step is 0");
    if (step < 0) {  // a reversed slice: gather the selected positions
      int64_t s = starts[k] < 0 ? starts[k] + dim : starts[k], e = ends[k] < 0 ? ends[k] + dim : ends[k];
      s = std::min(std::max<int64_t>(s, 0), dim - 1);
      e = std::min(std::max<int64_t>(e, -1), dim - 1);
      std::vector<int64_t> idx;
      for (int64_t i = s; dim > 0 && i > e; i += step) {
        idx.push_back(i);
        if (idx.size() > static_cast<size_t>(kFoldLimit)) c.unsupported("a reversed slice this long");
      }
      x = take_along(c, x, a, idx);
      continue;
    }
    auto clampi = [&](int64_t i) {
      if (i < 0) i = i < -dim ? 0 : i + dim;
      return std::min(i, dim);
    };
    int64_t s = clampi(starts[k]), e = std::max(clampi(ends[k]), s);
    if (s == 0 && e == dim && step == 1) continue;
    x = c.emit1(Op::slice, x, {{"dim", AttrValue(a)}, {"start", AttrValue(s)}, {"end", AttrValue(e)}, {"step", AttrValue(step)}});
  }
  c.set(0, x);
}

void tile(NodeCtx& c) {
  c.allow({});
  std::vector<int64_t> reps = c.need_ints(1, "repeats");
  const Shape& s = c.shape(0);
  if (reps.size() != s.size()) c.bad(fmt::format("{} repeats for a tensor of rank {}", reps.size(), s.size()));
  Shape inter, expanded, out;
  for (size_t d = 0; d < s.size(); ++d) {
    if (reps[d] < 0) c.bad("a negative repeat");
    inter.push_back(1), inter.push_back(s[d]);
    expanded.push_back(reps[d]), expanded.push_back(s[d]);
    out.push_back(checked_mul(reps[d], s[d], "the tiled shape"));
  }
  check_shape(expanded, "the tiled shape");
  int x = c.reshape(c.value(0), inter);
  if (expanded != inter) x = c.emit1(Op::expand, x, {{"shape", AttrValue::ints(expanded)}});
  c.set(0, c.reshape(x, out));
}

void trilu(NodeCtx& c) {
  c.allow({"upper"});
  const bool upper = c.attr_int("upper", 1) != 0;
  int64_t k = 0;
  if (c.has(1)) {
    Tensor t = c.need_constant(1, "k");
    if (t.numel() != 1 || !is_integral(t.dtype())) c.bad("k must be one integer");
    k = t.get_int(0);
  }
  if (c.rank(0) < 2) c.bad("Trilu needs a tensor of rank >= 2");
  const Shape& s = c.shape(0);
  const int64_t rows = s[s.size() - 2], cols = s.back();
  if (rows * cols > kFoldLimit) c.unsupported("a Trilu mask this large");
  std::vector<int64_t> mask(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) mask[static_cast<size_t>(i * cols + j)] = upper ? (j - i >= k) : (j - i <= k);
  int m = c.const_value(Tensor::from_int64s(DType::boolean, {rows, cols}, mask));
  c.set(0, c.emit(Op::where, {v(m), v(c.value(0)), typed_lit(c.dtype(0), 0)}));
}

// ---- indexing

void gather(NodeCtx& c) {
  c.allow({"axis"});
  const int64_t r = c.rank(0);
  if (r == 0) c.bad("Gather of a 0-d tensor");
  const int64_t a = norm_axis(c, c.attr_int("axis", 0), r);
  if (c.dtype(1) != DType::i64 && c.dtype(1) != DType::i32) c.bad("indices must be int32 or int64");
  const Shape& xs = c.shape(0);
  const Shape q = c.shape(1);
  const int64_t n = numel(q);
  // take along axis a = gather (torch.gather) with the indices laid along a and expanded over
  // the other dims, then reshaped to xs[:a] + q + xs[a+1:].
  Shape flat(static_cast<size_t>(r), 1);
  flat[static_cast<size_t>(a)] = n;
  int idx = c.reshape(c.value(1), flat);
  Shape ex = xs;
  ex[static_cast<size_t>(a)] = n;
  if (ex != flat) idx = c.emit1(Op::expand, idx, {{"shape", AttrValue::ints(ex)}});
  int y = c.emit(Op::gather, {v(c.value(0)), v(idx)}, {{"dim", AttrValue(a)}});
  Shape out(xs.begin(), xs.begin() + a);
  out.insert(out.end(), q.begin(), q.end());
  out.insert(out.end(), xs.begin() + a + 1, xs.end());
  c.set(0, c.reshape(y, out));
}

void gather_elements(NodeCtx& c) {
  c.allow({"axis"});
  const int64_t a = norm_axis(c, c.attr_int("axis", 0), c.rank(0));
  c.set(0, c.emit(Op::gather, {v(c.value(0)), v(c.value(1))}, {{"dim", AttrValue(a)}}));
}

// ScatterElements with reduction "add" is scatter_add; the other reductions have no op here.
void scatter_elements(NodeCtx& c) {
  c.allow({"axis", "reduction"});
  const std::string reduction = c.attr_string("reduction", "none");
  if (reduction != "add") c.unsupported(fmt::format("reduction '{}' (reprokit's scatter_add is reduction 'add')", reduction));
  if (c.rank(0) < 1) c.bad("data must have rank 1 or more");
  if (c.shape(2) != c.shape(1)) c.bad(fmt::format("updates have shape {}, indices {}", shape_str(c.shape(2)), shape_str(c.shape(1))));
  const int64_t a = norm_axis(c, c.attr_int("axis", 0), c.rank(0));
  c.set(0, c.emit(Op::scatter_add, {v(c.value(0)), v(c.value(1)), v(c.value(2))}, {{"dim", AttrValue(a)}}));
}

// ---- scans and top-k

// The reverse of x along axis (a gather at n-1, ..., 0).
int flip_along(NodeCtx& c, int x, int64_t axis) {
  const int64_t len = c.type_of(x).shape[static_cast<size_t>(axis)];
  std::vector<int64_t> rev(static_cast<size_t>(len));
  for (int64_t j = 0; j < len; ++j) rev[static_cast<size_t>(j)] = len - 1 - j;
  return len > 1 ? take_along(c, x, axis, rev) : x;
}

// CumSum(x, axis) = cumsum; reverse runs it on x flipped along the axis (and flips the result
// back); exclusive shifts x by one along the axis, a zero first, so each sum stops before its own
// element. The result keeps x's type (reprokit's integer cumsum is i64: cast back).
void cum_sum(NodeCtx& c) {
  c.allow({"exclusive", "reverse"});
  const int64_t exclusive = c.attr_int("exclusive", 0), reverse = c.attr_int("reverse", 0);
  if ((exclusive != 0 && exclusive != 1) || (reverse != 0 && reverse != 1))
    c.bad(fmt::format("exclusive = {} and reverse = {} must each be 0 or 1", exclusive, reverse));
  const int64_t r = c.rank(0);
  if (r == 0) c.bad("CumSum of a 0-d tensor");
  auto axes = c.need_ints(1, "axis");
  if (axes.size() != 1) c.bad(fmt::format("axis has {} elements, not 1", axes.size()));
  const int64_t a = norm_axis(c, axes[0], r);
  const int64_t len = c.shape(0)[static_cast<size_t>(a)];
  int x = c.value(0);
  if (reverse) x = flip_along(c, x, a);
  if (exclusive && len > 0) {
    std::vector<int64_t> pads(static_cast<size_t>(2 * (r - a)), 0);
    pads[pads.size() - 2] = 1;  // torch order: the last dim first, so axis a's pair is the last
    x = c.emit1(Op::pad, c.emit1(Op::slice, x, {{"dim", AttrValue(a)}, {"start", AttrValue(int64_t{0})}, {"end", AttrValue(len - 1)}}),
                {{"pads", AttrValue::ints(pads)}});
  }
  int y = c.emit1(Op::cumsum, x, {{"dim", AttrValue(a)}});
  if (reverse) y = flip_along(c, y, a);
  c.set(0, c.cast(y, c.dtype(0)));
}

// TopK(x, K) -> (values, indices): topk and topk_indices, each made for the outputs used. K must
// be known at import time and lie within the axis's length.
void top_k(NodeCtx& c) {
  c.allow({"axis", "largest", "sorted"});
  const int64_t r = c.rank(0);
  if (r == 0) c.bad("TopK of a 0-d tensor");
  const int64_t a = norm_axis(c, c.attr_int("axis", -1), r);
  const int64_t largest = c.attr_int("largest", 1), sorted = c.attr_int("sorted", 1);
  if ((largest != 0 && largest != 1) || (sorted != 0 && sorted != 1))
    c.bad(fmt::format("largest = {} and sorted = {} must each be 0 or 1", largest, sorted));
  auto ks = c.need_ints(1, "K");
  if (ks.size() != 1) c.bad(fmt::format("K has {} elements, not 1", ks.size()));
  const int64_t len = c.shape(0)[static_cast<size_t>(a)];
  if (ks[0] < 0 || ks[0] > len) c.bad(fmt::format("K = {} is out of range for axis {} of size {}", ks[0], a, len));
  if (c.dtype(0) == DType::boolean) c.bad("TopK of a bool tensor");
  Attrs attrs{{"k", AttrValue(ks[0])}, {"dim", AttrValue(a)}, {"largest", AttrValue(largest == 1)}, {"sorted", AttrValue(sorted == 1)}};
  if (c.wants(0)) c.set(0, c.emit1(Op::topk, c.value(0), attrs));
  if (c.wants(1)) c.set(1, c.emit1(Op::topk_indices, c.value(0), attrs));
}

// ---- constants and shape arithmetic

Tensor filled(DType dt, const Shape& shape, const Tensor& value) {
  Tensor t = Tensor::zeros(dt, shape);
  const int64_t n = t.numel();
  if (is_floating(dt)) {
    double x = value.get(0);
    if (x != 0.0 || std::signbit(x))
      for (int64_t i = 0; i < n; ++i) t.set(i, x);
  } else {
    int64_t x = value.get_int(0);
    if (x != 0)
      for (int64_t i = 0; i < n; ++i) t.set_int(i, x);
  }
  return t;
}

void constant(NodeCtx& c) {
  c.allow({"value", "value_float", "value_floats", "value_int", "value_ints", "sparse_value", "value_string", "value_strings"});
  if (c.n.attribute_size() != 1) c.bad("a Constant needs exactly one value attribute");
  const auto& a = c.n.attribute(0);
  const std::string where = fmt::format("{}: {}", c.imp.file, c.label());
  if (a.name() == "value") {
    if (a.type() != onnx::AttributeProto::TENSOR) c.bad("attribute 'value' must be a tensor");
    return c.set_const(0, tensor_from_proto(a.t(), where));
  }
  if (a.name() == "value_float") return c.set_const(0, Tensor::from_doubles(DType::f32, {}, {a.f()}));
  if (a.name() == "value_int") return c.set_const(0, Tensor::from_int64s(DType::i64, {}, {a.i()}));
  if (a.name() == "value_floats") {
    std::vector<double> xs(a.floats().begin(), a.floats().end());
    return c.set_const(0, Tensor::from_doubles(DType::f32, {static_cast<int64_t>(xs.size())}, xs));
  }
  if (a.name() == "value_ints") {
    std::vector<int64_t> xs(a.ints().begin(), a.ints().end());
    return c.set_const(0, Tensor::from_int64s(DType::i64, {static_cast<int64_t>(xs.size())}, xs));
  }
  c.unsupported(fmt::format("a Constant given as '{}' (strings and sparse tensors)", a.name()));
}

void constant_of_shape(NodeCtx& c) {
  c.allow({"value"});
  std::vector<int64_t> shape = c.need_ints(0, "the shape");
  for (int64_t d : shape)
    if (d < 0) c.bad(fmt::format("shape [{}] has a negative dimension", fmt::join(shape, ", ")));
  try {
    check_shape(shape, "the result");
  } catch (const UserError& e) { c.bad(e.what()); }
  Tensor value = Tensor::from_doubles(DType::f32, {}, {0.0});
  if (const auto* a = c.attr("value")) {
    if (a->type() != onnx::AttributeProto::TENSOR) c.bad("attribute 'value' must be a tensor");
    value = tensor_from_proto(a->t(), fmt::format("{}: {}: attribute 'value'", c.imp.file, c.label()));
    if (value.numel() != 1) c.bad("attribute 'value' must hold one element");
  }
  if (numel(shape) <= kFoldLimit) return c.set_const(0, filled(value.dtype(), shape, value));
  AttrValue x = value.dtype() == DType::boolean ? AttrValue(value.get_int(0) != 0)
                : is_integral(value.dtype())    ? AttrValue(value.get_int(0))
                                                : AttrValue(value.get(0));
  c.set(0, c.emit(Op::full, {}, {{"shape", AttrValue::ints(shape)}, {"value", x}, {"dtype", AttrValue(value.dtype())}}));
}

void eye_like(NodeCtx& c) {
  c.allow({"dtype", "k"});
  if (c.rank(0) != 2) c.bad("EyeLike needs a 2-D input");
  DType dt = c.attr("dtype") ? cast_target(c, static_cast<int>(c.attr_int("dtype", 1))) : c.dtype(0);
  const int64_t k = c.attr_int("k", 0), rows = c.shape(0)[0], cols = c.shape(0)[1];
  if (rows * cols > kFoldLimit) c.unsupported("an EyeLike this large");
  std::vector<int64_t> vals(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) vals[static_cast<size_t>(i * cols + j)] = j - i == k;
  c.set_const(0, Tensor::from_int64s(dt, {rows, cols}, vals));
}

void shape_op(NodeCtx& c) {
  c.allow({"start", "end"});
  const Shape& s = c.shape(0);
  const int64_t r = c.rank(0);
  auto clampi = [&](int64_t i) {
    if (i < 0) i += r;
    return std::clamp<int64_t>(i, 0, r);
  };
  int64_t start = clampi(c.attr_int("start", 0)), end = std::max(start, clampi(c.attr_int("end", r)));
  std::vector<int64_t> dims(s.begin() + start, s.begin() + end);
  c.set_const(0, Tensor::from_int64s(DType::i64, {static_cast<int64_t>(dims.size())}, dims));
}

void size_op(NodeCtx& c) {
  c.allow({});
  c.set_const(0, Tensor::from_int64s(DType::i64, {}, {numel(c.shape(0))}));
}

void range(NodeCtx& c) {
  c.allow({});
  Tensor start = c.need_constant(0, "start"), limit = c.need_constant(1, "limit"), delta = c.need_constant(2, "delta");
  if (start.numel() != 1 || limit.numel() != 1 || delta.numel() != 1) c.bad("start, limit and delta must be scalars");
  const DType dt = start.dtype();
  if (is_integral(dt)) {
    int64_t s = start.get_int(0), l = limit.get_int(0), d = delta.get_int(0);
    if (d == 0) c.bad("delta is 0");
    double count = std::ceil((static_cast<double>(l) - static_cast<double>(s)) / static_cast<double>(d));
    int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
    if (n > kFoldLimit) c.unsupported(fmt::format("a Range of {:.0f} elements (import-time evaluation stops at {})", count, kFoldLimit));
    std::vector<int64_t> vals;
    for (int64_t i = 0; i < n; ++i) vals.push_back(s + i * d);
    return c.set_const(0, Tensor::from_int64s(dt, {n}, vals));
  }
  double s = start.get(0), l = limit.get(0), d = delta.get(0);
  if (d == 0) c.bad("delta is 0");
  if (!std::isfinite(s) || !std::isfinite(l) || !std::isfinite(d)) c.bad("start, limit and delta must be finite");
  double count = std::ceil((l - s) / d);
  if (!(count < static_cast<double>(kFoldLimit)))
    c.unsupported(fmt::format("a Range of {:.3g} elements (import-time evaluation stops at {})", count, kFoldLimit));
  int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
  std::vector<double> vals;
  double x = s;
  for (int64_t i = 0; i < n; ++i) vals.push_back(round_to_dtype(s + static_cast<double>(i) * d, dt)), x += d;
  c.set_const(0, Tensor::from_doubles(dt, {n}, vals));
}

// The handler of row I of kOneToOneOps: its kind's, for its op.
template <size_t I> void one_to_one_handler(NodeCtx& c) {
  constexpr OneToOneOp row = kOneToOneOps[I];
  if constexpr (row.kind == OneToOneKind::unary) unary<row.op>(c);
  else if constexpr (row.kind == OneToOneKind::binary) binary<row.op>(c);
  else if constexpr (row.kind == OneToOneKind::reduce) reduce_op<row.op>(c);
  else softmax<row.op>(c);
}

template <size_t... I> void add_one_to_one(std::map<std::string, Handler, std::less<>>& table, std::index_sequence<I...>) {
  (table.emplace(kOneToOneOps[I].onnx, &one_to_one_handler<I>), ...);
}

}  // namespace

const std::map<std::string, Handler, std::less<>>& handlers() {
  static std::map<std::string, Handler, std::less<>> table = {
      // pointwise (and the one-to-one ops of onnx_op_names.h, added below)
      {"Tan", tan_op},
      {"Not", not_op},
      {"And", logical<Op::mul>},
      {"Or", logical<Op::maximum>},
      {"Xor", logical<Op::ne>},
      {"Max", variadic<Op::maximum>},
      {"Min", variadic<Op::minimum>},
      {"Sum", variadic<Op::add>},
      {"Mean", mean_op},
      {"Where", where_op},
      {"Cast", cast_op},
      {"CastLike", cast_like},
      {"Identity", identity},
      {"Dropout", dropout},
      {"Clip", clip},
      {"LeakyRelu", leaky_relu},
      {"PRelu", prelu},
      {"Elu", elu},
      {"Selu", selu},
      {"Celu", celu},
      {"HardSigmoid", hard_sigmoid},
      {"HardSwish", hard_swish},
      {"Softplus", softplus},
      {"Softsign", softsign},
      {"ThresholdedRelu", thresholded_relu},
      {"Sign", sign},
      {"IsNaN", is_nan},
      {"IsInf", is_inf},
      // normalization
      {"LayerNormalization", layer_norm},
      // linear algebra
      {"Gemm", gemm},
      {"MatMul", matmul},
      // reductions
      {"ReduceL1", reduce_op<Op::sum, Pre::abs>},
      {"ReduceL2", reduce_op<Op::sum, Pre::square, Post::sqrt>},
      {"ReduceSumSquare", reduce_op<Op::sum, Pre::square>},
      {"ReduceLogSum", reduce_op<Op::sum, Pre::none, Post::log>},
      {"ReduceLogSumExp", reduce_op<Op::sum, Pre::exp, Post::log>},
      {"ArgMax", argmax<false>},
      {"ArgMin", argmax<true>},
      // shape
      {"Reshape", reshape_op},
      {"Flatten", flatten},
      {"Expand", expand},
      {"Squeeze", squeeze},
      {"Unsqueeze", unsqueeze},
      {"Transpose", transpose},
      {"Einsum", einsum},
      {"DepthToSpace", depth_space},
      {"SpaceToDepth", depth_space},
      {"Concat", concat},
      {"Split", split},
      {"Slice", slice},
      {"Tile", tile},
      {"Trilu", trilu},
      // indexing
      {"Gather", gather},
      {"GatherElements", gather_elements},
      {"ScatterElements", scatter_elements},
      // scans and top-k
      {"CumSum", cum_sum},
      {"TopK", top_k},
      // constants
      {"Constant", constant},
      {"ConstantOfShape", constant_of_shape},
      {"EyeLike", eye_like},
      {"Shape", shape_op},
      {"Size", size_op},
      {"Range", range},
  };
  static const bool merged = [] {
    add_one_to_one(table, std::make_index_sequence<std::size(kOneToOneOps)>());
    for (const auto& [name, h] : conv_handlers()) table.emplace(name, h);
    for (const auto& [name, h] : recurrent_handlers()) table.emplace(name, h);
    for (const auto& [name, h] : folded_handlers()) table.emplace(name, h);
    for (const auto& [name, h] : resize_handlers()) table.emplace(name, h);
    for (const auto& [name, h] : sample_handlers()) table.emplace(name, h);
    for (const auto& [name, h] : control_handlers()) table.emplace(name, h);
    for (const auto& [name, h] : quantize_handlers()) table.emplace(name, h);
    return true;
  }();
  (void)merged;
  return table;
}

}  // namespace reprokit::onnx_detail
