// Pointwise and reduction kernels: a fusion group is one loop nest; a reduction group is one loop
// over the kept elements with the pointwise prologue computed inside its inner loop. Loops whose
// operands all walk contiguously (or broadcast a scalar) are one flat, vectorisable loop; the
// others run over rows of the last dim with per-row base indices, so the inner loop vectorises.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

#include "codegen.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/op_semantics.h"

namespace reprokit::codegen_detail {

namespace {

// Whether generated code names `name` as an identifier (not as part of a longer one).
bool uses_identifier(const std::string& code, const std::string& name) {
  const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = code.find(name); at != std::string::npos; at = code.find(name, at + 1))
    if ((at == 0 || !word(code[at - 1])) && (at + name.size() == code.size() || !word(code[at + name.size()]))) return true;
  return false;
}

bool all_zero(const Shape& s) {
  for (auto v : s)
    if (v) return false;
  return true;
}

// True when reading `a` (of `shape`) at flat index i of `iter` is a[offset + i] or a[offset].
bool linear_access(const Access& a, const Shape& shape, const Shape& iter) {
  return (shape == iter && a.strides == contiguous_strides(shape)) || all_zero(a.strides) || numel(shape) == 1;
}

// Operand `a` of `shape`, aligned right against an iteration of `rank` dims, seen over only the
// dims `keep` marks: its access and shape there (a dim it lacks broadcast).
std::pair<Access, Shape> over_dims(const Access& a, const Shape& shape, size_t rank, const std::vector<bool>& keep) {
  const size_t lead = rank - shape.size();
  Access row = a;
  row.strides.clear();
  Shape row_shape;
  for (size_t d = 0; d < rank; ++d) {
    if (!keep[d]) continue;
    const bool has = d >= lead;
    row_shape.push_back(has ? shape[d - lead] : 1);
    row.strides.push_back(has ? a.strides[d - lead] : 0);
  }
  return {row, row_shape};
}

// The index of element r (C order) of `shape` through `a`'s strides, as r * step, where the
// strides nest as a contiguous block's do (step 0: every element the same); none otherwise.
std::optional<int64_t> uniform_step(const Access& a, const Shape& shape) {
  std::optional<int64_t> step;
  int64_t block = 1;  // elements of the dims after d
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 1) continue;
    if (!step) step = a.strides[d];
    else if (a.strides[d] != *step * block) return std::nullopt;
    block *= shape[d];
  }
  return step ? *step : 0;
}

// Operand `a` of `shape`, aligned right against `iter`, read over its last `dims` dims as one run
// (C order): the index of element r of the run is r * step (step 0: one element, as a per-channel
// parameter's over a plane), or none where its strides do not nest so.
std::optional<int64_t> run_step(const Access& a, const Shape& shape, const Shape& iter, size_t dims) {
  const size_t rank = iter.size(), lead = rank - shape.size();
  Access over = a;
  over.strides.clear();
  Shape over_shape;
  for (size_t d = rank - dims; d < rank; ++d) {
    const bool has = d >= lead && shape[d - lead] != 1;  // a dim it lacks, or of size 1, broadcasts
    over_shape.push_back(iter[d]);
    over.strides.push_back(has ? a.strides[d - lead] : 0);
  }
  return uniform_step(over, over_shape);
}

}  // namespace

std::string Codegen::operand_expr(const Operand& o, const char* ct, const Shape& iter, const std::string& flat) {
  if (!o.is_value()) return literal(o.literal, ct);
  int v = o.value;
  if (in_kernel_.count(v)) return fmt::format("({}){}", ct, local("t", v));
  if (auto it = row_index_.find(v); it != row_index_.end()) {
    Access a = access(v);
    return fmt::format("({}){}", ct, load_expr(a.dtype, ptr(a), it->second));
  }
  return load(v, ct, iter, flat);
}

std::string Codegen::convert_expr(const std::string& x, DType from, DType to) {
  if (to == DType::boolean) return "(" + x + " != 0)";
  if (is_floating(from) && to == DType::i64) return "rk_f2i64(" + x + ")";
  if (is_floating(from) && is_integral(to)) return wrapped_value(to, "rk_f2i32(" + x + ")");  // through int32, wrapped to the width
  return wrapped_value(to, fmt::format("({})({})", compute_type(to), x));
}

bool Codegen::fast_float_math(const char* ct) const { return target_.fast_float_math && std::string(ct) == "float"; }

// A float division by a constant (GELU's x / sqrt(2)) as a multiply by the constant's float
// reciprocal, within about an ulp of the quotient as the other float math helpers are: a vector
// division costs about ten multiplies (convnext_tiny's GELU kernels ran 8% faster without it). Not
// where the reciprocal is not a normal float (division by 0, by a subnormal's inverse, by infinity).
std::optional<std::string> Codegen::float_reciprocal(const Operand& divisor, const char* ct) const {
  if (!fast_float_math(ct) || divisor.is_value() || !(divisor.literal.is_float() || divisor.literal.is_int())) return std::nullopt;
  const float c = static_cast<float>(divisor.literal.as_float()), r = 1.0f / c;
  if (!std::isnormal(c) || !std::isnormal(r)) return std::nullopt;
  return fmt::format("(float)({:.17g})", static_cast<double>(r));
}

std::string Codegen::pointwise_expr(int id, const Shape& iter, const std::string& flat) {
  const Node& n = g_.node(id);
  const char* ct = compute_type(n.type.dtype);
  const char* opct = compute_type(compute_dtype(g_, n));  // comparisons: the operands' promoted type
  std::vector<std::string> a;
  for (auto& o : n.operands) a.push_back(operand_expr(o, n.op == Op::where && a.empty() ? "bool" : opct, iter, flat));
  switch (n.op) {
    case Op::neg: return "(-" + a[0] + ")";
    case Op::abs: return "rk_abs(" + a[0] + ")";
    // float math inlines (vectorises) on the CPU; double and CUDA keep the library's.
    case Op::exp: return fast_float_math(ct) ? "rk_expf(" + a[0] + ")" : fmt::format("{}exp({})", m_, a[0]);
    case Op::log: return fmt::format("{}log({})", m_, a[0]);
    case Op::sqrt: return fmt::format("{}sqrt({})", m_, a[0]);
    case Op::sin: return fmt::format("{}sin({})", m_, a[0]);
    case Op::cos: return fmt::format("{}cos({})", m_, a[0]);
    case Op::tanh: return fast_float_math(ct) ? "rk_tanhf(" + a[0] + ")" : fmt::format("{}tanh({})", m_, a[0]);
    case Op::erf: return fast_float_math(ct) ? "rk_erff(" + a[0] + ")" : fmt::format("{}erf({})", m_, a[0]);
    case Op::rsqrt: return fmt::format("(({})1 / {}sqrt({}))", ct, m_, a[0]);
    case Op::reciprocal: return fmt::format("(({})1 / {})", ct, a[0]);
    case Op::relu: return "rk_relu(" + a[0] + ")";
    case Op::add: return "(" + a[0] + " + " + a[1] + ")";
    case Op::sub: return "(" + a[0] + " - " + a[1] + ")";
    case Op::mul: return "(" + a[0] + " * " + a[1] + ")";
    case Op::div:
      if (auto r = float_reciprocal(n.operands[1], opct)) return "(" + a[0] + " * " + *r + ")";
      return "(" + a[0] + " / " + a[1] + ")";
    case Op::pow:
      return is_floating(n.type.dtype) ? fmt::format("({}){}pow({}, {})", ct, m_, a[0], a[1]) : fmt::format("rk_ipow({}, {})", a[0], a[1]);
    case Op::maximum: return "rk_max(" + a[0] + ", " + a[1] + ")";
    case Op::minimum: return "rk_min(" + a[0] + ", " + a[1] + ")";
    case Op::eq: return "(" + a[0] + " == " + a[1] + ")";
    case Op::ne: return "(" + a[0] + " != " + a[1] + ")";
    case Op::lt: return "(" + a[0] + " < " + a[1] + ")";
    case Op::le: return "(" + a[0] + " <= " + a[1] + ")";
    case Op::gt: return "(" + a[0] + " > " + a[1] + ")";
    case Op::ge: return "(" + a[0] + " >= " + a[1] + ")";
    case Op::where: return "(" + a[0] + " ? " + a[1] + " : " + a[2] + ")";
    case Op::to: return convert_expr(a[0], g_.node(n.operands[0].value).type.dtype, n.type.dtype);
    case Op::clone: return a[0];
    case Op::clamp: {
      // Float bounds on the CPU are values of the loop's scope, not literals: seen as constants,
      // GCC merges the two compares of a clamp with both bounds into seven vector instructions;
      // as values, the same expressions become vmaxps and vminps (a NaN kept, as the compares
      // keep it).
      const bool opaque = target_.openmp && is_floating(n.type.dtype);
      const auto bound = [&](const AttrValue& b, const char* which) {
        if (!opaque) return literal(b, ct);
        const std::string name = fmt::format("{}{}", which, id);
        hoisted_ += fmt::format("    const {} {} = rk_opaque({});\n", ct, name, literal(b, ct));
        return name;
      };
      std::string v = a[0];
      if (auto lo = attr_opt(n, "min")) v = fmt::format("rk_clamp_min({}, {})", v, bound(*lo, "lo"));
      if (auto hi = attr_opt(n, "max")) v = fmt::format("rk_clamp_max({}, {})", v, bound(*hi, "hi"));
      return v;
    }
    // Composite ops are decomposed before codegen; the rest are not pointwise.
    case Op::input:
    case Op::sigmoid:
    case Op::silu:
    case Op::gelu:
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
    case Op::contiguous:
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
  throw InternalError(fmt::format("cpp codegen: op '{}' has no pointwise spelling", op_name(n.op)));
}

std::string Codegen::pointwise_body(const std::vector<int>& ids, const Shape& iter, const std::string& flat, const std::string& indent) {
  std::string s;
  for (int id : ids) {
    const Node& n = g_.node(id);
    std::string e = pointwise_expr(id, iter, flat);
    if (perturbs(id)) e = perturb_open(id) + e + ")";
    s += fmt::format("{}const {} {} = {};\n", indent, compute_type(n.type.dtype), local("t", id), wrapped_value(n.type.dtype, e));
    in_kernel_.insert(id);
    if (materialized(id)) s += fmt::format("{}{}[{}] = {};\n", indent, buf(id), flat, store_value(n.type.dtype, local("t", id)));
  }
  return s;
}

std::string Codegen::pointwise_kernel(const std::vector<int>& ids, const ComputedOperand* computed) {
  const Shape& iter = g_.node(ids.back()).type.shape;
  const int64_t count = numel(iter), work = static_cast<int64_t>(ids.size()) + (computed ? computed->work : 0);
  // The values the kernel reads from memory.
  std::vector<int> reads;
  std::set<int> members(ids.begin(), ids.end());
  if (computed) members.insert(computed->value);
  for (int id : ids)
    for (auto& o : g_.node(id).operands)
      if (o.is_value() && !members.count(o.value)) reads.push_back(o.value);
  // The computed operand's element at `i`, as a temporary of the kernel.
  auto computed_element = [&](const std::string& indent) {
    if (!computed) return std::string();
    in_kernel_.insert(computed->value);
    const DType dt = g_.node(computed->value).type.dtype;
    return fmt::format("{}const {} {} = {};\n", indent, compute_type(dt), local("t", computed->value), computed->element);
  };
  // One flat loop when every read walks linearly; a computed operand's row prologue needs the row
  // loop (conv outputs are 4-d).
  bool flat = !computed;
  if (flat && iter.size() > 1)
    for (int v : reads) flat &= linear_access(access(v), g_.node(v).type.shape, iter);
  if (flat) {
    const std::string body = pointwise_body(ids, iter, "i", "    ");
    return take_hoisted() + loop("i", count, work, true) + " {\n" + body + "  }\n";
  }
  // Rows of the last dims: each operand's base index once per row, then a contiguous inner loop.
  // As many last dims as every read walks as one run (a batch norm's per-channel parameters are
  // one element over a plane): densenet121's batch norms over 7 x 7 and 14 x 14 planes ran rows of
  // 7 and 14, a vector loop each, and took 1.6x ONNX Runtime's. At least 16 rows stay, for the
  // threads to share. A conv's output pass (computed) keeps rows of the last dim, which its
  // prologue and element are written for; so does CUDA, where a row is one thread's serial loop.
  size_t run_dims = 1;
  const auto one_run = [&](size_t dims) {
    if (count / std::max<int64_t>(1, numel(Shape(iter.end() - static_cast<int64_t>(dims), iter.end()))) < 16) return false;
    for (int v : reads)
      if (!run_step(access(v), g_.node(v).type.shape, iter, dims)) return false;
    return true;
  };
  while (!computed && target_.openmp && run_dims + 1 < iter.size() && one_run(run_dims + 1)) ++run_dims;
  Shape outer(iter.begin(), iter.end() - static_cast<int64_t>(run_dims));
  const int64_t last = numel(Shape(iter.end() - static_cast<int64_t>(run_dims), iter.end())), rows = last ? count / last : 0,
                block = computed ? computed->block_rows : 0;
  // An operand's index at the start of row `r` (its strides over `outer`).
  auto row_start = [&](int v) {
    std::vector<bool> outer_dims(iter.size(), true);
    for (size_t d = iter.size() - run_dims; d < iter.size(); ++d) outer_dims[d] = false;
    const auto [row, row_shape] = over_dims(access(v), g_.node(v).type.shape, iter.size(), outer_dims);
    return index_of(row, row_shape, outer, "r");
  };
  const bool span = computed && computed->span;
  // A span lies within one plane of the last two dims (a conv's channel). When each read is either
  // linear or constant over that plane (a batch norm's per-channel parameters, a bias), the span
  // is one flat loop, the constants' indices once: rows of 7 or 14 pixels a loop each, with their
  // indices divided out per row, cost the epilogue twice what the output pass had.
  bool flat_span = span && iter.size() >= 2;
  std::vector<bool> plane_dims(iter.size(), false);
  if (flat_span) plane_dims[iter.size() - 1] = plane_dims[iter.size() - 2] = true;
  std::vector<int> plane_constants;
  for (size_t k = 0; flat_span && k < reads.size(); ++k) {
    const int v = reads[k];
    const Access a = access(v);
    const Shape& shape = g_.node(v).type.shape;
    if (linear_access(a, shape, iter)) continue;
    const auto [along, along_shape] = over_dims(a, shape, iter.size(), plane_dims);
    for (size_t d = 0; d < along_shape.size(); ++d) flat_span &= along_shape[d] == 1 || along.strides[d] == 0;
    plane_constants.push_back(v);
  }
  if (flat_span) {
    std::string s = "    {\n";
    if (!plane_constants.empty() || !computed->prologue.empty()) s += fmt::format("    const int64_t r = span_lo / {};\n", last);
    for (int v : plane_constants) {
      if (row_index_.count(v)) continue;
      s += fmt::format("    const int64_t r{} = {};\n", v, row_start(v));
      row_index_[v] = fmt::format("r{}", v);
    }
    // In 16-float vectors where the machine has them: a span is whole panels of 32 pixels but at a
    // plane's end, so nothing is left over from them. mobilenet_v2's 24 -> 144 conv at 56 x 56
    // with its clamp (then 8 vector instructions a vector) 271-280 -> 245-255 us.
    std::string body = computed_element("      ");  // first: pointwise_body reads it from in_kernel_
    body += pointwise_body(ids, iter, "i", "      ");
    s += computed->prologue + take_hoisted() + (target_.openmp ? "    RK_SIMD_WIDE\n" : "");
    s += "    for (int64_t i = span_lo; i < span_hi; ++i) {\n" + body;
    row_index_.clear();
    return s + "    }\n    }\n";
  }
  // A read that walks the run with a step (a permute fused into the kernel: convnext_tiny's NHWC
  // matmul output read back as NCHW) touches a cache line an element, and a row at a time walks
  // every line of the plane before the next row comes back to them (at 56 x 56 x 96, 3136 lines
  // read again from L2 for each of 96 rows). Tiles of kTileRows rows by kTileColumns columns
  // instead: the rows' elements share lines (the operand's step between rows is 1), which then
  // stay in L1 for the tile.
  constexpr int64_t kTileRows = 16, kTileColumns = 256;
  const bool tiled = !computed && target_.openmp && rows >= 2 * kTileRows && last > kTileColumns &&
                     std::any_of(reads.begin(), reads.end(), [&](int v) { return *run_step(access(v), g_.node(v).type.shape, iter, run_dims) > 1; });
  std::string s;
  if (tiled)
    s = loop("rb", (rows + kTileRows - 1) / kTileRows, kTileRows * last * work) +
        fmt::format(
            " {{\n  for (int64_t j0 = 0; j0 < {0}; j0 += {1}) {{\n  const int64_t j1 = rk_min<int64_t>({0}, j0 + {1});\n"
            "  for (int64_t r = rb * {2}; r < rk_min<int64_t>({3}, rb * {2} + {2}); ++r) {{\n",
            last, kTileColumns, kTileRows, rows);
  else if (span)  // the rows that [span_lo, span_hi) touches, each from its first column in the span to its last
    s = fmt::format(
        "    for (int64_t r = span_lo / {0}; r * {0} < span_hi; ++r) {{\n"
        "    const int64_t j_lo = rk_max<int64_t>(0, span_lo - r * {0}), j_hi = rk_min<int64_t>({0}, span_hi - r * {0});\n",
        last);
  else if (block)
    s = loop("nc", rows / block, block * last * work) + " {\n" + computed->prologue +
        fmt::format("    for (int64_t r = nc * {0}; r < (nc + 1) * {0}; ++r) {{\n", block);
  else s = loop("r", rows, last * work) + " {\n";
  for (int v : reads) {
    if (row_index_.count(v)) continue;
    const Shape& shape = g_.node(v).type.shape;
    // The operand's stride along the run.
    const int64_t inner = *run_step(access(v), shape, iter, run_dims);
    s += fmt::format("    const int64_t r{} = {};\n", v, row_start(v));
    row_index_[v] = inner == 0 ? fmt::format("r{}", v) : inner == 1 ? fmt::format("r{} + j", v) : fmt::format("r{} + j * {}", v, inner);
  }
  if (computed && !block) s += computed->prologue;
  std::string body = computed_element("      ");  // first: pointwise_body reads it from in_kernel_
  body += pointwise_body(ids, iter, "i", "      ");
  s += take_hoisted() + (target_.openmp ? "    #pragma omp simd\n" : "");
  s += span    ? fmt::format("    for (int64_t j = j_lo; j < j_hi; ++j) {{\n      const int64_t i = r * {} + j;\n", last)
       : tiled ? fmt::format("    for (int64_t j = j0; j < j1; ++j) {{\n      const int64_t i = r * {} + j;\n", last)
               : fmt::format("    for (int64_t j = 0; j < {}; ++j) {{\n      const int64_t i = r * {} + j;\n", last, last);
  s += body;
  row_index_.clear();
  return s + "    }\n  }\n" + (block ? "  }\n" : "") + (tiled ? "  }\n  }\n" : "");
}

std::string Codegen::reduction_kernel(int id, const std::vector<int>& prologue) {
  const Node& n = g_.node(id);
  int src = n.operands[0].value;
  const Shape& in = g_.node(src).type.shape;
  std::vector<bool> reduced(in.size(), false);
  for (auto d : reduction_dims(n, static_cast<int64_t>(in.size()))) reduced[static_cast<size_t>(d)] = true;
  Shape kept, red;
  for (size_t d = 0; d < in.size(); ++d) (reduced[d] ? red : kept).push_back(in[d]);
  const int64_t outer = numel(kept), inner = numel(red);
  // ii: the flat index over `in` of element (o, r). When the reduced dims are the trailing ones
  // it is o * inner + r, and the inner loop walks contiguously.
  bool trailing = true, seen_reduced = false;
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == 1) continue;
    if (reduced[d]) seen_reduced = true;
    else if (seen_reduced) trailing = false;
  }
  std::string idx;
  if (trailing) {
    idx = inner == 1 ? "o" : fmt::format("o * {} + r", inner);
  } else {
    Shape instr = contiguous_strides(in), ks = contiguous_strides(kept), rs = contiguous_strides(red);
    for (size_t d = 0, k = 0, r = 0; d < in.size(); ++d) {
      if (in[d] == 1) {
        reduced[d] ? ++r : ++k;
        continue;
      }
      std::string part = reduced[d] ? fmt::format("((r / {}) % {})", rs[r], red[r]) : fmt::format("((o / {}) % {})", ks[k], kept[k]);
      reduced[d] ? ++r : ++k;
      idx += (idx.empty() ? "" : " + ") + fmt::format("{} * {}", part, instr[d]);
    }
    if (idx.empty()) idx = "0";
  }
  DType it = g_.node(src).type.dtype;
  const char* act = n.op == Op::sum ? compute_type(n.type.dtype) : compute_type(it);
  std::string init = n.op == Op::amax   ? fmt::format("rk_lowest<{}>()", act)
                     : n.op == Op::amin ? fmt::format("rk_highest<{}>()", act)
                                        : fmt::format("({})0", act);
  std::string s = loop("o", outer, inner) + " {\n";
  if (n.op == Op::argmax) s += fmt::format("    {} acc = ({})0; int64_t best = -1;\n", act, act);
  else s += fmt::format("    {} acc = {};\n", act, init);
  // Operands read other than contiguously whose index over the reduced (trailing) dims is
  // constant (a batch norm's per-channel parameters before a global pool) or r times one stride
  // (a layer norm over the channels of an NCHW tensor seen through a permute): their index over
  // the kept dims once per o. Through the flat index it was divisions for every element
  // (mobilenet_v2's last batch norm, clamp and pool: 5% of its run).
  if (trailing) {
    const std::set<int> members(prologue.begin(), prologue.end());
    std::vector<int> reads;
    for (int pid : prologue)
      for (auto& op : g_.node(pid).operands)
        if (op.is_value() && !members.count(op.value)) reads.push_back(op.value);
    if (!members.count(src)) reads.push_back(src);
    std::vector<bool> kept_dims(reduced.size());
    for (size_t d = 0; d < reduced.size(); ++d) kept_dims[d] = !reduced[d];
    for (int v : reads) {
      if (row_index_.count(v)) continue;
      const Access a = access(v);
      const Shape& shape = g_.node(v).type.shape;
      if (linear_access(a, shape, in)) continue;
      // Its strides over the reduced dims of the iteration, 0 along a dim it is broadcast over.
      auto [along, along_shape] = over_dims(a, shape, in.size(), reduced);
      for (size_t d = 0; d < along_shape.size(); ++d)
        if (along_shape[d] == 1) along.strides[d] = 0;
      const std::optional<int64_t> step = uniform_step(along, red);
      if (!step) continue;
      const auto [row, row_shape] = over_dims(a, shape, in.size(), kept_dims);
      s += fmt::format("    const int64_t r{} = {};\n", v, index_of(row, row_shape, kept, "o"));
      row_index_[v] = *step == 0 ? fmt::format("r{}", v) : *step == 1 ? fmt::format("r{} + r", v) : fmt::format("r{} + r * {}", v, *step);
    }
  }
  // A plain sum over a contiguous row vectorises (reassociated, as PyTorch's own sum does); a
  // float max/min too, with NaN tracked on the side (a NaN anywhere makes the result NaN) in an
  // int: GCC has no vector of bool, and an OR-reduction into one kept the whole loop scalar
  // (a softmax's row max over 4 x 12 x 128 x 128 took 3x its exp).
  const bool vector_extremum = (n.op == Op::amax || n.op == Op::amin) && trailing && target_.openmp && is_floating(it);
  const std::string body = pointwise_body(prologue, in, "ii", "      ");
  s += take_hoisted();
  if (n.op == Op::sum && trailing && target_.openmp) s += "    #pragma omp simd reduction(+:acc)\n";
  if (vector_extremum)
    s += fmt::format("    int nan = 0;\n    #pragma omp simd reduction({}:acc) reduction(|:nan)\n", n.op == Op::amax ? "max" : "min");
  std::string v = in_kernel_.count(src) ? fmt::format("({}){}", act, local("t", src)) : operand_expr(n.operands[0], act, in, "ii");
  // The flat index only where something reads through it (every operand may have a row index).
  const bool flat = uses_identifier(body, "ii") || uses_identifier(v, "ii");
  s += fmt::format("    for (int64_t r = 0; r < {}; ++r) {{\n", inner);
  if (flat) s += fmt::format("      const int64_t ii = {};\n", idx);
  s += body;
  if (n.op == Op::sum) s += "      acc += " + v + ";\n";
  else if (vector_extremum)
    s += fmt::format("      {{ const {} v = {}; nan |= v != v; acc = v {} acc ? v : acc; }}\n", act, v, n.op == Op::amax ? ">" : "<");
  else if (n.op == Op::amax) s += "      acc = rk_max(acc, " + v + ");\n";
  else if (n.op == Op::amin) s += "      acc = rk_min(acc, " + v + ");\n";
  else s += fmt::format("      {{ {} v = {}; if (best < 0 || (acc == acc && (v != v || v > acc))) {{ acc = v; best = r; }} }}\n", act, v);
  s += "    }\n";
  row_index_.clear();
  if (vector_extremum) s += fmt::format("    if (nan) acc = ({})NAN;\n", act);
  std::string result = n.op == Op::argmax ? "best" : "acc";
  if (perturbs(id)) result = perturb_open(id) + result + ")";
  s += fmt::format("    {}[o] = {};\n  }}\n", buf(id), store_value(n.type.dtype, result));
  return s;
}

}  // namespace reprokit::codegen_detail
