// The op table of DESIGN.md: schemas, classes and shape/dtype inference, one entry per op.
#include "reprokit/ir/op_registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "reprokit/ir/errors.h"

namespace reprokit {

namespace {

[[noreturn]] void fail(const std::string& msg) { throw VerifyError(msg); }

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

const TensorType& operand_type(const Graph& g, const Node& n, size_t i) {
  if (i >= n.operands.size() || !n.operands[i].is_value())
    fail(fmt::format("operand {} must be a tensor value", i + 1));
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
  const OpSchema* s = find_op(n.op);
  if (s && !s->differentiable) t.requires_grad = false;
  return t;
}

void require_float(const TensorType& t, const char* what) {
  if (!is_floating(t.dtype)) fail(fmt::format("{} must be floating point, got {}", what, dtype_name(t.dtype)));
}

std::vector<int64_t> normalized_dims(const Node& n, int64_t rank, const char* attr_name) {
  std::vector<int64_t> dims;
  auto a = attr_opt(n, attr_name);
  if (!a) {
    for (int64_t i = 0; i < rank; ++i) dims.push_back(i);
    return dims;
  }
  std::set<int64_t> seen;
  for (auto d : a->as_ints()) {
    int64_t nd = normalize_dim(d, rank);
    if (!seen.insert(nd).second) fail(fmt::format("dim {} appears twice in {}", d, attr_name));
    dims.push_back(nd);
  }
  return dims;
}

// ---- inference functions, one per op class ----

TensorType infer_unary(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  static const std::set<std::string, std::less<>> keeps_dtype{"neg", "abs", "relu"};
  DType dt = x.dtype;
  if (!keeps_dtype.count(n.op) && !is_floating(dt)) dt = DType::f32;  // as torch: int -> float
  if (n.op == "gelu") {
    auto a = attr(n, "approximate").as_string();
    if (a != "none" && a != "tanh") fail(fmt::format("approximate must be \"none\" or \"tanh\", got \"{}\"", a));
  }
  return make_type(g, n, dt, x.shape);
}

// Dtype and shape of pointwise operands that may be scalar literals.
std::pair<DType, Shape> promote_operands(const Graph& g, const Node& n, size_t first, size_t count) {
  std::optional<DType> tensor_dt;
  std::optional<ScalarKind> best_scalar;
  Shape shape;
  for (size_t i = first; i < first + count; ++i) {
    const auto& o = n.operands[i];
    if (o.is_value()) {
      const auto& t = g.node(o.value).type;
      tensor_dt = tensor_dt ? promote_types(*tensor_dt, t.dtype) : t.dtype;
      auto b = broadcast_shapes(shape, t.shape);
      if (!b) fail(fmt::format("shapes {} and {} do not broadcast", shape_str(shape), shape_str(t.shape)));
      shape = *b;
    } else {
      auto k = scalar_kind(o.literal);
      if (!best_scalar || k > *best_scalar) best_scalar = k;
    }
  }
  if (!tensor_dt) fail("at least one operand must be a tensor value");
  DType dt = best_scalar ? promote_with_scalar(*tensor_dt, *best_scalar) : *tensor_dt;
  return {dt, shape};
}

TensorType infer_binary(const Graph& g, const Node& n) {
  auto [dt, shape] = promote_operands(g, n, 0, 2);
  static const std::set<std::string, std::less<>> comparisons{"eq", "ne", "lt", "le", "gt", "ge"};
  if (comparisons.count(n.op)) dt = DType::boolean;
  else if (n.op == "div" && !is_floating(dt)) dt = DType::f32;  // true division
  return make_type(g, n, dt, shape);
}

TensorType infer_where(const Graph& g, const Node& n) {
  const auto& c = operand_type(g, n, 0);
  if (c.dtype != DType::boolean) fail(fmt::format("condition must be bool, got {}", dtype_name(c.dtype)));
  auto [dt, shape] = promote_operands(g, n, 1, 2);
  auto b = broadcast_shapes(c.shape, shape);
  if (!b) fail(fmt::format("condition shape {} does not broadcast with {}", shape_str(c.shape), shape_str(shape)));
  return make_type(g, n, dt, *b);
}

TensorType infer_to(const Graph& g, const Node& n) {
  return make_type(g, n, attr(n, "dtype").as_dtype(), operand_type(g, n, 0).shape);
}

TensorType infer_same(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  return make_type(g, n, x.dtype, x.shape);
}

TensorType infer_reduction(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  bool keepdim = attr_bool(n, "keepdim");
  std::vector<int64_t> dims;
  if (n.op == "argmax") {
    if (auto d = attr_opt(n, "dim")) dims.push_back(normalize_dim(d->as_int(), x.rank()));
    else for (int64_t i = 0; i < x.rank(); ++i) dims.push_back(i);
    if (x.numel() == 0) fail("argmax of an empty tensor");
  } else {
    dims = normalized_dims(n, x.rank(), "dims");
  }
  Shape out;
  for (int64_t i = 0; i < x.rank(); ++i) {
    bool reduced = std::find(dims.begin(), dims.end(), i) != dims.end();
    if (!reduced) out.push_back(x.shape[static_cast<size_t>(i)]);
    else if (keepdim) out.push_back(1);
  }
  if (n.op == "argmax" && !attr_opt(n, "dim") && keepdim) out.assign(static_cast<size_t>(x.rank()), 1);
  DType dt = x.dtype;
  if (n.op == "argmax") dt = DType::i64;
  else if (n.op == "sum" && !is_floating(dt)) dt = DType::i64;
  else if (n.op == "mean" || n.op == "var") require_float(x, "input");
  if ((n.op == "amax" || n.op == "amin") && x.numel() == 0) fail(fmt::format("{} of an empty tensor", n.op));
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
  if (ns.empty() || ns.size() > x.shape.size() ||
      !std::equal(ns.begin(), ns.end(), x.shape.end() - static_cast<long>(ns.size())))
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

TensorType infer_linear(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  const auto& w = operand_type(g, n, 1);
  require_float(x, "input");
  if (x.rank() < 1) fail("input must have rank >= 1");
  if (w.rank() != 2) fail(fmt::format("weight must be 2-D [out, in], got {}", shape_str(w.shape)));
  if (w.shape[1] != x.shape.back())
    fail(fmt::format("weight shape {} does not match input feature size {}", shape_str(w.shape), x.shape.back()));
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
      known *= shape[i];
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
  auto dims = attr_ints(n, "dims");
  if (static_cast<int64_t>(dims.size()) != x.rank()) fail(fmt::format("dims {} do not match rank {}", shape_str(dims), x.rank()));
  Shape out;
  std::set<int64_t> seen;
  for (auto d : dims) {
    int64_t nd = normalize_dim(d, x.rank());
    if (!seen.insert(nd).second) fail(fmt::format("dims {} is not a permutation", shape_str(dims)));
    out.push_back(x.shape[static_cast<size_t>(nd)]);
  }
  return make_type(g, n, x.dtype, out);
}

TensorType infer_transpose(const Graph& g, const Node& n) {
  const auto& x = operand_type(g, n, 0);
  auto a = normalize_dim(attr_int(n, "dim0"), x.rank()), b = normalize_dim(attr_int(n, "dim1"), x.rank());
  Shape out = x.shape;
  std::swap(out[static_cast<size_t>(a)], out[static_cast<size_t>(b)]);
  return make_type(g, n, x.dtype, out);
}

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
  int64_t dim = normalize_dim(attr_int(n, "dim"), x.rank());
  int64_t size = x.shape[static_cast<size_t>(dim)];
  int64_t step = attr_int(n, "step");
  if (step <= 0) fail(fmt::format("step must be positive, got {}", step));
  auto clamp = [&](int64_t v) {
    if (v < 0) v += size;
    return std::clamp<int64_t>(v, 0, size);
  };
  int64_t start = clamp(attr_int(n, "start")), end = clamp(attr_int(n, "end"));
  Shape out = x.shape;
  out[static_cast<size_t>(dim)] = end > start ? (end - start + step - 1) / step : 0;
  return make_type(g, n, x.dtype, out);
}

TensorType infer_cat(const Graph& g, const Node& n) {
  if (n.operands.empty()) fail("cat needs at least one tensor");
  const auto& first = operand_type(g, n, 0);
  int64_t dim = normalize_dim(attr_int(n, "dim"), first.rank());
  Shape out = first.shape;
  DType dt = first.dtype;
  for (size_t i = 1; i < n.operands.size(); ++i) {
    const auto& t = operand_type(g, n, i);
    if (t.rank() != first.rank()) fail(fmt::format("operand {} has rank {}, operand 1 has rank {}", i + 1, t.rank(), first.rank()));
    for (int64_t d = 0; d < t.rank(); ++d)
      if (d != dim && t.shape[static_cast<size_t>(d)] != first.shape[static_cast<size_t>(d)])
        fail(fmt::format("operand {} has shape {}, incompatible with {} outside dim {}", i + 1, shape_str(t.shape), shape_str(first.shape), dim));
    out[static_cast<size_t>(dim)] += t.shape[static_cast<size_t>(dim)];
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

TensorType infer_full(const Graph& g, const Node& n) {
  auto shape = attr_ints(n, "shape");
  for (auto d : shape)
    if (d < 0) fail(fmt::format("negative dimension in shape {}", shape_str(shape)));
  scalar_kind(attr(n, "value"));
  return make_type(g, n, attr(n, "dtype").as_dtype(), shape);
}

// ---- the table ----

using P = ParamSpec;
using A = AttrSpec;
constexpr auto T = ParamKind::tensor;
constexpr auto TS = ParamKind::tensor_or_scalar;
constexpr auto OPT = ParamKind::optional_tensor;
constexpr auto VAR = ParamKind::variadic_tensor;

std::vector<OpSchema> build_table() {
  std::vector<OpSchema> t;
  auto unary = [&](const char* name, bool composite = false, std::vector<AttrSpec> attrs = {}) {
    t.push_back({name, OpClass::unary, {{"x", T}}, std::move(attrs), composite, true, infer_unary});
  };
  for (auto n : {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tanh", "relu", "erf"}) unary(n);
  unary("sigmoid", true);
  unary("silu", true);
  unary("gelu", true, {A{"approximate", AttrKind::string, AttrValue("none")}});
  for (auto n : {"add", "sub", "mul", "div", "pow", "maximum", "minimum"})
    t.push_back({n, OpClass::binary, {{"a", TS}, {"b", TS}}, {}, false, true, infer_binary});
  for (auto n : {"eq", "ne", "lt", "le", "gt", "ge"})
    t.push_back({n, OpClass::binary, {{"a", TS}, {"b", TS}}, {}, false, false, infer_binary});
  t.push_back({"where", OpClass::pointwise, {{"cond", T}, {"a", TS}, {"b", TS}}, {}, false, true, infer_where});
  t.push_back({"to", OpClass::pointwise, {{"x", T}}, {A{"dtype", AttrKind::dtype, std::nullopt}}, false, true, infer_to});
  t.push_back({"clone", OpClass::pointwise, {{"x", T}}, {}, false, true, infer_same});
  auto dims = A{"dims", AttrKind::ints, std::nullopt, true};
  auto keepdim = A{"keepdim", AttrKind::bool_, AttrValue(false)};
  for (auto n : {"sum", "amax", "amin"})
    t.push_back({n, OpClass::reduction, {{"x", T}}, {dims, keepdim}, false, true, infer_reduction});
  t.push_back({"mean", OpClass::reduction, {{"x", T}}, {dims, keepdim}, true, true, infer_reduction});
  t.push_back({"var", OpClass::reduction, {{"x", T}}, {dims, A{"correction", AttrKind::int_, AttrValue(int64_t{1})}, keepdim}, true, true, infer_reduction});
  t.push_back({"argmax", OpClass::reduction, {{"x", T}}, {A{"dim", AttrKind::int_, std::nullopt, true}, keepdim}, false, false, infer_reduction});
  for (auto n : {"softmax", "log_softmax"})
    t.push_back({n, OpClass::normalization, {{"x", T}}, {A{"dim", AttrKind::int_, std::nullopt}}, true, true, infer_softmax});
  t.push_back({"layer_norm", OpClass::normalization, {{"x", T}, {"weight", OPT}, {"bias", OPT}},
               {A{"normalized_shape", AttrKind::ints, std::nullopt}, A{"eps", AttrKind::float_, AttrValue(1e-5)}}, true, true, infer_layer_norm});
  t.push_back({"matmul", OpClass::linalg, {{"a", T}, {"b", T}}, {}, false, true, infer_matmul});
  t.push_back({"linear", OpClass::linalg, {{"x", T}, {"weight", T}, {"bias", OPT}}, {}, true, true, infer_linear});
  t.push_back({"reshape", OpClass::shape, {{"x", T}}, {A{"shape", AttrKind::ints, std::nullopt}}, false, true, infer_reshape});
  t.push_back({"permute", OpClass::shape, {{"x", T}}, {A{"dims", AttrKind::ints, std::nullopt}}, false, true, infer_permute});
  t.push_back({"transpose", OpClass::shape, {{"x", T}}, {A{"dim0", AttrKind::int_, std::nullopt}, A{"dim1", AttrKind::int_, std::nullopt}}, false, true, infer_transpose});
  t.push_back({"expand", OpClass::shape, {{"x", T}}, {A{"shape", AttrKind::ints, std::nullopt}}, false, true, infer_expand});
  t.push_back({"slice", OpClass::shape, {{"x", T}},
               {A{"dim", AttrKind::int_, std::nullopt}, A{"start", AttrKind::int_, std::nullopt}, A{"end", AttrKind::int_, std::nullopt},
                A{"step", AttrKind::int_, AttrValue(int64_t{1})}}, false, true, infer_slice});
  t.push_back({"cat", OpClass::shape, {{"tensors", VAR}}, {A{"dim", AttrKind::int_, AttrValue(int64_t{0})}}, false, true, infer_cat});
  t.push_back({"squeeze", OpClass::shape, {{"x", T}}, {A{"dim", AttrKind::int_, std::nullopt}}, false, true, infer_squeeze});
  t.push_back({"unsqueeze", OpClass::shape, {{"x", T}}, {A{"dim", AttrKind::int_, std::nullopt}}, false, true, infer_unsqueeze});
  t.push_back({"contiguous", OpClass::shape, {{"x", T}}, {}, false, true, infer_same});
  t.push_back({"embedding", OpClass::indexing, {{"weight", T}, {"indices", T}}, {}, false, true, infer_embedding});
  t.push_back({"gather", OpClass::indexing, {{"x", T}, {"index", T}}, {A{"dim", AttrKind::int_, std::nullopt}}, false, true, infer_gather});
  t.push_back({"full", OpClass::creation, {},
               {A{"shape", AttrKind::ints, std::nullopt}, A{"value", AttrKind::scalar, std::nullopt}, A{"dtype", AttrKind::dtype, AttrValue(DType::f32)}},
               false, false, infer_full});
  return t;
}

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

const OpSchema* find_op(std::string_view name) {
  for (auto& s : op_table())
    if (s.name == name) return &s;
  return nullptr;
}

const OpSchema& op_schema(std::string_view name) {
  if (auto* s = find_op(name)) return *s;
  throw UserError(fmt::format("unknown op '{}'", name));
}

bool is_pointwise(std::string_view op) {
  auto* s = find_op(op);
  return s && (s->cls == OpClass::unary || s->cls == OpClass::binary || s->cls == OpClass::pointwise);
}

std::optional<AttrValue> attr_opt(const Node& n, std::string_view name) {
  if (auto it = n.attrs.find(name); it != n.attrs.end()) return it->second;
  if (auto* s = find_op(n.op))
    if (auto* a = find_attr_spec(*s, name); a && a->default_value) return *a->default_value;
  return std::nullopt;
}

const AttrValue& attr(const Node& n, std::string_view name) {
  if (auto it = n.attrs.find(name); it != n.attrs.end()) return it->second;
  if (auto* s = find_op(n.op))
    if (auto* a = find_attr_spec(*s, name); a && a->default_value) return *a->default_value;
  throw VerifyError(fmt::format("node %{} = {}: missing required attribute '{}'", n.name, n.op, name));
}

int64_t attr_int(const Node& n, std::string_view name) { return attr(n, name).as_int(); }
double attr_float(const Node& n, std::string_view name) { return attr(n, name).as_float(); }
bool attr_bool(const Node& n, std::string_view name) { return attr(n, name).as_bool(); }
std::vector<int64_t> attr_ints(const Node& n, std::string_view name) { return attr(n, name).as_ints(); }

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

TensorType infer_node_type(const Graph& g, int id) {
  const Node& n = g.node(id);
  if (n.is_input()) return n.type;
  try {
    const OpSchema& s = op_schema(n.op);
    return s.infer(g, n);
  } catch (const UserError& e) {
    std::string msg = e.what();
    std::string prefix = fmt::format("node %{} = {}", n.name, n.op);
    if (msg.rfind(prefix, 0) == 0) msg = msg.substr(prefix.size() + 2);
    throw VerifyError(fmt::format("graph {}, node %{} = {}: {}", g.name, n.name, n.op, msg));
  }
}

}  // namespace reprokit
