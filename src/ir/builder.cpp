// Builder and Expr (see builder.h).
#include "reprokit/ir/builder.h"

#include <fmt/format.h>

#include "reprokit/support/errors.h"

namespace reprokit {

void NameSet::add_all(const Graph& g) {
  for (auto& n : g.nodes) taken_.insert(n.name);
}

std::string NameSet::fresh(std::string_view prefix) {
  std::string base(prefix.empty() ? "v" : prefix);
  if (taken_.insert(base).second) return base;
  int& k = next_[base];
  for (;;) {
    std::string cand = fmt::format("{}_{}", base, ++k);
    if (taken_.insert(cand).second) return cand;
  }
}

TensorType Expr::type() const { return b_->graph().node(id_).type; }

Expr Builder::op(Op op, const std::vector<Arg>& args, Attrs attrs) {
  std::vector<Operand> operands;
  for (auto& a : args) {
    if (a.builder && a.builder != this) throw InternalError("Builder::op: an operand belongs to another builder");
    operands.push_back(a.operand);
  }
  std::string name = names_.fresh(fmt::format("{}.{}", base_, op_name(op)));
  return Expr(this, g_.add_node(std::move(name), op, std::move(operands), std::move(attrs)));
}

namespace {

Builder& builder_of(const Arg& a, const Arg& b) {
  if (a.builder) return *a.builder;
  if (b.builder) return *b.builder;
  throw InternalError("a binary Expr needs at least one value operand");
}

Expr binary(Op op, const Arg& a, const Arg& b) { return builder_of(a, b).op(op, {a, b}); }
Expr unary(Op op, Expr x) { return x.builder().op(op, {x}); }

Attrs reduce_attrs(const std::vector<int64_t>& dims, bool keepdim) { return {{"dims", AttrValue::ints(dims)}, {"keepdim", AttrValue(keepdim)}}; }

}  // namespace

Expr operator+(const Arg& a, const Arg& b) { return binary(Op::add, a, b); }
Expr operator-(const Arg& a, const Arg& b) { return binary(Op::sub, a, b); }
Expr operator*(const Arg& a, const Arg& b) { return binary(Op::mul, a, b); }
Expr operator/(const Arg& a, const Arg& b) { return binary(Op::div, a, b); }
Expr operator-(Expr x) { return unary(Op::neg, x); }
Expr pow(const Arg& a, const Arg& b) { return binary(Op::pow, a, b); }
Expr maximum(const Arg& a, const Arg& b) { return binary(Op::maximum, a, b); }
Expr minimum(const Arg& a, const Arg& b) { return binary(Op::minimum, a, b); }
Expr eq(const Arg& a, const Arg& b) { return binary(Op::eq, a, b); }
Expr ne(const Arg& a, const Arg& b) { return binary(Op::ne, a, b); }
Expr lt(const Arg& a, const Arg& b) { return binary(Op::lt, a, b); }
Expr le(const Arg& a, const Arg& b) { return binary(Op::le, a, b); }
Expr gt(const Arg& a, const Arg& b) { return binary(Op::gt, a, b); }
Expr ge(const Arg& a, const Arg& b) { return binary(Op::ge, a, b); }
Expr where(Expr cond, const Arg& a, const Arg& b) { return cond.builder().op(Op::where, {cond, a, b}); }

Expr abs(Expr x) { return unary(Op::abs, x); }
Expr exp(Expr x) { return unary(Op::exp, x); }
Expr log(Expr x) { return unary(Op::log, x); }
Expr sqrt(Expr x) { return unary(Op::sqrt, x); }
Expr rsqrt(Expr x) { return unary(Op::rsqrt, x); }
Expr reciprocal(Expr x) { return unary(Op::reciprocal, x); }
Expr sin(Expr x) { return unary(Op::sin, x); }
Expr cos(Expr x) { return unary(Op::cos, x); }
Expr tanh(Expr x) { return unary(Op::tanh, x); }
Expr erf(Expr x) { return unary(Op::erf, x); }
Expr relu(Expr x) { return unary(Op::relu, x); }
Expr sigmoid(Expr x) { return unary(Op::sigmoid, x); }

Expr cast(Expr x, DType dtype) {
  if (x.dtype() == dtype) return x;
  return x.builder().op(Op::to, {x}, {{"dtype", AttrValue(dtype)}});
}

Expr sum(Expr x, const std::vector<int64_t>& dims, bool keepdim) { return x.builder().op(Op::sum, {x}, reduce_attrs(dims, keepdim)); }
Expr sum_all(Expr x) { return x.builder().op(Op::sum, {x}); }
Expr amax(Expr x, const std::vector<int64_t>& dims, bool keepdim) { return x.builder().op(Op::amax, {x}, reduce_attrs(dims, keepdim)); }

Expr reshape(Expr x, const Shape& shape) {
  if (x.shape() == shape) return x;
  return x.builder().op(Op::reshape, {x}, {{"shape", AttrValue::ints(shape)}});
}

Expr expand(Expr x, const Shape& shape) { return x.builder().op(Op::expand, {x}, {{"shape", AttrValue::ints(shape)}}); }

Expr transpose(Expr x, int64_t dim0, int64_t dim1) {
  return x.builder().op(Op::transpose, {x}, {{"dim0", AttrValue(dim0)}, {"dim1", AttrValue(dim1)}});
}

Expr permute(Expr x, const std::vector<int64_t>& dims) { return x.builder().op(Op::permute, {x}, {{"dims", AttrValue::ints(dims)}}); }
Expr unsqueeze(Expr x, int64_t dim) { return x.builder().op(Op::unsqueeze, {x}, {{"dim", AttrValue(dim)}}); }
Expr squeeze(Expr x, int64_t dim) { return x.builder().op(Op::squeeze, {x}, {{"dim", AttrValue(dim)}}); }

Expr slice(Expr x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  Attrs a{{"dim", AttrValue(dim)}, {"start", AttrValue(start)}, {"end", AttrValue(end)}};
  if (step != 1) a["step"] = AttrValue(step);
  return x.builder().op(Op::slice, {x}, std::move(a));
}

Expr cat(const std::vector<Expr>& xs, int64_t dim) {
  std::vector<Arg> args(xs.begin(), xs.end());
  return xs.at(0).builder().op(Op::cat, args, {{"dim", AttrValue(dim)}});
}

Expr matmul(Expr a, Expr b) { return a.builder().op(Op::matmul, {a, b}); }
Expr gather(Expr x, Expr index, int64_t dim) { return x.builder().op(Op::gather, {x, index}, {{"dim", AttrValue(dim)}}); }

Expr pad(Expr x, const std::vector<int64_t>& pads, double value) {
  bool any = false;
  for (auto p : pads) any |= p != 0;
  if (!any) return x;
  return x.builder().op(Op::pad, {x}, {{"pads", AttrValue::ints(pads)}, {"value", AttrValue(value)}});
}

Expr conv2d(Expr x, Expr w, const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
            int64_t groups) {
  return x.builder().op(Op::conv2d, {x, w},
                        {{"stride", AttrValue::ints(stride)},
                         {"padding", AttrValue::ints(padding)},
                         {"dilation", AttrValue::ints(dilation)},
                         {"groups", AttrValue(groups)}});
}

Expr full(Builder& b, const Shape& shape, const AttrValue& value, DType dtype) {
  return b.op(Op::full, {}, {{"shape", AttrValue::ints(shape)}, {"value", value}, {"dtype", AttrValue(dtype)}});
}

}  // namespace reprokit
