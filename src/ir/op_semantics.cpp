// Op semantics shared by every layer (see op_semantics.h).
#include "reprokit/ir/op_semantics.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "reprokit/support/errors.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/shape_check.h"

namespace reprokit {

namespace {
constexpr int64_t kMaxPad = int64_t{1} << 31;
}  // namespace

int64_t normalize_dim(int64_t dim, int64_t rank) {
  int64_t r = std::max<int64_t>(rank, 1);  // a 0-d tensor accepts dim 0 / -1, as in torch
  if (dim < -r || dim >= r) throw VerifyError(fmt::format("dim {} is out of range for rank {}", dim, rank));
  return dim < 0 ? dim + r : dim;
}

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

namespace {
int category(DType t) { return t == DType::boolean ? 0 : is_floating(t) ? 2 : 1; }
}  // namespace

DType promote_operands(const std::vector<Operand>& operands, const std::vector<DType>& dtypes, const std::vector<int64_t>& ranks) {
  std::optional<DType> dimensioned, zero_dim;
  std::optional<ScalarKind> best_scalar;
  for (size_t i = 0; i < operands.size(); ++i) {
    const Operand& o = operands[i];
    if (o.is_value()) {
      std::optional<DType>& into = ranks.at(i) == 0 ? zero_dim : dimensioned;
      into = into ? promote_types(*into, dtypes[i]) : dtypes[i];
      continue;
    }
    ScalarKind k = o.literal.is_bool() ? ScalarKind::boolean : o.literal.is_int() ? ScalarKind::integer : ScalarKind::floating;
    if (!best_scalar || k > *best_scalar) best_scalar = k;
  }
  if (!dimensioned && !zero_dim) throw VerifyError("at least one operand must be a tensor value");
  DType t = !dimensioned ? *zero_dim : !zero_dim || category(*zero_dim) <= category(*dimensioned) ? *dimensioned : *zero_dim;
  return best_scalar ? promote_with_scalar(t, *best_scalar) : t;
}

bool is_comparison(Op op) { return op == Op::eq || op == Op::ne || op == Op::lt || op == Op::le || op == Op::gt || op == Op::ge; }

DType compute_dtype(const Node& n, const std::vector<DType>& dtypes, const std::vector<int64_t>& ranks) {
  if (is_comparison(n.op)) return promote_operands(n.operands, dtypes, ranks);
  if (n.op == Op::to) return dtypes.at(0);
  return n.type.dtype;
}

DType compute_dtype(const Graph& g, const Node& n) {
  std::vector<DType> dtypes;
  std::vector<int64_t> ranks;
  for (const auto& o : n.operands) {
    dtypes.push_back(o.is_value() ? g.node(o.value).type.dtype : DType::f64);
    ranks.push_back(o.is_value() ? static_cast<int64_t>(g.node(o.value).type.shape.size()) : 0);
  }
  return compute_dtype(n, dtypes, ranks);
}

std::vector<int64_t> reduction_dims(const Node& n, int64_t rank) {
  const char* name = n.op == Op::argmax ? "dim" : "dims";
  std::vector<int64_t> dims;
  auto a = attr_opt(n, name);
  if (!a) {
    for (int64_t i = 0; i < rank; ++i) dims.push_back(i);
    return dims;
  }
  std::set<int64_t> seen;
  for (auto d : a->as_ints()) {
    int64_t nd = normalize_dim(d, rank);
    if (!seen.insert(nd).second) throw VerifyError(fmt::format("dim {} appears twice in {}", d, name));
    dims.push_back(nd);
  }
  // A 0-d tensor accepts dim 0 and -1 (as torch) but has no dim to reduce: every layer below
  // indexes its shape with these.
  if (rank == 0) dims.clear();
  return dims;
}

int64_t reduction_count(const Shape& in, const std::vector<int64_t>& dims) {
  int64_t c = 1;
  for (auto d : dims) c *= in[static_cast<size_t>(d)];
  return c;
}

Shape keepdim_shape(const Shape& in, const std::vector<int64_t>& dims) {
  Shape s = in;
  for (auto d : dims) s[static_cast<size_t>(d)] = 1;
  return s;
}

SliceBounds slice_bounds(const Node& n, const Shape& in) {
  SliceBounds b;
  b.dim = normalize_dim(attr_int(n, "dim"), static_cast<int64_t>(in.size()));
  int64_t size = in[static_cast<size_t>(b.dim)];
  b.step = attr_int(n, "step");
  if (b.step <= 0) throw VerifyError(fmt::format("step must be positive, got {}", b.step));
  // PyTorch's clamping: negative bounds count from the end, then both are clamped to [0, size].
  auto clamp = [&](int64_t v) {
    if (v < 0) v = v < -size ? 0 : v + size;
    return std::min(v, size);
  };
  b.start = clamp(attr_int(n, "start"));
  int64_t end = clamp(attr_int(n, "end"));
  b.length = end > b.start ? (end - b.start - 1) / b.step + 1 : 0;
  return b;
}

ScanLines scan_lines(const Node& n, const Shape& in) {
  ScanLines l;
  const auto rank = static_cast<int64_t>(in.size());
  l.dim = normalize_dim(attr_int(n, "dim"), rank);
  if (rank == 0) return l;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t s = in[static_cast<size_t>(d)];
    if (d < l.dim) l.outer *= s;
    else if (d > l.dim) l.inner *= s;
    else l.length = s;
  }
  return l;
}

int64_t topk_k(const Node& n, const Shape& in) {
  int64_t k = attr_int(n, "k"), length = scan_lines(n, in).length;
  if (k < 0 || k > length) throw VerifyError(fmt::format("k = {} is out of range for a dim of size {}", k, length));
  if (in.empty() && k != 1) throw VerifyError(fmt::format("k = {} for a 0-d input (it takes k = 1)", k));
  return k;
}

bool orders_descending(const Node& n) { return n.op == Op::topk || n.op == Op::topk_indices ? attr_bool(n, "largest") : attr_bool(n, "descending"); }

int64_t gather_dim_size(const Node& n, const Shape& x) {
  const int64_t d = normalize_dim(attr_int(n, "dim"), static_cast<int64_t>(x.size()));
  return x.empty() ? 1 : x[static_cast<size_t>(d)];
}

std::vector<int64_t> permutation(const Node& n, int64_t rank) {
  std::vector<int64_t> dims;
  if (n.op == Op::transpose) {
    for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
    const int64_t d0 = normalize_dim(attr_int(n, "dim0"), rank), d1 = normalize_dim(attr_int(n, "dim1"), rank);
    if (rank > 0) std::swap(dims[static_cast<size_t>(d0)], dims[static_cast<size_t>(d1)]);  // a 0-d tensor: itself
    return dims;
  }
  auto given = attr_ints(n, "dims");
  if (static_cast<int64_t>(given.size()) != rank) throw VerifyError(fmt::format("dims [{}] do not match rank {}", fmt::join(given, ", "), rank));
  std::set<int64_t> seen;
  for (auto d : given) {
    int64_t nd = normalize_dim(d, rank);
    if (!seen.insert(nd).second) throw VerifyError(fmt::format("dims [{}] is not a permutation", fmt::join(given, ", ")));
    dims.push_back(nd);
  }
  return dims;
}

std::vector<int64_t> layer_norm_dims(const Node& n, int64_t rank) {
  auto ns = attr_ints(n, "normalized_shape");
  std::vector<int64_t> dims;
  for (size_t i = 0; i < ns.size(); ++i) dims.push_back(rank - static_cast<int64_t>(ns.size()) + static_cast<int64_t>(i));
  return dims;
}

int64_t norm_groups(const Node& n, const Shape& x) {
  if (x.size() < 2) throw VerifyError(fmt::format("input must be [N, C, ...], got [{}]", fmt::join(x, ", ")));
  if (n.op == Op::instance_norm) return x[1];
  const int64_t groups = attr_int(n, "num_groups");
  if (groups < 1) throw VerifyError(fmt::format("num_groups must be positive, got {}", groups));
  if (x[1] % groups) throw VerifyError(fmt::format("{} channels do not divide into {} groups", x[1], groups));
  return groups;
}

namespace {
// grid_sample's string attributes, by name: one table each, so the error lists the choices.
template <class E> E choice_of(const Node& n, const char* name, std::initializer_list<std::pair<const char*, E>> table) {
  const std::string v = attr(n, name).as_string();
  std::vector<std::string> names;
  for (const auto& [s, e] : table) {
    if (v == s) return e;
    names.emplace_back(s);
  }
  if (std::string_view(name) == "mode" && v == "bicubic") throw VerifyError("mode \"bicubic\" is not supported (bilinear or nearest)");
  throw VerifyError(fmt::format("{} must be one of {}, got \"{}\"", name, fmt::join(names, ", "), v));
}
}  // namespace

GridSample grid_sample_of(const Node& n, const Shape& x, const Shape& grid) {
  GridSample s;
  s.mode = choice_of<SampleMode>(n, "mode", {{"bilinear", SampleMode::bilinear}, {"nearest", SampleMode::nearest}});
  s.padding = choice_of<SamplePadding>(
      n, "padding_mode", {{"zeros", SamplePadding::zeros}, {"border", SamplePadding::border}, {"reflection", SamplePadding::reflection}});
  s.align_corners = attr_bool(n, "align_corners");
  if (x.size() != 4) throw VerifyError(fmt::format("input must be 4-D [N, C, H, W], got [{}]", fmt::join(x, ", ")));
  if (grid.size() != 4 || grid[3] != 2) throw VerifyError(fmt::format("grid must be [N, H_out, W_out, 2], got [{}]", fmt::join(grid, ", ")));
  if (grid[0] != x[0]) throw VerifyError(fmt::format("grid has batch {}, input has {}", grid[0], x[0]));
  if (x[2] == 0 || x[3] == 0) throw VerifyError(fmt::format("input [{}] has no pixels to sample", fmt::join(x, ", ")));  // as PyTorch
  s.result = {x[0], x[1], grid[1], grid[2]};
  return s;
}

Shape affine_grid_shape(const Node& n, const Shape& theta) {
  const std::vector<int64_t> size = attr_ints(n, "size");
  if (theta.size() != 3 || theta[1] != 2 || theta[2] != 3)
    throw VerifyError(fmt::format("theta must be [N, 2, 3], got [{}]", fmt::join(theta, ", ")));
  if (size.size() != 4) throw VerifyError(fmt::format("size must be [N, C, H, W] (2-D), got [{}]", fmt::join(size, ", ")));
  for (int64_t d : size)
    if (d < 0) throw VerifyError(fmt::format("size [{}] has a negative dim", fmt::join(size, ", ")));
  if (size[0] != theta[0]) throw VerifyError(fmt::format("size has batch {}, theta has {}", size[0], theta[0]));
  return {size[0], size[2], size[3], 2};
}

double affine_grid_base(int64_t i, int64_t size, bool align_corners) {
  if (size <= 1) return 0.0;
  // torch.linspace fills the first half from the start and the second from the end.
  const double step = 2.0 / static_cast<double>(size - 1);
  double v = i < size / 2 ? -1.0 + step * static_cast<double>(i) : 1.0 - step * static_cast<double>(size - 1 - i);
  if (!align_corners) v = v * static_cast<double>(size - 1) / static_cast<double>(size);
  return v;
}

PixelShuffle pixel_shuffle_of(const Node& n, const Shape& x) {
  const bool up = n.op == Op::pixel_shuffle;
  PixelShuffle p;
  p.factor = attr_int(n, up ? "upscale_factor" : "downscale_factor");
  const int64_t r = p.factor;
  if (r < 1 || r > (int64_t{1} << 20))
    throw VerifyError(fmt::format("{} must be in [1, 2^20], got {}", up ? "upscale_factor" : "downscale_factor", r));
  if (x.size() < 3) throw VerifyError(fmt::format("input must be [*, C, H, W] (rank >= 3), got [{}]", fmt::join(x, ", ")));
  const size_t lead = x.size() - 3;
  const int64_t c = x[lead], h = x[lead + 1], w = x[lead + 2];
  p.split.assign(x.begin(), x.begin() + static_cast<long>(lead));
  p.result = p.split;
  for (size_t d = 0; d < lead; ++d) p.perm.push_back(static_cast<int64_t>(d));
  const auto l = static_cast<int64_t>(lead);
  if (up) {
    if (c % (r * r)) throw VerifyError(fmt::format("{} channels do not divide by upscale_factor^2 = {}", c, r * r));
    p.split.insert(p.split.end(), {c / (r * r), r, r, h, w});
    p.perm.insert(p.perm.end(), {l, l + 3, l + 1, l + 4, l + 2});  // C, H, r, W, r
    p.result.insert(p.result.end(), {c / (r * r), checked_mul(h, r, "the output"), checked_mul(w, r, "the output")});
  } else {
    if (h % r || w % r) throw VerifyError(fmt::format("height {} and width {} do not divide by downscale_factor {}", h, w, r));
    p.split.insert(p.split.end(), {c, h / r, r, w / r, r});
    p.perm.insert(p.perm.end(), {l, l + 2, l + 4, l + 1, l + 3});  // C, r, r, H, W
    p.result.insert(p.result.end(), {checked_mul(c, r * r, "the output"), h / r, w / r});
  }
  return p;
}

std::string EinsumSpec::equation() const { return fmt::format("{}->{}", fmt::join(inputs, ","), output); }

EinsumSpec einsum_spec(const std::string& equation, const std::vector<Shape>& shapes) {
  auto bad = [&](const std::string& what) { throw VerifyError(fmt::format("equation \"{}\": {}", equation, what)); };
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  if (eq.find('.') != std::string::npos) bad("an ellipsis (...) is not supported");
  for (size_t i = 0; i < eq.size(); ++i) {
    const char c = eq[i];
    const bool arrow = (c == '-' && i + 1 < eq.size() && eq[i + 1] == '>') || (c == '>' && i > 0 && eq[i - 1] == '-');
    if (!letter(c) && c != ',' && !arrow)
      bad(fmt::format("'{}' is not a subscript (letters, commas between the operands' terms, -> before the output)", c));
  }
  const size_t arrow = eq.find("->");
  if (arrow != std::string::npos && eq.find("->", arrow + 2) != std::string::npos) bad("more than one ->");
  const std::string lhs = eq.substr(0, arrow);
  EinsumSpec s;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    s.inputs.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (s.inputs.size() != shapes.size()) bad(fmt::format("{} terms for {} operands", s.inputs.size(), shapes.size()));
  std::map<char, int> uses;
  for (size_t k = 0; k < shapes.size(); ++k) {
    const std::string& term = s.inputs[k];
    if (term.size() != shapes[k].size())
      bad(fmt::format("term '{}' has {} subscripts, operand {} has rank {}", term, term.size(), k + 1, shapes[k].size()));
    for (size_t i = 0; i < term.size(); ++i) {
      const char c = term[i];
      if (term.find(c) != i) bad(fmt::format("'{}' repeats in term '{}' (diagonals are not supported)", c, term));
      auto [it, fresh] = s.sizes.emplace(c, shapes[k][i]);
      if (!fresh && it->second != shapes[k][i])
        bad(fmt::format("'{}' is {} in operand {} but {} in an earlier operand", c, shapes[k][i], k + 1, it->second));
      ++uses[c];
    }
  }
  if (arrow == std::string::npos) {
    for (const auto& [c, count] : uses)  // ASCII order: capitals first, as torch.einsum
      if (count == 1) s.output += c;
    return s;
  }
  s.output = eq.substr(arrow + 2);
  for (size_t i = 0; i < s.output.size(); ++i) {
    const char c = s.output[i];
    if (c == ',') bad("the output after -> is one term");
    if (s.output.find(c) != i) bad(fmt::format("'{}' repeats in the output '{}'", c, s.output));
    if (!s.sizes.count(c)) bad(fmt::format("output subscript '{}' is in no operand's term", c));
  }
  return s;
}

int64_t Window::output_size(int d, int64_t in) const {
  int64_t span = dilation[d] * (kernel[d] - 1) + 1;
  int64_t avail = in + 2 * padding[d] - span;
  if (avail < 0) return 0;
  int64_t out = (ceil_mode ? (avail + stride[d] - 1) / stride[d] : avail / stride[d]) + 1;
  if (ceil_mode && (out - 1) * stride[d] >= in + padding[d]) --out;  // the last window starts in the right padding
  return out;
}

bool is_conv_grad(Op op) {
  return op == Op::conv2d_input_grad || op == Op::conv2d_weight_grad || op == Op::conv3d_input_grad || op == Op::conv3d_weight_grad;
}

int spatial_rank(Op op) {
  switch (op) {
    case Op::conv3d:
    case Op::max_pool3d:
    case Op::avg_pool3d:
    case Op::max_pool3d_backward:
    case Op::avg_pool3d_backward:
    case Op::conv_transpose3d:
    case Op::conv3d_input_grad:
    case Op::conv3d_weight_grad: return 3;
    default: return 2;
  }
}

Window window_of(const Node& n, const int64_t* weight_spatial) {
  Window w;
  w.rank = spatial_rank(n.op);
  const int r = w.rank;
  auto list = [&](const int64_t* xs) { return fmt::format("[{}]", fmt::join(xs, xs + r, ", ")); };
  auto dims = [&](const char* name, int64_t* out, bool optional) {
    auto v = attr_opt(n, name);
    if (!v) {
      if (!optional) throw VerifyError(fmt::format("missing attribute '{}'", name));
      return false;
    }
    auto xs = v->as_ints();
    if (xs.size() == 1) xs.resize(static_cast<size_t>(r), xs[0]);  // one value stands for every dim, as in torch
    if (xs.size() != static_cast<size_t>(r)) throw VerifyError(fmt::format("{} must have 1 or {} values, got {}", name, r, xs.size()));
    std::copy(xs.begin(), xs.end(), out);
    return true;
  };
  if (weight_spatial) {
    std::copy(weight_spatial, weight_spatial + r, w.kernel);
  } else {
    dims("kernel", w.kernel, false);
  }
  const bool is_conv = n.op == Op::conv2d || n.op == Op::conv3d || n.op == Op::conv_transpose2d || n.op == Op::conv_transpose3d || is_conv_grad(n.op);
  const bool is_avg = n.op == Op::avg_pool2d || n.op == Op::avg_pool2d_backward || n.op == Op::avg_pool3d || n.op == Op::avg_pool3d_backward;
  if (!dims("stride", w.stride, !is_conv) && !is_conv) std::copy(w.kernel, w.kernel + r, w.stride);
  dims("padding", w.padding, false);
  if (!is_avg) dims("dilation", w.dilation, false);
  if (!is_conv) w.ceil_mode = attr_bool(n, "ceil_mode");
  for (int d = 0; d < r; ++d) {
    if (w.kernel[d] <= 0 || w.stride[d] <= 0 || w.dilation[d] <= 0)
      throw VerifyError(fmt::format("kernel, stride and dilation must be positive, got kernel {} stride {} dilation {}", list(w.kernel),
                                    list(w.stride), list(w.dilation)));
    if (w.padding[d] < 0) throw VerifyError(fmt::format("padding must not be negative, got {}", list(w.padding)));
    if (w.kernel[d] > (int64_t{1} << 20) || w.stride[d] > (int64_t{1} << 20) || w.dilation[d] > (int64_t{1} << 20) ||
        w.padding[d] > (int64_t{1} << 20))
      throw VerifyError("a window size, stride, padding or dilation is over 2^20");
    if (!is_conv && w.padding[d] * 2 > w.dilation[d] * (w.kernel[d] - 1) + 1)
      throw VerifyError(
          fmt::format("pad should be at most half of the effective kernel size, got padding {} for kernel {}", list(w.padding), list(w.kernel)));
  }
  return w;
}

std::vector<int64_t> output_padding_of(const Node& n, const Window& w) {
  auto xs = attr_ints(n, "output_padding");
  if (xs.size() == 1) xs.resize(static_cast<size_t>(w.rank), xs[0]);
  if (xs.size() != static_cast<size_t>(w.rank)) throw VerifyError(fmt::format("output_padding must have 1 or {} values, got {}", w.rank, xs.size()));
  for (int d = 0; d < w.rank; ++d)
    if (xs[static_cast<size_t>(d)] < 0 || xs[static_cast<size_t>(d)] >= std::max(w.stride[d], w.dilation[d]))
      throw VerifyError(
          fmt::format("output_padding [{}] must be non-negative and smaller than the stride or the dilation (stride [{}], dilation [{}])",
                      fmt::join(xs, ", "), fmt::join(w.stride, w.stride + w.rank, ", "), fmt::join(w.dilation, w.dilation + w.rank, ", ")));
  return xs;
}

int64_t transposed_output_size(const Window& w, const std::vector<int64_t>& output_padding, int d, int64_t in) {
  return (in - 1) * w.stride[d] - 2 * w.padding[d] + w.dilation[d] * (w.kernel[d] - 1) + output_padding[static_cast<size_t>(d)] + 1;
}

std::vector<std::pair<int64_t, int64_t>> pad_amounts(const Node& n, int64_t rank) {
  auto pads = attr_ints(n, "pads");
  if (pads.size() % 2 || static_cast<int64_t>(pads.size()) > 2 * rank)
    throw VerifyError(fmt::format("pads [{}] must hold (before, after) pairs for at most {} dims", fmt::join(pads, ", "), rank));
  std::vector<std::pair<int64_t, int64_t>> out(static_cast<size_t>(rank), {0, 0});
  for (size_t k = 0; k < pads.size() / 2; ++k) {
    if (pads[2 * k] < 0 || pads[2 * k + 1] < 0 || pads[2 * k] > kMaxPad || pads[2 * k + 1] > kMaxPad)
      throw VerifyError(fmt::format("pads [{}] must be in [0, 2^31) (cropping is not supported)", fmt::join(pads, ", ")));
    out[static_cast<size_t>(rank) - 1 - k] = {pads[2 * k], pads[2 * k + 1]};
  }
  return out;
}

}  // namespace reprokit
