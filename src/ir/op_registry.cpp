// The op registry: schemas built from ops.def, and shape/dtype inference per op class.
#include "reprokit/ir/op_registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <ostream>
#include <set>

#include "reprokit/support/errors.h"
#include "reprokit/ir/op_semantics.h"
#include "reprokit/ir/shape_check.h"

namespace reprokit {

namespace {

[[noreturn]] void fail(const std::string& msg) { throw VerifyError(msg); }

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

const TensorType& operand_type(const Graph& g, const Node& n, size_t i) {
  if (i >= n.operands.size() || !n.operands[i].is_value()) fail(fmt::format("operand {} must be a tensor value", i + 1));
  return g.node(n.operands[i].value).type;
}

ScalarKind scalar_kind(const AttrValue& a) {
  if (a.is_bool()) return ScalarKind::boolean;
  if (a.is_int()) return ScalarKind::integer;
  if (a.is_float()) return ScalarKind::floating;
  fail("a scalar operand must be an int, float or bool literal");
}

// The output type shared by every op: contiguous, on the operands' device, requiring grad when
// a float output depends on an operand that requires grad.
TensorType make_type(const Graph& g, const Node& n, DType dtype, Shape shape) {
  TensorType t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  bool first = true;
  for (auto& o : n.operands) {
    if (!o.is_value()) continue;
    const auto& ot = g.node(o.value).type;
    if (first) t.device = ot.device;
    else if (ot.device != t.device) fail("operands are on different devices");
    first = false;
    if (ot.requires_grad && is_floating(dtype)) t.requires_grad = true;
  }
  if (!op_schema(n.op).differentiable()) t.requires_grad = false;
  check_shape(t.shape, "the result");
  return t;
}

void require_float(const TensorType& t, const char* what) {
  if (!is_floating(t.dtype)) fail(fmt::format("{} must be floating point, got {}", what, dtype_name(t.dtype)));
}

// ---- inference functions, one per op class ----

TensorType infer_unary(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  bool keeps_dtype = n.op == Op::neg || n.op == Op::abs || n.op == Op::relu;
  if (n.op == Op::neg && x.dtype == DType::boolean) fail("neg of a bool tensor (PyTorch and ONNX refuse it; logical_not is what it would mean)");
  if ((n.op == Op::relu || n.op == Op::abs) && x.dtype == DType::boolean)
    fail(fmt::format("{} of a bool tensor (PyTorch and ONNX refuse it)", op_name(n.op)));
  DType dt = x.dtype;
  if (!keeps_dtype && !is_floating(dt)) dt = DType::f32;  // as torch: int -> float
  if (n.op == Op::gelu) {
    auto a = attr(n, "approximate").as_string();
    if (a != "none" && a != "tanh") fail(fmt::format("approximate must be \"none\" or \"tanh\", got \"{}\"", a));
  }
  return make_type(g, n, dt, x.shape);
}

// Dtype and shape of pointwise operands that may be scalar literals.
std::pair<DType, Shape> broadcast_operands(const Graph& g, const Node& n, size_t first, size_t count) {
  Shape shape;
  std::vector<Operand> ops;
  std::vector<DType> dtypes;
  std::vector<int64_t> ranks;
  for (size_t i = first; i < first + count; ++i) {
    const auto& o = n.operands[i];
    ops.push_back(o);
    dtypes.push_back(o.is_value() ? g.node(o.value).type.dtype : DType::f64);
    ranks.push_back(o.is_value() ? static_cast<int64_t>(g.node(o.value).type.shape.size()) : 0);
    if (!o.is_value()) {
      scalar_kind(o.literal);
      continue;
    }
    const auto& t = g.node(o.value).type;
    auto b = broadcast_shapes(shape, t.shape);
    if (!b) fail(fmt::format("shapes {} and {} do not broadcast", shape_str(shape), shape_str(t.shape)));
    shape = *b;
  }
  return {promote_operands(ops, dtypes, ranks), shape};
}

TensorType infer_binary(const Graph& g, const Node& n) {
  auto [dt, shape] = broadcast_operands(g, n, 0, 2);
  if (n.op == Op::sub && dt == DType::boolean) fail("sub of bool operands (PyTorch and ONNX refuse it; logical_xor is what it would mean)");
  if (is_comparison(n.op)) dt = DType::boolean;
  else if (n.op == Op::div && !is_floating(dt)) dt = DType::f32;  // true division
  return make_type(g, n, dt, shape);
}

TensorType infer_where(const Graph& g, const Node& n) {
  const auto& c = operand_type(g, n, 0);
  if (c.dtype != DType::boolean) fail(fmt::format("condition must be bool, got {}", dtype_name(c.dtype)));
  auto [dt, shape] = broadcast_operands(g, n, 1, 2);
  auto b = broadcast_shapes(c.shape, shape);
  if (!b) fail(fmt::format("condition shape {} does not broadcast with {}", shape_str(c.shape), shape_str(shape)));
  return make_type(g, n, dt, *b);
}

TensorType infer_to(const Graph& g, const Node& n) { return make_type(g, n, attr(n, "dtype").as_dtype(), operand_type(g, n, 0).shape); }

TensorType infer_same(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  return make_type(g, n, x.dtype, x.shape);
}

TensorType infer_reduction(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  bool keepdim = attr_bool(n, "keepdim");
  std::vector<int64_t> dims = reduction_dims(n, x.rank());
  // An extremum over nothing has no value (PyTorch refuses it too); over a non-empty dim of an
  // empty tensor it is itself empty, and fine (a pooling gradient's ArgMax over the taps of a batch of 0).
  const bool extremum = n.op == Op::argmax || n.op == Op::amax || n.op == Op::amin;
  if (extremum && x.numel() == 0)
    for (int64_t d : dims)
      if (x.shape[static_cast<size_t>(d)] == 0) fail(fmt::format("{} over dim {}, which is empty", op_name(n.op), d));
  Shape out;
  for (int64_t i = 0; i < x.rank(); ++i) {
    bool reduced = std::find(dims.begin(), dims.end(), i) != dims.end();
    if (!reduced) out.push_back(x.shape[static_cast<size_t>(i)]);
    else if (keepdim) out.push_back(1);
  }
  if (n.op == Op::argmax && !attr_opt(n, "dim") && keepdim) out.assign(static_cast<size_t>(x.rank()), 1);
  DType dt = x.dtype;
  if (n.op == Op::argmax) dt = DType::i64;
  else if (n.op == Op::sum && !is_floating(dt)) dt = DType::i64;
  else if (n.op == Op::mean || n.op == Op::var) require_float(x, "input");
  return make_type(g, n, dt, out);
}

TensorType infer_softmax(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  require_float(x, "input");
  normalize_dim(attr_int(n, "dim"), x.rank());
  return make_type(g, n, x.dtype, x.shape);
}

TensorType infer_layer_norm(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  require_float(x, "input");
  auto ns = attr_ints(n, "normalized_shape");
  if (ns.empty() || ns.size() > x.shape.size() || !std::equal(ns.begin(), ns.end(), x.shape.end() - static_cast<long>(ns.size())))
    fail(fmt::format("normalized_shape {} is not a suffix of the input shape {}", shape_str(ns), shape_str(x.shape)));
  for (size_t i = 1; i < n.operands.size(); ++i) {
    const auto& p = operand_type(g, n, i);
    if (p.shape != ns)
      fail(fmt::format("{} has shape {}, expected normalized_shape {}", i == 1 ? "weight" : "bias", shape_str(p.shape), shape_str(ns)));
    if (p.dtype != x.dtype) fail(fmt::format("{} is {}, input is {}", i == 1 ? "weight" : "bias", dtype_name(p.dtype), dtype_name(x.dtype)));
  }
  return make_type(g, n, x.dtype, x.shape);
}

TensorType infer_matmul(const Graph& g, const Node& n) {
  const auto& a = operand_type(g, n, 0);
  const auto& b = operand_type(g, n, 1);
  if (a.rank() < 2 || b.rank() < 2) fail("matmul operands must have rank >= 2 (reprokit does not support 1-D matmul)");
  if (a.dtype != b.dtype) fail(fmt::format("operands have different dtypes {} and {}", dtype_name(a.dtype), dtype_name(b.dtype)));
  if (!is_floating(a.dtype)) fail("matmul needs floating operands");
  int64_t k1 = a.shape.back(), k2 = b.shape[b.shape.size() - 2];
  if (k1 != k2) fail(fmt::format("inner dimensions differ: {} @ {}", shape_str(a.shape), shape_str(b.shape)));
  Shape ba(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
  auto batch = broadcast_shapes(ba, bb);
  if (!batch) fail(fmt::format("batch dimensions do not broadcast: {} @ {}", shape_str(a.shape), shape_str(b.shape)));
  Shape out = *batch;
  out.push_back(a.shape[a.shape.size() - 2]);
  out.push_back(b.shape.back());
  return make_type(g, n, a.dtype, out);
}

TensorType infer_einsum(const Graph& g, const Node& n) {
  if (n.operands.empty()) fail("einsum needs at least one operand");
  const auto& first = operand_type(g, n, 0);
  std::vector<Shape> shapes;
  for (size_t i = 0; i < n.operands.size(); ++i) {
    const auto& t = operand_type(g, n, i);
    if (!is_floating(t.dtype)) fail(fmt::format("operand {} must be floating point, got {}", i + 1, dtype_name(t.dtype)));
    if (t.dtype != first.dtype) fail(fmt::format("operand {} is {}, operand 1 is {}", i + 1, dtype_name(t.dtype), dtype_name(first.dtype)));
    shapes.push_back(t.shape);
  }
  const EinsumSpec s = einsum_spec(attr(n, "equation").as_string(), shapes);
  Shape out;
  for (char c : s.output) out.push_back(s.sizes.at(c));
  return make_type(g, n, first.dtype, out);
}

TensorType infer_linear(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  const auto& w = operand_type(g, n, 1);
  require_float(x, "input");
  if (x.rank() < 1) fail("input must have rank >= 1");
  if (w.rank() != 2) fail(fmt::format("weight must be 2-D [out, in], got {}", shape_str(w.shape)));
  if (w.shape[1] != x.shape.back()) fail(fmt::format("weight shape {} does not match input feature size {}", shape_str(w.shape), x.shape.back()));
  if (w.dtype != x.dtype) fail(fmt::format("weight is {}, input is {}", dtype_name(w.dtype), dtype_name(x.dtype)));
  if (n.operands.size() > 2) {
    const auto& b = operand_type(g, n, 2);
    if (b.shape != Shape{w.shape[0]}) fail(fmt::format("bias has shape {}, expected [{}]", shape_str(b.shape), w.shape[0]));
    if (b.dtype != x.dtype) fail(fmt::format("bias is {}, input is {}", dtype_name(b.dtype), dtype_name(x.dtype)));
  }
  Shape out = x.shape;
  out.back() = w.shape[0];
  return make_type(g, n, x.dtype, out);
}

TensorType infer_clamp(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  if (x.dtype == DType::boolean) fail("clamp of a bool tensor");
  for (const char* bound : {"min", "max"}) {
    auto v = attr_opt(n, bound);
    if (v && v->is_bool()) fail(fmt::format("{} must be a number, got {}", bound, v->str()));
    if (v && !is_floating(x.dtype) && !v->is_int()) fail(fmt::format("{} of an integer tensor must be an integer, got {}", bound, v->str()));
  }
  return make_type(g, n, x.dtype, x.shape);
}

TensorType infer_batch_norm(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  require_float(x, "input");
  if (x.rank() < 2) fail(fmt::format("input must be [N, C, ...], got {}", shape_str(x.shape)));
  const char* names[] = {"x", "mean", "var", "weight", "bias"};
  for (size_t i = 1; i < n.operands.size(); ++i) {
    const auto& p = operand_type(g, n, i);
    if (p.shape != Shape{x.shape[1]}) fail(fmt::format("{} has shape {}, expected [{}] (the channels)", names[i], shape_str(p.shape), x.shape[1]));
    if (p.dtype != x.dtype) fail(fmt::format("{} is {}, input is {}", names[i], dtype_name(p.dtype), dtype_name(x.dtype)));
  }
  return make_type(g, n, x.dtype, x.shape);
}

// group_norm and instance_norm: [N, C, ...] with per-channel weight and bias.
TensorType infer_group_norm(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  require_float(x, "input");
  // PyTorch's instance_norm needs a spatial dim: [N, C] would normalize each element alone.
  if (n.op == Op::instance_norm && x.rank() < 3) fail(fmt::format("input must be [N, C, D1, ...], got {}", shape_str(x.shape)));
  norm_groups(n, x.shape);
  const char* names[] = {"x", "weight", "bias"};
  for (size_t i = 1; i < n.operands.size(); ++i) {
    const auto& p = operand_type(g, n, i);
    if (p.shape != Shape{x.shape[1]}) fail(fmt::format("{} has shape {}, expected [{}] (the channels)", names[i], shape_str(p.shape), x.shape[1]));
    if (p.dtype != x.dtype) fail(fmt::format("{} is {}, input is {}", names[i], dtype_name(p.dtype), dtype_name(x.dtype)));
  }
  return make_type(g, n, x.dtype, x.shape);
}

// [N, C, H, W] (or [N, C, D, H, W] for a 3-D window) and the output spatial size of a window
// over it.
Shape pooled_shape(const TensorType& x, const Window& w, int64_t channels) {
  const int r = w.rank;
  if (x.rank() != r + 2) fail(fmt::format("input must be {}, got {}", r == 3 ? "5-D [N, C, D, H, W]" : "4-D [N, C, H, W]", shape_str(x.shape)));
  Shape out{x.shape[0], channels};
  bool empty = false;
  for (int d = 0; d < r; ++d) {
    out.push_back(w.output_size(d, x.shape[static_cast<size_t>(d) + 2]));
    empty = empty || out.back() < 1;
  }
  auto list = [&](const int64_t* xs) { return fmt::format("[{}]", fmt::join(xs, xs + r, ", ")); };
  if (empty)
    fail(fmt::format("the window (kernel {}, dilation {}, padding {}) is larger than the input {}", list(w.kernel), list(w.dilation), list(w.padding),
                     shape_str(x.shape)));
  return out;
}

TensorType infer_conv(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  const auto& w = operand_type(g, n, 1);
  require_float(x, "input");
  const int r = spatial_rank(n.op);
  if (w.dtype != x.dtype) fail(fmt::format("weight is {}, input is {}", dtype_name(w.dtype), dtype_name(x.dtype)));
  if (w.rank() != r + 2)
    fail(fmt::format("weight must be {}, got {}", r == 3 ? "5-D [out, in / groups, kD, kH, kW]" : "4-D [out, in / groups, kH, kW]",
                     shape_str(w.shape)));
  int64_t groups = attr_int(n, "groups");
  if (groups < 1) fail(fmt::format("groups must be positive, got {}", groups));
  if (x.rank() == r + 2 && x.shape[1] != w.shape[1] * groups)
    fail(fmt::format("input has {} channels, weight {} expects {} x {} groups", x.shape[1], shape_str(w.shape), w.shape[1], groups));
  if (w.shape[0] % groups) fail(fmt::format("{} output channels do not divide into {} groups", w.shape[0], groups));
  if (n.operands.size() > 2) {
    const auto& b = operand_type(g, n, 2);
    if (b.shape != Shape{w.shape[0]}) fail(fmt::format("bias has shape {}, expected [{}]", shape_str(b.shape), w.shape[0]));
    if (b.dtype != x.dtype) fail(fmt::format("bias is {}, input is {}", dtype_name(b.dtype), dtype_name(x.dtype)));
  }
  return make_type(g, n, x.dtype, pooled_shape(x, window_of(n, &w.shape[2]), w.shape[0]));
}

// conv*_input_grad and conv*_weight_grad: grad must be what the forward convolution of x and the
// weight returns; the result has x's or the weight's type.
TensorType infer_conv_grad(const Graph& g, const Node& n) {
  const auto& grad = operand_type(g, n, 0);
  const auto& x = operand_type(g, n, 1);
  const auto& w = operand_type(g, n, 2);
  require_float(x, "input");
  const int r = spatial_rank(n.op);
  if (x.rank() != r + 2) fail(fmt::format("input must be {}, got {}", r == 3 ? "5-D [N, C, D, H, W]" : "4-D [N, C, H, W]", shape_str(x.shape)));
  if (w.rank() != r + 2)
    fail(fmt::format("weight must be {}, got {}", r == 3 ? "5-D [out, in / groups, kD, kH, kW]" : "4-D [out, in / groups, kH, kW]",
                     shape_str(w.shape)));
  for (const auto* t : {&grad, &w})
    if (t->dtype != x.dtype) fail(fmt::format("{} is {}, input is {}", t == &grad ? "grad" : "weight", dtype_name(t->dtype), dtype_name(x.dtype)));
  const int64_t groups = attr_int(n, "groups");
  if (groups < 1) fail(fmt::format("groups must be positive, got {}", groups));
  if (x.shape[1] != checked_mul(w.shape[1], groups, "the input channels"))
    fail(fmt::format("input has {} channels, weight {} expects {} x {} groups", x.shape[1], shape_str(w.shape), w.shape[1], groups));
  if (w.shape[0] % groups) fail(fmt::format("{} output channels do not divide into {} groups", w.shape[0], groups));
  const Shape forward = pooled_shape(x, window_of(n, &w.shape[2]), w.shape[0]);
  if (grad.shape != forward) fail(fmt::format("grad has shape {}, the convolution's output is {}", shape_str(grad.shape), shape_str(forward)));
  const bool of_input = n.op == Op::conv2d_input_grad || n.op == Op::conv3d_input_grad;
  return make_type(g, n, x.dtype, of_input ? x.shape : w.shape);
}

// conv_transpose2d/3d: weight [in, out / groups, kernel...], the output as PyTorch's.
TensorType infer_conv_transpose(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  const auto& w = operand_type(g, n, 1);
  require_float(x, "input");
  const int r = spatial_rank(n.op);
  if (w.dtype != x.dtype) fail(fmt::format("weight is {}, input is {}", dtype_name(w.dtype), dtype_name(x.dtype)));
  if (x.rank() != r + 2) fail(fmt::format("input must be {}, got {}", r == 3 ? "5-D [N, C, D, H, W]" : "4-D [N, C, H, W]", shape_str(x.shape)));
  if (w.rank() != r + 2)
    fail(fmt::format("weight must be {}, got {}", r == 3 ? "5-D [in, out / groups, kD, kH, kW]" : "4-D [in, out / groups, kH, kW]",
                     shape_str(w.shape)));
  const int64_t groups = attr_int(n, "groups");
  if (groups < 1) fail(fmt::format("groups must be positive, got {}", groups));
  if (x.shape[1] != w.shape[0]) fail(fmt::format("input has {} channels, weight {} expects {}", x.shape[1], shape_str(w.shape), w.shape[0]));
  if (w.shape[0] % groups) fail(fmt::format("{} input channels do not divide into {} groups", w.shape[0], groups));
  const int64_t out_channels = checked_mul(w.shape[1], groups, "the output channels");
  if (n.operands.size() > 2) {
    const auto& b = operand_type(g, n, 2);
    if (b.shape != Shape{out_channels}) fail(fmt::format("bias has shape {}, expected [{}]", shape_str(b.shape), out_channels));
    if (b.dtype != x.dtype) fail(fmt::format("bias is {}, input is {}", dtype_name(b.dtype), dtype_name(x.dtype)));
  }
  const Window win = window_of(n, &w.shape[2]);
  const auto output_padding = output_padding_of(n, win);
  Shape out{x.shape[0], out_channels};
  for (int d = 0; d < r; ++d) {
    const int64_t size = transposed_output_size(win, output_padding, d, x.shape[static_cast<size_t>(d) + 2]);
    if (size < 1 || size > kMaxTensorElements)
      fail(fmt::format("the output's spatial dim {} would have size {} (input {}, kernel {}, padding {})", d, size, shape_str(x.shape),
                       shape_str(w.shape), fmt::join(win.padding, win.padding + r, ", ")));
    out.push_back(size);
  }
  return make_type(g, n, x.dtype, out);
}

TensorType infer_pool(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  require_float(x, "input");
  return make_type(g, n, x.dtype, pooled_shape(x, window_of(n), x.rank() >= 2 ? x.shape[1] : 0));
}

TensorType infer_pool_backward(const Graph& g, const Node& n) {
  const auto& grad = operand_type(g, n, 0);
  const auto& x = operand_type(g, n, 1);
  require_float(x, "input");
  Shape pooled = pooled_shape(x, window_of(n), x.rank() >= 2 ? x.shape[1] : 0);  // pooled_shape refuses other ranks
  if (grad.shape != pooled) fail(fmt::format("grad has shape {}, the pool's output is {}", shape_str(grad.shape), shape_str(pooled)));
  if (grad.dtype != x.dtype) fail(fmt::format("grad is {}, input is {}", dtype_name(grad.dtype), dtype_name(x.dtype)));
  return make_type(g, n, x.dtype, x.shape);
}

TensorType infer_adaptive_pool2d(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  require_float(x, "input");
  if (x.rank() != 4) fail(fmt::format("input must be 4-D [N, C, H, W], got {}", shape_str(x.shape)));
  auto os = attr_ints(n, "output_size");
  if (os.size() == 1) os.push_back(os[0]);
  if (os.size() != 2 || os[0] < 1 || os[1] < 1 || os[0] > kMaxTensorElements || os[1] > kMaxTensorElements)
    fail(fmt::format("output_size must be 1 or 2 positive sizes, got {}", shape_str(attr_ints(n, "output_size"))));
  return make_type(g, n, x.dtype, {x.shape[0], x.shape[1], os[0], os[1]});
}

TensorType infer_pad(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  auto amounts = pad_amounts(n, x.rank());
  Shape out = x.shape;
  for (size_t d = 0; d < out.size(); ++d)
    out[d] = checked_add(checked_add(out[d], amounts[d].first, "the padded dim"), amounts[d].second, "the padded dim");
  return make_type(g, n, x.dtype, out);
}

TensorType infer_pixel_shuffle(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  return make_type(g, n, x.dtype, pixel_shuffle_of(n, x.shape).result);
}

TensorType infer_grid_sample(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  const auto& grid = operand_type(g, n, 1);
  require_float(x, "input");
  if (grid.dtype != x.dtype) fail(fmt::format("grid is {}, input is {}", dtype_name(grid.dtype), dtype_name(x.dtype)));
  return make_type(g, n, x.dtype, grid_sample_of(n, x.shape, grid.shape).result);
}

TensorType infer_affine_grid(const Graph& g, const Node& n) {
  const auto& theta = operand_type(g, n, 0);
  require_float(theta, "theta");
  return make_type(g, n, theta.dtype, affine_grid_shape(n, theta.shape));
}

TensorType infer_reshape(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  auto shape = attr_ints(n, "shape");
  int infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer_at >= 0) fail("only one dimension may be -1");
      infer_at = static_cast<int>(i);
    } else if (shape[i] < 0) {
      fail(fmt::format("invalid dimension {}", shape[i]));
    } else {
      known = checked_mul(known, shape[i], "the reshape target");
    }
  }
  if (infer_at >= 0) {
    if (known == 0 || x.numel() % known) fail(fmt::format("cannot reshape {} into {}", shape_str(x.shape), shape_str(shape)));
    shape[static_cast<size_t>(infer_at)] = x.numel() / known;
  }
  if (numel(shape) != x.numel()) fail(fmt::format("cannot reshape {} ({} elements) into {}", shape_str(x.shape), x.numel(), shape_str(shape)));
  return make_type(g, n, x.dtype, shape);
}

TensorType infer_permute(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  Shape out;
  for (auto d : permutation(n, x.rank())) out.push_back(x.shape[static_cast<size_t>(d)]);
  return make_type(g, n, x.dtype, out);
}

TensorType infer_transpose(const Graph& g, const Node& n) { return infer_permute(g, n); }

TensorType infer_expand(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  auto shape = attr_ints(n, "shape");
  if (shape.size() < x.shape.size()) fail(fmt::format("cannot expand {} to fewer dims {}", shape_str(x.shape), shape_str(shape)));
  size_t lead = shape.size() - x.shape.size();
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i < lead) {
      if (shape[i] < 0) fail("-1 is not allowed for a new leading dimension");
      continue;
    }
    int64_t have = x.shape[i - lead];
    if (shape[i] == -1) shape[i] = have;
    else if (have != 1 && have != shape[i])
      fail(fmt::format("cannot expand {} to {}: dimension {} is {}", shape_str(x.shape), shape_str(attr_ints(n, "shape")), i, have));
  }
  return make_type(g, n, x.dtype, shape);
}

TensorType infer_slice(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  if (x.rank() == 0) fail("cannot slice a 0-d tensor");
  SliceBounds b = slice_bounds(n, x.shape);
  Shape out = x.shape;
  out[static_cast<size_t>(b.dim)] = b.length;
  return make_type(g, n, x.dtype, out);
}

TensorType infer_cat(const Graph& g, const Node& n) {
  if (n.operands.empty()) fail("cat needs at least one tensor");
  const auto& first = operand_type(g, n, 0);
  if (first.rank() == 0) fail("zero-dimensional tensors cannot be concatenated (as in torch.cat)");
  int64_t dim = normalize_dim(attr_int(n, "dim"), first.rank());
  Shape out = first.shape;
  DType dt = first.dtype;
  for (size_t i = 1; i < n.operands.size(); ++i) {
    const auto& t = operand_type(g, n, i);
    if (t.rank() != first.rank()) fail(fmt::format("operand {} has rank {}, operand 1 has rank {}", i + 1, t.rank(), first.rank()));
    for (int64_t d = 0; d < t.rank(); ++d)
      if (d != dim && t.shape[static_cast<size_t>(d)] != first.shape[static_cast<size_t>(d)])
        fail(fmt::format("operand {} has shape {}, incompatible with {} outside dim {}", i + 1, shape_str(t.shape), shape_str(first.shape), dim));
    out[static_cast<size_t>(dim)] = checked_add(out[static_cast<size_t>(dim)], t.shape[static_cast<size_t>(dim)], "the concatenated dim");
    dt = promote_types(dt, t.dtype);
  }
  return make_type(g, n, dt, out);
}

TensorType infer_squeeze(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  Shape out = x.shape;
  if (x.rank() > 0) {
    int64_t dim = normalize_dim(attr_int(n, "dim"), x.rank());
    if (out[static_cast<size_t>(dim)] == 1) out.erase(out.begin() + dim);  // as torch: no-op otherwise
  } else if (const int64_t dim = attr_int(n, "dim"); dim != 0 && dim != -1) {
    fail(fmt::format("dim {} is out of range for a 0-d tensor (0 or -1, as PyTorch)", dim));
  }
  return make_type(g, n, x.dtype, out);
}

TensorType infer_unsqueeze(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  int64_t dim = normalize_dim(attr_int(n, "dim"), x.rank() + 1);
  Shape out = x.shape;
  out.insert(out.begin() + dim, 1);
  return make_type(g, n, x.dtype, out);
}

TensorType infer_embedding(const Graph& g, const Node& n) {
  const auto& w = operand_type(g, n, 0);
  const auto& idx = operand_type(g, n, 1);
  if (w.rank() != 2) fail(fmt::format("weight must be 2-D, got {}", shape_str(w.shape)));
  if (!is_integral(idx.dtype)) fail(fmt::format("indices must be i32 or i64, got {}", dtype_name(idx.dtype)));
  Shape out = idx.shape;
  out.push_back(w.shape[1]);
  return make_type(g, n, w.dtype, out);
}

TensorType infer_gather(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  const auto& idx = operand_type(g, n, 1);
  if (idx.dtype != DType::i64 && idx.dtype != DType::i32) fail(fmt::format("index must be i32 or i64, got {}", dtype_name(idx.dtype)));
  if (idx.rank() != x.rank()) fail(fmt::format("index rank {} differs from input rank {}", idx.rank(), x.rank()));
  int64_t dim = normalize_dim(attr_int(n, "dim"), x.rank());
  for (int64_t d = 0; d < x.rank(); ++d)
    if (d != dim && idx.shape[static_cast<size_t>(d)] > x.shape[static_cast<size_t>(d)])
      fail(fmt::format("index shape {} exceeds input shape {} in dim {}", shape_str(idx.shape), shape_str(x.shape), d));
  return make_type(g, n, x.dtype, idx.shape);
}

// scatter_add: x's type; index as gather's index into x, src at least index's size in every dim.
TensorType infer_scatter_add(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  const auto& idx = operand_type(g, n, 1);
  const auto& src = operand_type(g, n, 2);
  require_float(x, "input");
  if (src.dtype != x.dtype) fail(fmt::format("src is {}, input is {}", dtype_name(src.dtype), dtype_name(x.dtype)));
  if (idx.dtype != DType::i64 && idx.dtype != DType::i32) fail(fmt::format("index must be i32 or i64, got {}", dtype_name(idx.dtype)));
  if (idx.rank() != x.rank() || src.rank() != x.rank())
    fail(fmt::format("index {} and src {} must have the input's rank {}", shape_str(idx.shape), shape_str(src.shape), x.rank()));
  const int64_t dim = normalize_dim(attr_int(n, "dim"), x.rank());
  for (int64_t d = 0; d < x.rank(); ++d) {
    const size_t sd = static_cast<size_t>(d);
    if (idx.shape[sd] > src.shape[sd])
      fail(fmt::format("index shape {} exceeds src shape {} in dim {}", shape_str(idx.shape), shape_str(src.shape), d));
    if (d != dim && idx.shape[sd] > x.shape[sd])
      fail(fmt::format("index shape {} exceeds input shape {} in dim {}", shape_str(idx.shape), shape_str(x.shape), d));
  }
  if (x.rank() > 0 && x.shape[static_cast<size_t>(dim)] == 0 && numel(idx.shape) > 0) fail(fmt::format("dim {} of the input is empty", dim));
  return make_type(g, n, x.dtype, x.shape);
}

// cumsum, cumprod: the input's shape; integer and bool inputs accumulate in i64 (as torch).
TensorType infer_scan(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  scan_lines(n, x.shape);
  return make_type(g, n, is_floating(x.dtype) ? x.dtype : DType::i64, x.shape);
}

// sort: the input's shape and dtype; argsort: its shape, i64.
TensorType infer_sort(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  scan_lines(n, x.shape);
  return make_type(g, n, n.op == Op::argsort ? DType::i64 : x.dtype, x.shape);
}

// topk: the input's dtype, its dim cut to k; topk_indices: the same shape, i64.
TensorType infer_topk(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  int64_t k = topk_k(n, x.shape);
  Shape out = x.shape;
  if (!out.empty()) out[static_cast<size_t>(scan_lines(n, x.shape).dim)] = k;
  return make_type(g, n, n.op == Op::topk_indices ? DType::i64 : x.dtype, out);
}

TensorType infer_full(const Graph& g, const Node& n) {
  auto shape = attr_ints(n, "shape");
  for (auto d : shape)
    if (d < 0) fail(fmt::format("negative dimension in shape {}", shape_str(shape)));
  scalar_kind(attr(n, "value"));
  return make_type(g, n, attr(n, "dtype").as_dtype(), shape);
}

// ---- the table, from ops.def ----

// Spellings of ops.def's columns.
#define COMMA ,
#define P(...) \
  { __VA_ARGS__ }
#define T(n) \
  ParamSpec { #n, ParamKind::tensor }
#define TS(n) \
  ParamSpec { #n, ParamKind::tensor_or_scalar }
#define OPT(n) \
  ParamSpec { #n, ParamKind::optional_tensor }
#define VAR(n) \
  ParamSpec { #n, ParamKind::variadic_tensor }
#define A(...) \
  { __VA_ARGS__ }
#define INT(n, d) \
  AttrSpec { #n, AttrKind::int_, AttrValue(int64_t{d}) }
#define INT_REQ(n) \
  AttrSpec { #n, AttrKind::int_, std::nullopt }
#define INT_OPT(n) \
  AttrSpec { #n, AttrKind::int_, std::nullopt, true }
#define FLOAT(n, d) \
  AttrSpec { #n, AttrKind::float_, AttrValue(double{d}) }
#define BOOL(n, d) \
  AttrSpec { #n, AttrKind::bool_, AttrValue(bool{d}) }
#define STR(n, d) \
  AttrSpec { #n, AttrKind::string, AttrValue(d) }
#define STR_REQ(n) \
  AttrSpec { #n, AttrKind::string, std::nullopt }
#define DTYPE(n, d) \
  AttrSpec { #n, AttrKind::dtype, AttrValue(DType::d) }
#define DTYPE_REQ(n) \
  AttrSpec { #n, AttrKind::dtype, std::nullopt }
#define INTS(n, ...) \
  AttrSpec { #n, AttrKind::ints, AttrValue::ints({__VA_ARGS__}) }
#define INTS_REQ(n) \
  AttrSpec { #n, AttrKind::ints, std::nullopt }
#define INTS_OPT(n) \
  AttrSpec { #n, AttrKind::ints, std::nullopt, true }
#define SCALAR_REQ(n) \
  AttrSpec { #n, AttrKind::scalar, std::nullopt }
#define SCALAR_OPT(n) \
  AttrSpec { #n, AttrKind::scalar, std::nullopt, true }
#define NONE kNoFlags
#define DIFF kDifferentiable
#define COMPOSITE kComposite
#define PRIM_RED kPrimitiveReduction
#define UPCAST kUpcast

std::vector<OpSchema> build_table() {
  return {
#define RK_OP(id, cls, infer, params, attrs, flags) \
  OpSchema{Op::id, #id, OpClass::cls, std::vector<ParamSpec> params, std::vector<AttrSpec> attrs, flags, infer},
#include "reprokit/ir/ops.def"
#undef RK_OP
  };
}

#undef COMMA
#undef P
#undef T
#undef TS
#undef OPT
#undef VAR
#undef A
#undef INT
#undef INT_REQ
#undef INT_OPT
#undef FLOAT
#undef BOOL
#undef STR
#undef STR_REQ
#undef DTYPE
#undef DTYPE_REQ
#undef INTS
#undef INTS_REQ
#undef INTS_OPT
#undef SCALAR_REQ
#undef SCALAR_OPT
#undef NONE
#undef DIFF
#undef COMPOSITE
#undef PRIM_RED
#undef UPCAST

const AttrSpec* find_attr_spec(const OpSchema& s, std::string_view name) {
  for (auto& a : s.attrs)
    if (a.name == name) return &a;
  return nullptr;
}

}  // namespace

const std::vector<OpSchema>& op_table() {
  static const std::vector<OpSchema> table = build_table();
  return table;
}

const OpSchema& op_schema(Op op) {
  if (op == Op::input) throw InternalError("op_schema(Op::input): graph inputs have no schema");
  return op_table()[static_cast<size_t>(op) - 1];  // ops.def order is the enum's order
}

const OpSchema* find_op(std::string_view name) {
  auto op = parse_op(name);
  return op ? &op_schema(*op) : nullptr;
}

std::string_view op_name(Op op) { return op == Op::input ? std::string_view("input") : std::string_view(op_schema(op).name); }

std::optional<Op> parse_op(std::string_view name) {
  for (auto& s : op_table())
    if (s.name == name) return s.op;
  return std::nullopt;
}

std::ostream& operator<<(std::ostream& os, Op op) { return os << op_name(op); }

bool is_view_op(Op op) {
  return op == Op::reshape || op == Op::squeeze || op == Op::unsqueeze || op == Op::permute || op == Op::transpose || op == Op::expand ||
         op == Op::slice || op == Op::contiguous;
}

bool is_pointwise(Op op) {
  if (op == Op::input) return false;
  OpClass c = op_schema(op).cls;
  return c == OpClass::unary || c == OpClass::binary || c == OpClass::pointwise;
}

std::optional<AttrValue> attr_opt(const Node& n, std::string_view name) {
  if (auto it = n.attrs.find(name); it != n.attrs.end()) return it->second;
  if (!n.is_input())
    if (auto* a = find_attr_spec(op_schema(n.op), name); a && a->default_value) return *a->default_value;
  return std::nullopt;
}

const AttrValue& attr(const Node& n, std::string_view name) {
  if (auto it = n.attrs.find(name); it != n.attrs.end()) return it->second;
  if (!n.is_input())
    if (auto* a = find_attr_spec(op_schema(n.op), name); a && a->default_value) return *a->default_value;
  throw VerifyError(fmt::format("node %{} = {}: missing required attribute '{}'", n.name, op_name(n.op), name));
}

int64_t attr_int(const Node& n, std::string_view name) { return attr(n, name).as_int(); }
double attr_float(const Node& n, std::string_view name) { return attr(n, name).as_float(); }
bool attr_bool(const Node& n, std::string_view name) { return attr(n, name).as_bool(); }
std::vector<int64_t> attr_ints(const Node& n, std::string_view name) { return attr(n, name).as_ints(); }

TensorType infer_node_type(const Graph& g, int id) {
  const Node& n = g.node(id);
  if (n.is_input()) return n.type;
  try {
    return op_schema(n.op).infer(g, n);
  } catch (const UserError& e) {
    std::string msg = e.what();
    std::string prefix = fmt::format("node %{} = {}", n.name, op_name(n.op));
    if (msg.rfind(prefix, 0) == 0) msg = msg.substr(prefix.size() + 2);
    throw VerifyError(fmt::format("graph {}, node %{} = {}: {}", g.name, n.name, op_name(n.op), msg));
  }
}

}  // namespace reprokit
