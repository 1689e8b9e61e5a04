// Decompositions: one rule per composite op of ops.def, written as algebra over Expr. f16/bf16
// composites flagged UPCAST compute in f32 and cast back, as PyTorch's do.
#include "reprokit/aot/decompose.h"

#include <fmt/format.h>

#include <cmath>

#include "backward_rules.h"
#include "reprokit/ir/builder.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/op_semantics.h"
#include "reprokit/ir/verifier.h"

namespace reprokit {

namespace {

Expr sigmoid_of(Expr x) { return reciprocal(exp(-x) + 1.0); }

Expr mean_over(Expr x, const std::vector<int64_t>& dims, bool keepdim) {
  return sum(x, dims, keepdim) / static_cast<double>(reduction_count(x.shape(), dims));
}

// einsum: each operand's letters that nothing later needs summed out, then the operands contracted
// left to right, each pair as one batched matmul [batch, a's own, contracted] @ [batch,
// contracted, b's own], and the result permuted to the output's order.
Expr einsum_of(Builder& b, const Node& n, const std::vector<Arg>& a) {
  std::vector<Expr> xs;
  std::vector<Shape> shapes;
  for (const Arg& x : a) {
    xs.push_back(b.value(x.operand));
    shapes.push_back(xs.back().shape());
  }
  const EinsumSpec s = einsum_spec(attr(n, "equation").as_string(), shapes);
  const auto npos = std::string::npos;
  auto needed_after = [&](size_t k, char c) {  // by the output or an operand after k
    if (s.output.find(c) != npos) return true;
    for (size_t j = k + 1; j < s.inputs.size(); ++j)
      if (s.inputs[j].find(c) != npos) return true;
    return false;
  };
  auto reduce_unneeded = [&](Expr x, std::string& letters, size_t k, const std::string& partner) {
    std::vector<int64_t> dims;
    std::string kept;
    for (size_t i = 0; i < letters.size(); ++i) {
      if (needed_after(k, letters[i]) || partner.find(letters[i]) != npos) kept += letters[i];
      else dims.push_back(static_cast<int64_t>(i));
    }
    letters = kept;
    return dims.empty() ? x : sum(x, dims, false);
  };
  auto positions = [](const std::string& from, const std::string& order) {
    std::vector<int64_t> p;
    for (char c : order) p.push_back(static_cast<int64_t>(from.find(c)));
    return p;
  };
  auto size_of = [&](const std::string& letters) {
    int64_t p = 1;
    for (char c : letters) p *= s.sizes.at(c);
    return p;
  };
  std::string acc_letters = s.inputs[0];
  Expr acc = reduce_unneeded(xs[0], acc_letters, 0, "");
  for (size_t k = 1; k < xs.size(); ++k) {
    std::string b_letters = s.inputs[k];
    Expr bx = reduce_unneeded(xs[k], b_letters, k, acc_letters);
    std::string batch, a_own, contracted, b_own;
    for (char c : acc_letters) {
      if (b_letters.find(c) == npos) a_own += c;
      else if (needed_after(k, c)) batch += c;
      else contracted += c;
    }
    for (char c : b_letters)
      if (acc_letters.find(c) == npos) b_own += c;
    Expr am = reshape(permute(acc, positions(acc_letters, batch + a_own + contracted)), {size_of(batch), size_of(a_own), size_of(contracted)});
    Expr bm = reshape(permute(bx, positions(b_letters, batch + contracted + b_own)), {size_of(batch), size_of(contracted), size_of(b_own)});
    acc_letters = batch + a_own + b_own;
    Shape shape;
    for (char c : acc_letters) shape.push_back(s.sizes.at(c));
    acc = reshape(matmul(am, bm), shape);
  }
  return permute(acc, positions(acc_letters, s.output));
}

// ---- grid_sample and affine_grid

Expr clamp_to(Expr x, double lo, double hi) { return x.builder().op(Op::clamp, {x}, {{"min", AttrValue(lo)}, {"max", AttrValue(hi)}}); }

// floor(x) for x within int64: the int64 cast truncates toward zero, one less where it rounded up.
Expr floor_of(Expr x) {
  Expr t = cast(cast(x, DType::i64), x.dtype());
  return where(lt(x, t), t - 1.0, t);
}

// floor(x) of any x >= 0: values from 2^23 (f32) or 2^52 (f64) on are whole already.
Expr floor_nonnegative(Expr x) {
  const double whole = x.dtype() == DType::f64 ? 4503599627370496.0 : 8388608.0;
  return where(lt(x, whole), floor_of(minimum(x, whole)), x);
}

// std::nearbyint: halves to the even neighbour, as PyTorch's nearest mode.
Expr round_half_even(Expr x) {
  Expr f = floor_of(x), frac = x - f;
  Expr odd = ne(f - floor_of(f * 0.5) * 2.0, 0.0);
  return where(where(eq(frac, 0.5), odd, gt(frac, 0.5)), f + 1.0, f);
}

// PyTorch's reflect_coordinates: x reflected into [twice_low / 2, twice_high / 2]. fmod is
// d - span * floor(d / span), exact while d / span is below 2^23 (f32).
Expr reflect_of(Expr x, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return full(x.builder(), x.shape(), AttrValue(0.0), x.dtype());
  const double min = static_cast<double>(twice_low) / 2, span = static_cast<double>(twice_high - twice_low) / 2;
  Expr d = abs(x - min);
  Expr flips = floor_nonnegative(d / span);
  Expr extra = d - flips * span;
  Expr odd = ne(flips - floor_nonnegative(flips * 0.5) * 2.0, 0.0);
  return where(odd, (span - extra) + min, extra + min);
}

// Where grid coordinate g samples an axis of `size` pixels, as PyTorch's CPU kernel unnormalizes
// and pads. Zeros padding needs no clamp, but a coordinate over a pixel outside has every corner
// outside: clamping there changes nothing and keeps floor's cast in range.
Expr sample_index(Expr g, int64_t size, const GridSample& s) {
  const auto n = static_cast<double>(size);
  Expr x = s.align_corners ? (g + 1.0) * ((n - 1) / 2) : (g + 1.0) * (n / 2) - 0.5;
  if (s.padding == SamplePadding::zeros) return clamp_to(x, -2.0, n + 1);
  if (s.padding == SamplePadding::reflection) x = s.align_corners ? reflect_of(x, 0, 2 * (size - 1)) : reflect_of(x, -1, 2 * size - 1);
  return clamp_to(x, 0.0, n - 1);
}

// x [N, C, H, W] at whole pixel coordinates (px, py) [N, Ho, Wo]: one gather of the flattened
// pixels, [N, C, Ho, Wo], zero where the pixel is outside x.
Expr pixels_at(Expr x, Expr px, Expr py) {
  const Shape xs = x.shape(), gs = px.shape();
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  auto inside = [](Expr p, int64_t size) {  // 0 <= p <= size - 1, one comparison
    const double half = static_cast<double>(size - 1) / 2;
    return le(abs(p - half), half);
  };
  Expr valid = unsqueeze(where(inside(px, W), inside(py, H), false), 1);
  Expr at = cast(clamp_to(py, 0.0, static_cast<double>(H - 1)), DType::i64) * W + cast(clamp_to(px, 0.0, static_cast<double>(W - 1)), DType::i64);
  Expr index = expand(reshape(at, {N, 1, gs[1] * gs[2]}), {N, C, gs[1] * gs[2]});
  Expr v = reshape(gather(reshape(x, {N, C, H * W}), index, 2), {N, C, gs[1], gs[2]});
  return where(valid, v, 0.0);
}

Expr grid_sample_rule(Expr x, Expr grid, const Node& n) {
  const GridSample s = grid_sample_of(n, x.shape(), grid.shape());
  const Shape xs = x.shape();
  Expr ix = sample_index(squeeze(slice(grid, 3, 0, 1), 3), xs[3], s);
  Expr iy = sample_index(squeeze(slice(grid, 3, 1, 2), 3), xs[2], s);
  if (s.mode == SampleMode::nearest) return pixels_at(x, round_half_even(ix), round_half_even(iy));
  Expr x0 = floor_of(ix), y0 = floor_of(iy);
  Expr x1 = x0 + 1.0, y1 = y0 + 1.0;
  auto weight = [](Expr wx, Expr wy) { return unsqueeze(wx * wy, 1); };
  // North-west, north-east, south-west, south-east: PyTorch's order of the sum.
  return pixels_at(x, x0, y0) * weight(x1 - ix, y1 - iy) + pixels_at(x, x1, y0) * weight(ix - x0, y1 - iy) +
         pixels_at(x, x0, y1) * weight(x1 - ix, iy - y0) + pixels_at(x, x1, y1) * weight(ix - x0, iy - y0);
}

// affine_grid's base coordinates along an axis of `size` pixels, as torch.linspace computes them
// in the dtype (the first half from -1, the second from 1), from an arange made by a cumsum.
Expr affine_base(Builder& b, int64_t size, bool align_corners, DType dt) {
  if (size <= 1) return full(b, {size}, AttrValue(0.0), dt);
  Expr i = cast(b.op(Op::cumsum, {full(b, {size}, AttrValue(int64_t{1}), DType::i64)}, {{"dim", AttrValue(int64_t{0})}}), dt) - 1.0;
  const double step = 2.0 / static_cast<double>(size - 1), n = static_cast<double>(size);
  Expr v = where(lt(i, static_cast<double>(size / 2)), i * step - 1.0, 1.0 - (n - 1 - i) * step);
  return align_corners ? v : v * (n - 1) / n;
}

// grid[b, h, w, k] = theta[b, k, 0] x_w + theta[b, k, 1] y_h + theta[b, k, 2].
Expr affine_grid_rule(Builder& b, Expr theta, const Node& n) {
  const Shape out = affine_grid_shape(n, theta.shape());
  const int64_t N = out[0], H = out[1], W = out[2];
  const bool align = attr_bool(n, "align_corners");
  Expr bx = reshape(affine_base(b, W, align, theta.dtype()), {1, 1, W});
  Expr by = reshape(affine_base(b, H, align, theta.dtype()), {1, H, 1});
  auto t = [&](int64_t k, int64_t j) { return reshape(slice(slice(theta, 1, k, k + 1), 2, j, j + 1), {N, 1, 1}); };
  std::vector<Expr> coords;
  for (int64_t k = 0; k < 2; ++k) coords.push_back(unsqueeze(t(k, 0) * bx + t(k, 1) * by + t(k, 2), 3));
  return cat(coords, 3);
}

// The primitives computing composite node n from its operands `a` (values in the new graph).
Expr decompose_node(Builder& b, const Node& n, const std::vector<Arg>& a) {
  Expr x = b.value(a[0].operand);
  // An integer or bool input of a float op computes in the float result type (PyTorch's int ->
  // float); its decomposition's neg or sub would otherwise apply to the integers themselves.
  const bool float_unary = n.op == Op::sigmoid || n.op == Op::silu || n.op == Op::gelu;
  if (float_unary && !is_floating(x.dtype()) && is_floating(n.type.dtype)) x = cast(x, n.type.dtype);
  switch (n.op) {
    case Op::sigmoid: return sigmoid_of(x);
    case Op::silu: return x * sigmoid_of(x);
    case Op::gelu:
      if (attr(n, "approximate").as_string() == "tanh")  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        return (x * 0.5) * (tanh((x + (x * (x * x)) * 0.044715) * std::sqrt(2.0 / M_PI)) + 1.0);
      return (x * 0.5) * (erf(x * M_SQRT1_2) + 1.0);
    case Op::softmax: {
      std::vector<int64_t> dim{attr_int(n, "dim")};
      Expr e = exp(x - amax(x, dim));
      return e / sum(e, dim);
    }
    case Op::log_softmax: {
      std::vector<int64_t> dim{attr_int(n, "dim")};
      Expr shifted = x - amax(x, dim);
      return shifted - log(sum(exp(shifted), dim));
    }
    case Op::mean: return mean_over(x, reduction_dims(n, x.rank()), attr_bool(n, "keepdim"));
    case Op::var: {
      auto dims = reduction_dims(n, x.rank());
      Expr diff = x - mean_over(x, dims, true);
      double count = static_cast<double>(reduction_count(x.shape(), dims));
      return sum(diff * diff, dims, attr_bool(n, "keepdim")) / std::max(count - static_cast<double>(attr_int(n, "correction")), 0.0);
    }
    case Op::layer_norm: {
      auto dims = layer_norm_dims(n, x.rank());
      Expr diff = x - mean_over(x, dims, true);
      Expr y = diff * rsqrt(mean_over(diff * diff, dims, true) + attr_float(n, "eps"));
      if (a.size() > 1) y = y * a[1];
      if (a.size() > 2) y = y + a[2];
      return y;
    }
    case Op::batch_norm: {  // per channel (dim 1): parameters reshaped to [1, C, 1, ...]
      Shape ps(static_cast<size_t>(x.rank()), 1);
      ps[1] = x.shape()[1];
      auto channel = [&](size_t i) { return reshape(b.value(a[i].operand), ps); };
      // The weight folded into the per-channel scale (a [1, C, 1, ...] op) rather than a multiply
      // of its own on every element; the mean still subtracted first, so no large x * scale
      // cancels against a large shift.
      Expr scale = rsqrt(channel(2) + attr_float(n, "eps"));
      if (a.size() > 3) scale = scale * channel(3);
      Expr y = (x - channel(1)) * scale;
      if (a.size() > 4) y = y + channel(4);
      return y;
    }
    case Op::sort:
    case Op::topk: {                // x at the positions argsort / topk_indices picks
      if (x.rank() == 0) return x;  // its only element (topk's k is 1)
      Expr index = b.op(n.op == Op::sort ? Op::argsort : Op::topk_indices, {x}, n.attrs);
      return gather(x, index, attr_int(n, "dim"));
    }
    case Op::group_norm:
    case Op::instance_norm: {  // statistics per [sample, group], then affine per channel
      const Shape xs = x.shape();
      const int64_t groups = norm_groups(n, xs);
      Expr y;
      if (n.op == Op::instance_norm) {
        std::vector<int64_t> dims;
        for (int64_t d = 2; d < x.rank(); ++d) dims.push_back(d);
        Expr diff = x - mean_over(x, dims, true);
        y = diff * rsqrt(mean_over(diff * diff, dims, true) + attr_float(n, "eps"));
      } else {
        Expr grouped = reshape(x, {xs[0], groups, xs[1] / groups * numel(Shape(xs.begin() + 2, xs.end()))});
        Expr diff = grouped - mean_over(grouped, {2}, true);
        y = reshape(diff * rsqrt(mean_over(diff * diff, {2}, true) + attr_float(n, "eps")), xs);
      }
      Shape ps(xs.size(), 1);
      ps[1] = xs[1];
      if (a.size() > 1) y = y * reshape(b.value(a[1].operand), ps);
      if (a.size() > 2) y = y + reshape(b.value(a[2].operand), ps);
      return y;
    }
    case Op::pixel_shuffle:
    case Op::pixel_unshuffle: {  // reshape, permute, reshape
      const PixelShuffle p = pixel_shuffle_of(n, x.shape());
      return reshape(permute(reshape(x, p.split), p.perm), p.result);
    }
    case Op::einsum: return einsum_of(b, n, a);
    case Op::conv2d_input_grad:
    case Op::conv3d_input_grad:
    case Op::conv2d_weight_grad:
    case Op::conv3d_weight_grad: {
      // As reprokit's own backward rule writes a convolution's gradients.
      Expr input = b.value(a[1].operand), w = b.value(a[2].operand);
      const Shape ws = w.shape();
      const Window win = window_of(n, &ws[2]);
      const int64_t groups = attr_int(n, "groups");
      if (n.op == Op::conv2d_input_grad || n.op == Op::conv3d_input_grad) return aot_detail::conv_input_grad(x, input.shape(), w, win, groups);
      return aot_detail::conv_weight_grad(input, x, win, groups, Shape(ws.begin() + 2, ws.end()));
    }
    case Op::scatter_add: return x + aot_detail::scatter_sum(b.value(a[1].operand), b.value(a[2].operand), x.shape(), attr_int(n, "dim"));
    case Op::grid_sample: return grid_sample_rule(x, b.value(a[1].operand), n);
    case Op::affine_grid: return affine_grid_rule(b, x, n);
    case Op::linear: {
      Expr wt = transpose(b.value(a[1].operand), 0, 1);
      Expr y = x.rank() >= 2 ? matmul(x, wt) : squeeze(matmul(unsqueeze(x, 0), wt), 0);
      return a.size() > 2 ? y + a[2] : y;
    }
    case Op::input:
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
    case Op::sum:
    case Op::amax:
    case Op::amin:
    case Op::argmax:
    case Op::matmul:
    case Op::reshape:
    case Op::permute:
    case Op::transpose:
    case Op::expand:
    case Op::slice:
    case Op::cat:
    case Op::squeeze:
    case Op::unsqueeze:
    case Op::contiguous:
    case Op::embedding:
    case Op::gather:
    case Op::full:
    case Op::clamp:
    case Op::conv2d:
    case Op::max_pool2d:
    case Op::avg_pool2d:
    case Op::adaptive_avg_pool2d:
    case Op::max_pool2d_backward:
    case Op::avg_pool2d_backward:
    case Op::pad:
    case Op::cumsum:
    case Op::cumprod:
    case Op::argsort:
    case Op::topk_indices:
    case Op::conv3d:
    case Op::max_pool3d:
    case Op::avg_pool3d:
    case Op::max_pool3d_backward:
    case Op::avg_pool3d_backward:
    case Op::conv_transpose2d:
    case Op::conv_transpose3d: break;
  }
  throw InternalError(fmt::format("decompose: op '{}' is not composite", op_name(n.op)));
}

bool low_precision(DType t) { return t == DType::f16 || t == DType::bf16; }

}  // namespace

bool has_decomposition(Op op) { return op != Op::input && op_schema(op).composite(); }

Graph decompose(const Graph& g) {
  Graph out;
  out.name = g.name;
  // Every original name is reserved: a later original node must keep its own name.
  NameSet names(g);
  std::vector<int> map(static_cast<size_t>(g.size()), -1);
  for (int i = 0; i < g.size(); ++i) {
    const Node& n = g.node(i);
    if (n.is_input()) {
      out.nodes.push_back(n);
      map[static_cast<size_t>(i)] = out.size() - 1;
      continue;
    }
    std::vector<Operand> ops;
    for (auto& o : n.operands) ops.push_back(o.is_value() ? Operand::of(map[static_cast<size_t>(o.value)]) : o);
    if (!has_decomposition(n.op)) {
      map[static_cast<size_t>(i)] = out.add_node(n.name, n.op, ops, n.attrs);
      continue;
    }
    Builder b(out, names, n.name);
    std::vector<Arg> args;
    // Low-precision composites compute in f32 (softmax and friends on f16 would lose too much).
    bool upcast = op_schema(n.op).upcast() && low_precision(n.type.dtype) && out.node(ops[0].value).type.dtype == n.type.dtype;
    for (auto& o : ops) args.push_back(upcast && o.is_value() ? Arg(cast(b.value(o), DType::f32)) : b.arg(o));
    Expr r = decompose_node(b, n, args);
    if (upcast) r = cast(r, n.type.dtype);
    out.node(r.id()).name = n.name;  // the node producing the original value keeps its name
    map[static_cast<size_t>(i)] = r.id();
  }
  for (int o : g.outputs) out.outputs.push_back(map[static_cast<size_t>(o)]);
  verify(out);
  return out;
}

}  // namespace reprokit
