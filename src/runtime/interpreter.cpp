// The reference interpreter: walks the graph in order, runs each node's reference kernel (floats
// in double, integers exactly in int64) and stores the result in the node's dtype (or keeps f64
// for floating values in float64 mode).
#include "reprokit/runtime/interpreter.h"
#include <algorithm>

#include "reprokit/runtime/memory_budget.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <optional>
#include <random>

#include "kernel_util.h"
#include "node_memo_keys.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/op_registry.h"

namespace reprokit {

namespace {

DType value_dtype(DType t, bool f64_mode) { return f64_mode && is_floating(t) ? DType::f64 : t; }

// A literal operand as a 0-d value. Floats compute in the op's compute type: f32 for
// f16/bf16/f32 results, as PyTorch's CPU kernels do, unless the graph runs in float64.
kernels::Values literal_values(const AttrValue& lit, DType compute, bool f64_mode) {
  if (lit.is_bool()) return kernels::Values::ints(DType::boolean, {}, {lit.as_bool() ? 1 : 0});
  if (lit.is_int()) return kernels::Values::ints(DType::i64, {}, {lit.as_int()});
  double v = lit.as_float();
  if (!f64_mode && is_floating(compute) && compute != DType::f64) v = static_cast<float>(v);
  return kernels::Values::floats(DType::f64, {}, {v});
}

kernels::Values run_kernel(const Node& n, const std::vector<kernels::Values>& a, AccumulationOrder order = AccumulationOrder::exact) {
  const Shape& out = n.type.shape;
  switch (n.op) {
    case Op::neg:
    case Op::abs:
    case Op::exp:
    case Op::log:
    case Op::sqrt:
    case Op::rsqrt:
    case Op::reciprocal:
    case Op::sin:
    case Op::cos:
    case Op::tanh:
    case Op::relu:
    case Op::erf:
    case Op::sigmoid:
    case Op::silu:
    case Op::gelu:
    case Op::add:
    case Op::sub:
    case Op::mul:
    case Op::div:
    case Op::pow:
    case Op::maximum:
    case Op::minimum:
    case Op::eq:
    case Op::ne:
    case Op::lt:
    case Op::le:
    case Op::gt:
    case Op::ge:
    case Op::where:
    case Op::to:
    case Op::clone:
    case Op::contiguous:
    case Op::clamp: return kernels::pointwise(n, a, out);
    case Op::sum:
    case Op::amax:
    case Op::amin:
    case Op::mean:
    case Op::var:
    case Op::argmax: return kernels::reduction(n, a, out, order);
    case Op::softmax:
    case Op::log_softmax:
    case Op::layer_norm:
    case Op::batch_norm:
    case Op::group_norm:
    case Op::instance_norm: return kernels::normalization(n, a, out);
    case Op::conv2d:
    case Op::max_pool2d:
    case Op::avg_pool2d:
    case Op::adaptive_avg_pool2d:
    case Op::max_pool2d_backward:
    case Op::avg_pool2d_backward:
    case Op::conv3d:
    case Op::max_pool3d:
    case Op::avg_pool3d:
    case Op::max_pool3d_backward:
    case Op::avg_pool3d_backward:
    case Op::conv_transpose2d:
    case Op::conv_transpose3d:
    case Op::conv2d_input_grad:
    case Op::conv2d_weight_grad:
    case Op::conv3d_input_grad:
    case Op::conv3d_weight_grad: return kernels::conv(n, a, out, order);
    case Op::matmul:
    case Op::linear:
    case Op::einsum: return kernels::linalg(n, a, out, order);
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
    case Op::scatter_add:
    case Op::pad:
    case Op::pixel_shuffle:
    case Op::pixel_unshuffle: return kernels::data_movement(n, a, out);
    case Op::cumsum:
    case Op::cumprod:
    case Op::sort:
    case Op::argsort:
    case Op::topk:
    case Op::topk_indices: return kernels::scan(n, a, out);
    case Op::full: return kernels::creation(n, out);
    case Op::grid_sample:
    case Op::affine_grid: return kernels::sampling(n, a, out);
    case Op::input: break;
  }
  throw InternalError(fmt::format("no reference kernel for op '{}'", op_name(n.op)));
}

// Whether x is a whole number that `dtype` holds exactly, with room to spare (below 2^(its
// significand's bits)): a count, a mask, a quantised level. Such a value comes from an exact step
// (a cast from an integer, a rounding), which no legitimate reordering rounds differently.
bool exact_whole_number(double x, DType dtype) {
  const double exact_below = dtype == DType::f16 ? 2048.0 : dtype == DType::bf16 ? 256.0 : dtype == DType::f32 ? 16777216.0 : 9007199254740992.0;
  return std::fabs(x) < exact_below && x == std::trunc(x);
}

// Rounds each value to dtype, then moves the nonzero ones one ulp up or down at random. Whole
// numbers stay: moved an ulp down, a quantised level truncates to the level below (a quantised
// graph's rounding steps then made a 2% error look like noise).
void round_the_other_way(kernels::Values& v, DType dtype, std::mt19937_64& rng) {
  for (double& x : v.f) {
    if (x == 0 || !std::isfinite(x)) continue;
    x = round_to_dtype(x, dtype);
    if (x == 0 || !std::isfinite(x) || exact_whole_number(x, dtype)) continue;
    x += (rng() & 1 ? 1 : -1) * ulp_of(x, dtype);
  }
}

double rms_of(const kernels::Values& v) {
  double s = 0;
  size_t n = 0;
  for (size_t i = 0; i < v.size(); ++i)
    if (double x = v.as_double(i); std::isfinite(x)) s += x * x, ++n;
  return n ? std::sqrt(s / static_cast<double>(n)) : 0;
}

// Ops whose result is one of their operands' values, moved, selected or negated: exact when
// those are.
bool moves_values_exactly(Op op) {
  switch (op) {
    case Op::neg:
    case Op::abs:
    case Op::relu:
    case Op::maximum:
    case Op::minimum:
    case Op::where:
    case Op::clone:
    case Op::clamp:
    case Op::amax:
    case Op::amin:
    case Op::max_pool2d:
    case Op::max_pool3d:
    case Op::reshape:
    case Op::permute:
    case Op::transpose:
    case Op::expand:
    case Op::slice:
    case Op::cat:
    case Op::squeeze:
    case Op::unsqueeze:
    case Op::contiguous:
    case Op::pad:
    case Op::pixel_shuffle:
    case Op::pixel_unshuffle:
    case Op::embedding:
    case Op::gather:
    case Op::sort:
    case Op::topk: return true;
    default: return false;
  }
}

// Whether node `n`'s value may carry rounding, given its operands' (`rounded`, by node id): a
// floating value computed by arithmetic may; an input, a literal, a created value and exact values
// moved about may not. Two values that tie where either may carry rounding are a decision that
// rounding upstream could have taken either way (batch norm over two values gives exactly +-1,
// and a residual add cancels to exactly 0 in float64 but not in float32); two exact values that
// tie are equal.
bool an_operand_may_carry_rounding(const Node& n, const std::vector<char>& rounded) {
  for (auto& o : n.operands)
    if (o.is_value() && rounded[static_cast<size_t>(o.value)]) return true;
  return false;
}
bool may_carry_rounding(const Node& n, bool operands) {
  if (n.op == Op::full) return false;
  if (moves_values_exactly(n.op)) return operands;
  return operands || is_floating(n.type.dtype);
}

// See InterpretOptions::flip_kinks_band. `ties`: a comparison's exact ties go the other way too
// (its operands may carry rounding).
void flip_kinks(const Node& n, const std::vector<kernels::Values>& a, kernels::Values& result, double band, bool ties) {
  if (n.op == Op::relu && !result.is_int()) {
    const double near = band * rms_of(a[0]);
    for (size_t i = 0; i < result.f.size(); ++i) {
      double x = a[0].f[i];
      if (x != 0 && std::fabs(x) <= near) result.f[i] = x > 0 ? 0.0 : -x;
    }
    return;
  }
  if (!has_kink(n.op)) return;
  if (a[0].is_int() && a[1].is_int()) return;  // integers are exact: no kink to cross
  const double near = band * std::max(rms_of(a[0]), rms_of(a[1]));
  auto ia = kernels::broadcast_map(n.type.shape, a[0].shape), ib = kernels::broadcast_map(n.type.shape, a[1].shape);
  for (size_t i = 0; i < result.i.size(); ++i) {
    double d = std::fabs(a[0].as_double(static_cast<size_t>(ia[i])) - a[1].as_double(static_cast<size_t>(ib[i])));
    if ((d != 0 || ties) && d <= near) result.i[i] = !result.i[i];
  }
}

// The kernel of `n` works on copies as doubles (8 bytes an element) of its operands and its result,
// and may hold one more result-sized temporary while it computes (measured on exp: the process
// grew past its budget by that much between two checks when only one result was counted).
size_t working_bytes(const Graph& g, const Node& n) {
  int64_t working = 2 * n.type.numel();
  for (auto& o : n.operands)
    if (o.is_value()) working += g.node(o.value).type.numel();
  return static_cast<size_t>(working) * sizeof(double);
}

size_t largest_working_set(const Graph& g) {
  size_t most = 0;
  for (int id = g.num_inputs(); id < g.size(); ++id) most = std::max(most, working_bytes(g, g.node(id)));
  return most;
}

Tensor to_tensor(const kernels::Values& v, DType dtype, const Shape& shape) {
  if (v.is_int()) return Tensor::from_int64s(dtype, shape, v.i);
  return Tensor::from_doubles(dtype, shape, v.f);
}

}  // namespace

bool has_kink(Op op) {
  switch (op) {
    case Op::relu:
    case Op::lt:
    case Op::le:
    case Op::gt:
    case Op::ge:
    case Op::eq:
    case Op::ne: return true;
    default: return false;
  }
}

Tensor run_reference_kernel(const Node& node, const std::vector<Tensor>& operands, bool f64_mode) {
  std::vector<kernels::Values> args;
  args.reserve(operands.size());
  for (size_t k = 0; k < operands.size(); ++k) {
    if (k < node.operands.size() && !node.operands[k].is_value()) args.push_back(literal_values(node.operands[k].literal, node.type.dtype, f64_mode));
    else args.push_back(kernels::Values::of(operands[k]));
  }
  return to_tensor(run_kernel(node, args), value_dtype(node.type.dtype, f64_mode), node.type.shape);
}

std::vector<Tensor> interpret_all(const Graph& g, const std::vector<Tensor>& inputs, const InterpretOptions& opts) {
  int ni = g.num_inputs();
  if (static_cast<int>(inputs.size()) != ni) throw UserError(fmt::format("graph {} takes {} inputs, got {}", g.name, ni, inputs.size()));
  std::vector<Tensor> values(static_cast<size_t>(g.size()));
  std::mt19937_64 rng(opts.perturb_values_seed);
  for (int i = 0; i < ni; ++i) {
    const Node& in = g.node(i);
    const Tensor& t = inputs[static_cast<size_t>(i)];
    if (t.dtype() != in.type.dtype || t.shape() != in.type.shape)
      throw UserError(fmt::format("input %{} of graph {} must be {}, got {}[{}]", in.name, g.name, in.type.str(), dtype_name(t.dtype()),
                                  fmt::join(t.shape(), ", ")));
    values[static_cast<size_t>(i)] = opts.cast_to_f64 && is_floating(t.dtype()) && t.dtype() != DType::f64 ? t.to(DType::f64) : t;
    if (opts.on_value) opts.on_value(i, values[static_cast<size_t>(i)]);
  }
  check_room_for(largest_working_set(g), "the reference interpreter's working copies need");   // before the first node, not at the largest
  std::vector<char> rounded(opts.flip_kinks_band > 0 ? static_cast<size_t>(g.size()) : 0, 0);  // by node id: may_carry_rounding
  // Results remembered from earlier runs of the same nodes on the same values (node_memo.h).
  const bool memo = node_memo::applies(opts);
  std::vector<node_memo::Key> keys(memo ? static_cast<size_t>(g.size()) : 0);
  const node_memo::Key run = memo ? node_memo::of_run(opts) : node_memo::Key{};
  for (int i = 0; i < ni && memo; ++i) keys[static_cast<size_t>(i)] = node_memo::of_input(values[static_cast<size_t>(i)], run);
  for (int id = ni; id < g.size(); ++id) {
    const Node& n = g.node(id);
    if (memo) {
      std::vector<node_memo::Key> operand_keys;
      for (auto& o : n.operands)
        if (o.is_value()) operand_keys.push_back(keys[static_cast<size_t>(o.value)]);
      keys[static_cast<size_t>(id)] = node_memo::of_node(n, operand_keys, run);
      if (std::optional<Tensor> known = node_memo::find(keys[static_cast<size_t>(id)])) {
        if (opts.flip_kinks_band > 0) rounded[static_cast<size_t>(id)] = may_carry_rounding(n, an_operand_may_carry_rounding(n, rounded));
        values[static_cast<size_t>(id)] = std::move(*known);
        if (opts.on_value) opts.on_value(id, values[static_cast<size_t>(id)]);
        continue;
      }
    }
    ScopedBytes budget(working_bytes(g, n));
    std::vector<kernels::Values> args;
    args.reserve(n.operands.size());
    for (auto& o : n.operands)
      args.push_back(o.is_value() ? kernels::Values::of(values[static_cast<size_t>(o.value)])
                                  : literal_values(o.literal, n.type.dtype, opts.cast_to_f64));
    kernels::Values result = run_kernel(n, args, opts.accumulation);
    if (opts.perturb_values_seed && !result.is_int()) round_the_other_way(result, n.type.dtype, rng);
    if (opts.flip_kinks_band > 0) {
      const bool ties = an_operand_may_carry_rounding(n, rounded);
      rounded[static_cast<size_t>(id)] = may_carry_rounding(n, ties);
      flip_kinks(n, args, result, opts.flip_kinks_band, ties);
    }
    values[static_cast<size_t>(id)] = to_tensor(result, value_dtype(n.type.dtype, opts.cast_to_f64), n.type.shape);
    if (memo) node_memo::keep(keys[static_cast<size_t>(id)], values[static_cast<size_t>(id)]);
    if (opts.on_value) opts.on_value(id, values[static_cast<size_t>(id)]);
  }
  return values;
}

std::vector<Tensor> interpret(const Graph& g, const std::vector<Tensor>& inputs, const InterpretOptions& opts) {
  std::vector<Tensor> all = interpret_all(g, inputs, opts);
  std::vector<Tensor> out;
  for (int o : g.outputs) out.push_back(all[static_cast<size_t>(o)]);
  return out;
}

}  // namespace reprokit
