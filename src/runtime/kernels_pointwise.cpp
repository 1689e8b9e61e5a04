// Reference kernels of the pointwise ops: unary, binary (broadcasting), where, to, clone,
// contiguous. Floating ops compute in double (rounded on store); integer and bool ops compute in
// int64, wrapping as PyTorch's integer arithmetic does.
#include <fmt/format.h>

#include <cmath>

#include "kernel_util.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/op_semantics.h"

namespace reprokit::kernels {

namespace {

using F1 = double (*)(double);
using F2 = double (*)(double, double);
using I1 = int64_t (*)(int64_t);
using I2 = int64_t (*)(int64_t, int64_t);

int64_t wrap_add(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); }
int64_t wrap_sub(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b)); }
int64_t wrap_mul(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); }
int64_t wrap_neg(int64_t a) { return wrap_sub(0, a); }

// Integer power by squaring, wrapping; a negative exponent truncates 1/a^-b toward zero.
int64_t int_pow(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  int64_t r = 1;
  for (; b; b >>= 1, a = wrap_mul(a, a))
    if (b & 1) r = wrap_mul(r, a);
  return r;
}

double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh(double x) { return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
// NaN-propagating max/min, as torch.maximum / torch.minimum.
double nan_max(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
double nan_min(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }

// The scalar function of a unary or binary op, in double and in int64 (where integers apply).
struct Fn {
  F1 f1 = nullptr;
  F2 f2 = nullptr;
  I1 i1 = nullptr;
  I2 i2 = nullptr;
};

Fn function_of(const Node& n) {
  switch (n.op) {
    case Op::neg: return {[](double x) { return -x; }, nullptr, wrap_neg};
    case Op::abs: return {[](double x) { return std::fabs(x); }, nullptr, [](int64_t x) { return x < 0 ? wrap_neg(x) : x; }};
    case Op::exp: return {[](double x) { return std::exp(x); }};
    case Op::log: return {[](double x) { return std::log(x); }};
    case Op::sqrt: return {[](double x) { return std::sqrt(x); }};
    case Op::rsqrt: return {[](double x) { return 1.0 / std::sqrt(x); }};
    case Op::reciprocal: return {[](double x) { return 1.0 / x; }};
    case Op::sin: return {[](double x) { return std::sin(x); }};
    case Op::cos: return {[](double x) { return std::cos(x); }};
    case Op::tanh: return {[](double x) { return std::tanh(x); }};
    case Op::relu: return {[](double x) { return std::isnan(x) ? x : x > 0 ? x : 0.0; }, nullptr, [](int64_t x) { return x > 0 ? x : int64_t{0}; }};
    case Op::erf: return {[](double x) { return std::erf(x); }};
    case Op::sigmoid: return {sigmoid};
    case Op::silu: return {[](double x) { return x * sigmoid(x); }};
    case Op::gelu: return {attr(n, "approximate").as_string() == "tanh" ? gelu_tanh : gelu_erf};
    case Op::add: return {nullptr, [](double a, double b) { return a + b; }, nullptr, wrap_add};
    case Op::sub: return {nullptr, [](double a, double b) { return a - b; }, nullptr, wrap_sub};
    case Op::mul: return {nullptr, [](double a, double b) { return a * b; }, nullptr, wrap_mul};
    case Op::div: return {nullptr, [](double a, double b) { return a / b; }};
    case Op::pow: return {nullptr, [](double a, double b) { return std::pow(a, b); }, nullptr, int_pow};
    case Op::maximum: return {nullptr, nan_max, nullptr, [](int64_t a, int64_t b) { return std::max(a, b); }};
    case Op::minimum: return {nullptr, nan_min, nullptr, [](int64_t a, int64_t b) { return std::min(a, b); }};
    case Op::eq:
      return {nullptr, [](double a, double b) { return a == b ? 1.0 : 0.0; }, nullptr, [](int64_t a, int64_t b) { return int64_t{a == b}; }};
    case Op::ne:
      return {nullptr, [](double a, double b) { return a != b ? 1.0 : 0.0; }, nullptr, [](int64_t a, int64_t b) { return int64_t{a != b}; }};
    case Op::lt: return {nullptr, [](double a, double b) { return a < b ? 1.0 : 0.0; }, nullptr, [](int64_t a, int64_t b) { return int64_t{a < b}; }};
    case Op::le:
      return {nullptr, [](double a, double b) { return a <= b ? 1.0 : 0.0; }, nullptr, [](int64_t a, int64_t b) { return int64_t{a <= b}; }};
    case Op::gt: return {nullptr, [](double a, double b) { return a > b ? 1.0 : 0.0; }, nullptr, [](int64_t a, int64_t b) { return int64_t{a > b}; }};
    case Op::ge:
      return {nullptr, [](double a, double b) { return a >= b ? 1.0 : 0.0; }, nullptr, [](int64_t a, int64_t b) { return int64_t{a >= b}; }};
    // Elementwise copies, selection and clamping: no scalar function (see pointwise()).
    case Op::where:
    case Op::to:
    case Op::clone:
    case Op::contiguous:
    case Op::clamp:
    // Not pointwise.
    case Op::input:
    case Op::sum:
    case Op::amax:
    case Op::amin:
    case Op::mean:
    case Op::var:
    case Op::argmax:
    case Op::softmax:
    case Op::log_softmax:
    case Op::layer_norm:
    case Op::matmul:
    case Op::linear:
    case Op::reshape:
    case Op::permute:
    case Op::transpose:
    case Op::expand:
    case Op::slice:
    case Op::cat:
    case Op::squeeze:
    case Op::unsqueeze:
    case Op::embedding:
    case Op::gather:
    case Op::full:
    case Op::batch_norm:
    case Op::conv2d:
    case Op::max_pool2d:
    case Op::avg_pool2d:
    case Op::adaptive_avg_pool2d:
    case Op::max_pool2d_backward:
    case Op::avg_pool2d_backward:
    case Op::pad:
    case Op::cumsum:
    case Op::cumprod:
    case Op::sort:
    case Op::argsort:
    case Op::topk:
    case Op::topk_indices:
    case Op::conv3d:
    case Op::max_pool3d:
    case Op::avg_pool3d:
    case Op::max_pool3d_backward:
    case Op::avg_pool3d_backward:
    case Op::conv_transpose2d:
    case Op::conv_transpose3d:
    case Op::group_norm:
    case Op::instance_norm:
    case Op::pixel_shuffle:
    case Op::pixel_unshuffle:
    case Op::einsum:
    case Op::conv2d_input_grad:
    case Op::conv2d_weight_grad:
    case Op::conv3d_input_grad:
    case Op::conv3d_weight_grad:
    case Op::grid_sample:
    case Op::affine_grid:
    case Op::scatter_add: break;
  }
  return {};
}

// Operand k's values at the broadcast positions of the output, converted to doubles rounded to
// the compute type (an int tensor in f32 arithmetic is first an f32, as in PyTorch).
std::vector<double> as_doubles(const Values& v, const std::vector<int64_t>& map, DType compute) {
  std::vector<double> out(map.size());
  for (size_t i = 0; i < map.size(); ++i) {
    double x = v.as_double(static_cast<size_t>(map[i]));
    out[i] = v.is_int() ? round_to_dtype(x, compute) : x;
  }
  return out;
}

std::vector<int64_t> as_ints(const Values& v, const std::vector<int64_t>& map) {
  std::vector<int64_t> out(map.size());
  for (size_t i = 0; i < map.size(); ++i) out[i] = v.as_int(static_cast<size_t>(map[i]));
  return out;
}

// Result values of dtype `rt` from doubles: floating results keep them, others convert.
Values result_from_doubles(DType rt, const Shape& out, std::vector<double> v) {
  if (is_floating(rt)) return Values::floats(rt, out, std::move(v));
  std::vector<int64_t> iv(v.size());
  for (size_t i = 0; i < v.size(); ++i) iv[i] = to_integer_dtype(v[i], rt);
  return Values::ints(rt, out, std::move(iv));
}

Values result_from_ints(DType rt, const Shape& out, std::vector<int64_t> v) {
  if (!is_floating(rt)) return Values::ints(rt, out, std::move(v));
  std::vector<double> fv(v.size());
  for (size_t i = 0; i < v.size(); ++i) fv[i] = static_cast<double>(v[i]);
  return Values::floats(rt, out, std::move(fv));
}

}  // namespace

Values pointwise(const Node& n, const std::vector<Values>& a, const Shape& out) {
  std::vector<DType> dtypes;
  std::vector<int64_t> ranks;
  std::vector<std::vector<int64_t>> maps;
  for (auto& v : a) {
    dtypes.push_back(v.dtype);
    ranks.push_back(static_cast<int64_t>(v.shape.size()));
    maps.push_back(broadcast_map(out, v.shape));
  }
  DType ct = compute_dtype(n, dtypes, ranks), rt = n.type.dtype;
  bool int_compute = !is_floating(ct);
  size_t count = static_cast<size_t>(numel(out));
  if (n.op == Op::where) {
    std::vector<int64_t> c = as_ints(a[0], maps[0]);
    if (int_compute) {
      auto x = as_ints(a[1], maps[1]), y = as_ints(a[2], maps[2]);
      for (size_t i = 0; i < count; ++i) x[i] = c[i] ? x[i] : y[i];
      return result_from_ints(rt, out, std::move(x));
    }
    auto x = as_doubles(a[1], maps[1], ct), y = as_doubles(a[2], maps[2], ct);
    for (size_t i = 0; i < count; ++i) x[i] = c[i] ? x[i] : y[i];
    return result_from_doubles(rt, out, std::move(x));
  }
  if (n.op == Op::clamp) {  // min then max, as torch.clamp: NaN stays, min > max gives max
    auto lo = attr_opt(n, "min"), hi = attr_opt(n, "max");
    if (int_compute) {
      auto x = as_ints(a[0], maps[0]);
      for (auto& v : x) {
        if (lo && v < lo->as_int()) v = lo->as_int();
        if (hi && v > hi->as_int()) v = hi->as_int();
      }
      return result_from_ints(rt, out, std::move(x));
    }
    auto x = as_doubles(a[0], maps[0], ct);
    // Bounds in the compute type, as PyTorch's CPU kernel (a float32 tensor clamps at float32
    // bounds; float64 values, in float64 mode too, at exact ones).
    DType bound_type = a[0].dtype == DType::f64 ? DType::f64 : DType::f32;
    double lov = lo ? round_to_dtype(lo->as_float(), bound_type) : 0;
    double hiv = hi ? round_to_dtype(hi->as_float(), bound_type) : 0;
    for (auto& v : x) {
      if (lo && v < lov) v = lov;
      if (hi && v > hiv) v = hiv;
    }
    return result_from_doubles(rt, out, std::move(x));
  }
  if (n.op == Op::to || n.op == Op::clone || n.op == Op::contiguous) {  // copies, converting to rt
    if (int_compute) return result_from_ints(rt, out, as_ints(a[0], maps[0]));
    return result_from_doubles(rt, out, as_doubles(a[0], maps[0], ct));
  }
  Fn fn = function_of(n);
  if (int_compute && (fn.i1 || fn.i2)) {
    auto x = as_ints(a[0], maps[0]);
    if (fn.i1) {
      for (auto& v : x) v = fn.i1(v);
    } else {
      auto y = as_ints(a[1], maps[1]);
      for (size_t i = 0; i < count; ++i) x[i] = fn.i2(x[i], y[i]);
    }
    return result_from_ints(rt, out, std::move(x));
  }
  if (!fn.f1 && !fn.f2) throw InternalError(fmt::format("reference kernels: op '{}' is not pointwise", op_name(n.op)));
  auto x = as_doubles(a[0], maps[0], ct);
  if (fn.f1) {
    for (auto& v : x) v = fn.f1(v);
  } else {
    auto y = as_doubles(a[1], maps[1], ct);
    for (size_t i = 0; i < count; ++i) x[i] = fn.f2(x[i], y[i]);
  }
  return result_from_doubles(rt, out, std::move(x));
}

}  // namespace reprokit::kernels
