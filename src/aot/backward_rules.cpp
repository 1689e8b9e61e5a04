// Backward rules, one per differentiable op, with PyTorch's formulas (ties of maximum/amax split
// evenly, abs'(0) = 0, relu'(0) = 0, pow's masked zero cases). Rules for composite ops let
// undecomposed graphs be differentiated directly; their decomposed forms use the primitive rules.
#include "backward_rules.h"

#include <fmt/format.h>

#include <cmath>

#include "reprokit/ir/op_registry.h"

namespace reprokit::aot_detail {

using E = GradEmitter;

int GradEmitter::op(const std::string& op, std::vector<Operand> operands, Attrs attrs) {
  return g_.add_node(g_.fresh_name(base_ + "." + op), op, std::move(operands), std::move(attrs));
}

int GradEmitter::reshape(int x, const Shape& shape) {
  if (type(x).shape == shape) return x;
  return op("reshape", {v(x)}, {{"shape", AttrValue::ints(shape)}});
}

int GradEmitter::sum_to(int x, const Shape& shape) {
  const Shape s = type(x).shape;
  if (s == shape) return x;
  size_t lead = s.size() - shape.size();
  std::vector<int64_t> dims;
  for (size_t i = 0; i < s.size(); ++i)
    if (i < lead || (shape[i - lead] == 1 && s[i] != 1)) dims.push_back(static_cast<int64_t>(i));
  int r = x;
  if (!dims.empty()) r = op("sum", {v(x)}, {{"dims", AttrValue::ints(dims)}, {"keepdim", AttrValue(true)}});
  return reshape(r, shape);
}

int GradEmitter::cast(int x, DType dtype) {
  if (type(x).dtype == dtype) return x;
  return op("to", {v(x)}, {{"dtype", AttrValue(dtype)}});
}

int GradEmitter::zeros(const Shape& shape, DType dtype, int like) {
  if (type(like).device == Device::cpu)
    return op("full", {}, {{"shape", AttrValue::ints(shape)}, {"value", AttrValue(0.0)}, {"dtype", AttrValue(dtype)}});
  int empty = op("slice", {v(reshape(like, {-1}))}, {{"dim", AttrValue(int64_t{0})}, {"start", AttrValue(int64_t{0})}, {"end", AttrValue(int64_t{0})}});
  int zero = cast(op("sum", {v(empty)}), dtype);
  if (shape.empty()) return zero;
  int ones = reshape(zero, Shape(shape.size(), 1));
  return op("expand", {v(ones)}, {{"shape", AttrValue::ints(shape)}});
}

int GradEmitter::iota(int64_t n, int like) {
  int r = zeros({1}, DType::i64, like);  // on cpu a constant, which the partitioner recomputes
  for (int64_t len = 1; len < n; len *= 2) {
    int shifted = op("add", {v(r), Operand::scalar(AttrValue(len))});
    r = op("cat", {v(r), v(shifted)}, {{"dim", AttrValue(int64_t{0})}});
  }
  if (type(r).shape[0] != n)
    r = op("slice", {v(r)}, {{"dim", AttrValue(int64_t{0})}, {"start", AttrValue(int64_t{0})}, {"end", AttrValue(n)}});
  return r;
}

namespace {

Attrs dims_attr(const std::vector<int64_t>& dims, bool keepdim) {
  return {{"dims", AttrValue::ints(dims)}, {"keepdim", AttrValue(keepdim)}};
}

// Normalized reduction dims of a node with an optional `dims` attribute (absent: all dims).
std::vector<int64_t> reduced_dims(const Node& n, int64_t rank) {
  std::vector<int64_t> dims;
  if (auto d = attr_opt(n, "dims")) for (auto x : d->as_ints()) dims.push_back(normalize_dim(x, rank));
  else for (int64_t i = 0; i < rank; ++i) dims.push_back(i);
  return dims;
}

// The shape of a reduction's result with keepdim=true, so g broadcasts against the input again.
Shape keep_shape(const Shape& in, const std::vector<int64_t>& dims) {
  Shape s = in;
  for (auto d : dims) s[static_cast<size_t>(d)] = 1;
  return s;
}

int64_t count_of(const Shape& in, const std::vector<int64_t>& dims) {
  int64_t c = 1;
  for (auto d : dims) c *= in[static_cast<size_t>(d)];
  return c;
}

using Grads = std::vector<int>;
using Ops = std::vector<Operand>;
using Need = std::vector<bool>;

// A rule for a unary op: dL/dx from (x, y, g).
BackwardRule unary(std::function<int(E&, Operand x, int y, int g)> f) {
  return [f](E& e, const Node&, const Ops& a, int y, int g, const Need&) { return Grads{f(e, a[0], y, g)}; };
}

// max/min: the operand that wins gets g; on a tie both get g/2 (as PyTorch's maximum backward).
BackwardRule extremum(const char* wins) {
  return [wins](E& e, const Node&, const Ops& a, int, int g, const Need& need) {
    int half = e.op("mul", {E::v(g), E::s(0.5)});
    int tie = e.op("eq", {a[0], a[1]});
    Grads r{-1, -1};
    for (int i = 0; i < 2; ++i) {
      if (!need[static_cast<size_t>(i)]) continue;
      int win = e.op(wins, {a[static_cast<size_t>(i)], a[static_cast<size_t>(1 - i)]});
      r[static_cast<size_t>(i)] = e.op("where", {E::v(win), E::v(g), E::v(e.op("where", {E::v(tie), E::v(half), E::s(0.0)}))});
    }
    return r;
  };
}

// amax/amin: g is split evenly among the elements equal to the result (PyTorch's amax backward).
Grads extremum_reduction(E& e, const Node& n, const Ops& a, int y, int g) {
  const TensorType x = e.type(a[0]);
  auto dims = reduced_dims(n, x.rank());
  Shape ks = keep_shape(x.shape, dims);
  int mask = e.op("to", {E::v(e.op("eq", {a[0], E::v(e.reshape(y, ks))}))}, {{"dtype", AttrValue(x.dtype)}});
  int count = e.op("sum", {E::v(mask)}, dims_attr(dims, true));
  int share = e.op("div", {E::v(e.reshape(g, ks)), E::v(count)});
  return {e.op("mul", {E::v(mask), E::v(share)})};
}

// Undoes slice: g is spread to every step-th position from start and zeros fill the rest.
int unslice(E& e, const Node& n, const Shape& in, int g) {
  const TensorType gt = e.type(g);
  int64_t dim = normalize_dim(attr_int(n, "dim"), static_cast<int64_t>(in.size()));
  int64_t size = in[static_cast<size_t>(dim)], step = attr_int(n, "step"), count = gt.shape[static_cast<size_t>(dim)];
  int64_t start = attr_int(n, "start");
  if (start < 0) start += size;
  start = std::clamp<int64_t>(start, 0, size);
  if (count == 0) return e.zeros(in, gt.dtype, g);
  auto with_dim = [&](Shape s, size_t d, int64_t len) { s[d] = len; return s; };
  int r = g;
  int64_t len = count;
  if (step > 1) {
    // Interleave step-1 zeros after each element: [.., count, 1, ..] ++ zeros [.., count, step-1, ..].
    int u = e.op("unsqueeze", {E::v(g)}, {{"dim", AttrValue(dim + 1)}});
    Shape zs = e.type(u).shape;
    zs[static_cast<size_t>(dim + 1)] = step - 1;
    int c = e.op("cat", {E::v(u), E::v(e.zeros(zs, gt.dtype, g))}, {{"dim", AttrValue(dim + 1)}});
    len = count * step;
    r = e.reshape(c, with_dim(gt.shape, static_cast<size_t>(dim), len));
    if (len > size - start) {
      len = size - start;
      r = e.op("slice", {E::v(r)}, {{"dim", AttrValue(dim)}, {"start", AttrValue(int64_t{0})}, {"end", AttrValue(len)}});
    }
  }
  std::vector<Operand> parts;
  if (start > 0) parts.push_back(E::v(e.zeros(with_dim(gt.shape, static_cast<size_t>(dim), start), gt.dtype, g)));
  parts.push_back(E::v(r));
  if (size - start - len > 0) parts.push_back(E::v(e.zeros(with_dim(gt.shape, static_cast<size_t>(dim), size - start - len), gt.dtype, g)));
  if (parts.size() == 1) return r;
  return e.op("cat", parts, {{"dim", AttrValue(dim)}});
}

// gather backward without scatter: a one-hot mask [.., J, M, ..] (index == iota) times g, summed
// over the gathered dim, then zero-padded where the index is smaller than the input.
int ungather(E& e, const Node& n, const Ops& a, int g) {
  const TensorType x = e.type(a[0]), idx = e.type(a[1]);
  int64_t dim = normalize_dim(attr_int(n, "dim"), x.rank());
  int64_t m = x.shape[static_cast<size_t>(dim)];
  // Negative indices count from the end in gather: normalize them first.
  int neg = e.op("lt", {a[1], Operand::scalar(AttrValue(int64_t{0}))});
  int index = e.op("where", {E::v(neg), E::v(e.op("add", {a[1], Operand::scalar(AttrValue(m))})), a[1]});
  Shape iota_shape(static_cast<size_t>(x.rank() + 1), 1);
  iota_shape[static_cast<size_t>(dim + 1)] = m;
  int ids = e.reshape(e.iota(m, g), iota_shape);
  int hot = e.op("eq", {E::v(e.op("unsqueeze", {E::v(index)}, {{"dim", AttrValue(dim + 1)}})), E::v(ids)});
  int hotf = e.op("to", {E::v(hot)}, {{"dtype", AttrValue(e.type(g).dtype)}});
  int prod = e.op("mul", {E::v(hotf), E::v(e.op("unsqueeze", {E::v(g)}, {{"dim", AttrValue(dim + 1)}}))});
  int r = e.op("sum", {E::v(prod)}, dims_attr({dim}, false));
  for (int64_t d = 0; d < x.rank(); ++d) {
    int64_t have = idx.shape[static_cast<size_t>(d)], want = x.shape[static_cast<size_t>(d)];
    if (d == dim || have == want) continue;
    Shape zs = e.type(r).shape;
    zs[static_cast<size_t>(d)] = want - have;
    r = e.op("cat", {E::v(r), E::v(e.zeros(zs, e.type(g).dtype, g))}, {{"dim", AttrValue(d)}});
  }
  return r;
}

// embedding backward: one_hot(indices)^T @ g, with the one-hot built from eq against an iota.
int unembed(E& e, const Ops& a, int g) {
  const TensorType w = e.type(a[0]);
  int64_t rows = w.shape[0], cols = w.shape[1];
  int hot = e.op("eq", {E::v(e.op("unsqueeze", {a[1]}, {{"dim", AttrValue(int64_t{-1})}})), E::v(e.iota(rows, g))});
  int hot2 = e.reshape(e.op("to", {E::v(hot)}, {{"dtype", AttrValue(e.type(g).dtype)}}), {-1, rows});
  int g2 = e.reshape(g, {e.type(hot2).shape[0], cols});
  int ht = e.op("transpose", {E::v(hot2)}, {{"dim0", AttrValue(int64_t{0})}, {"dim1", AttrValue(int64_t{1})}});
  return e.op("matmul", {E::v(ht), E::v(g2)});
}

int transpose_last(E& e, const Operand& x) {
  return e.op("transpose", {x}, {{"dim0", AttrValue(int64_t{-1})}, {"dim1", AttrValue(int64_t{-2})}});
}

Grads layer_norm_grads(E& e, const Node& n, const Ops& a, int g, const Need& need) {
  const TensorType x = e.type(a[0]);
  auto ns = attr_ints(n, "normalized_shape");
  std::vector<int64_t> dims, lead;
  int64_t count = 1;
  for (size_t i = 0; i < ns.size(); ++i) {
    dims.push_back(x.rank() - static_cast<int64_t>(ns.size()) + static_cast<int64_t>(i));
    count *= ns[i];
  }
  for (int64_t i = 0; i < x.rank() - static_cast<int64_t>(ns.size()); ++i) lead.push_back(i);
  auto mean = [&](int t) { return e.op("div", {E::v(e.op("sum", {E::v(t)}, dims_attr(dims, true))), E::s(static_cast<double>(count))}); };
  // Recompute the statistics: the partitioner decides whether they are saved or recomputed.
  int diff = e.op("sub", {a[0], E::v(e.op("div", {E::v(e.op("sum", {a[0]}, dims_attr(dims, true))), E::s(static_cast<double>(count))}))});
  int var = mean(e.op("mul", {E::v(diff), E::v(diff)}));
  int rstd = e.op("rsqrt", {E::v(e.op("add", {E::v(var), E::s(attr_float(n, "eps"))}))});
  int xhat = e.op("mul", {E::v(diff), E::v(rstd)});
  Grads r(a.size(), -1);
  int gxhat = a.size() > 1 ? e.op("mul", {E::v(g), a[1]}) : g;
  if (need[0]) {
    int m1 = mean(gxhat);
    int m2 = mean(e.op("mul", {E::v(gxhat), E::v(xhat)}));
    int inner = e.op("sub", {E::v(e.op("sub", {E::v(gxhat), E::v(m1)})), E::v(e.op("mul", {E::v(xhat), E::v(m2)}))});
    r[0] = e.op("mul", {E::v(rstd), E::v(inner)});
  }
  auto sum_lead = [&](int t) { return lead.empty() ? t : e.op("sum", {E::v(t)}, dims_attr(lead, false)); };
  if (a.size() > 1 && need[1]) r[1] = sum_lead(e.op("mul", {E::v(g), E::v(xhat)}));
  if (a.size() > 2 && need[2]) r[2] = sum_lead(g);
  return r;
}

Grads pow_grads(E& e, const Ops& a, int y, int g, const Need& need) {
  Grads r{-1, -1};
  if (need[0]) {
    // g * b * a^(b-1), zero where b == 0 (so 0^0 does not give 0 * inf).
    Operand bm1 = a[1].is_value() ? E::v(e.op("sub", {a[1], E::s(1.0)})) : E::s(a[1].literal.as_float() - 1.0);
    int d = e.op("mul", {E::v(e.op("mul", {E::v(g), a[1]})), E::v(e.op("pow", {a[0], bm1}))});
    if (a[1].is_value()) d = e.op("where", {E::v(e.op("eq", {a[1], E::s(0.0)})), E::s(0.0), E::v(d)});
    else if (a[1].literal.as_float() == 0.0) d = e.op("mul", {E::v(g), E::s(0.0)});
    r[0] = d;
  }
  if (need[1]) {
    // g * a^b * log(a), zero where a == 0 and b >= 0 (PyTorch's mask for the 0 * -inf case).
    Operand log_a = a[0].is_value() ? E::v(e.op("log", {a[0]})) : E::s(std::log(a[0].literal.as_float()));
    int d = e.op("mul", {E::v(e.op("mul", {E::v(g), E::v(y)})), log_a});
    int masked = e.op("where", {E::v(e.op("ge", {a[1], E::s(0.0)})), E::s(0.0), E::v(d)});
    if (a[0].is_value()) d = e.op("where", {E::v(e.op("eq", {a[0], E::s(0.0)})), E::v(masked), E::v(d)});
    else if (a[0].literal.as_float() == 0.0) d = masked;
    r[1] = d;
  }
  return r;
}

}  // namespace

const std::map<std::string, BackwardRule, std::less<>>& backward_rules() {
  static const std::map<std::string, BackwardRule, std::less<>> rules = {
      {"neg", unary([](E& e, Operand, int, int g) { return e.op("neg", {E::v(g)}); })},
      {"abs", unary([](E& e, Operand x, int, int g) {
         int pos = e.op("where", {E::v(e.op("gt", {x, E::s(0.0)})), E::v(g), E::s(0.0)});
         int ng = e.op("where", {E::v(e.op("lt", {x, E::s(0.0)})), E::v(e.op("neg", {E::v(g)})), E::s(0.0)});
         return e.op("add", {E::v(pos), E::v(ng)});
       })},
      {"exp", unary([](E& e, Operand, int y, int g) { return e.op("mul", {E::v(g), E::v(y)}); })},
      {"log", unary([](E& e, Operand x, int, int g) { return e.op("div", {E::v(g), x}); })},
      {"sqrt", unary([](E& e, Operand, int y, int g) { return e.op("div", {E::v(g), E::v(e.op("mul", {E::v(y), E::s(2.0)}))}); })},
      {"rsqrt", unary([](E& e, Operand, int y, int g) {
         int y3 = e.op("mul", {E::v(y), E::v(e.op("mul", {E::v(y), E::v(y)}))});
         return e.op("mul", {E::v(g), E::v(e.op("mul", {E::v(y3), E::s(-0.5)}))});
       })},
      {"reciprocal", unary([](E& e, Operand, int y, int g) {
         return e.op("mul", {E::v(g), E::v(e.op("neg", {E::v(e.op("mul", {E::v(y), E::v(y)}))}))});
       })},
      {"sin", unary([](E& e, Operand x, int, int g) { return e.op("mul", {E::v(g), E::v(e.op("cos", {x}))}); })},
      {"cos", unary([](E& e, Operand x, int, int g) { return e.op("mul", {E::v(g), E::v(e.op("neg", {E::v(e.op("sin", {x}))}))}); })},
      {"tanh", unary([](E& e, Operand, int y, int g) {
         return e.op("mul", {E::v(g), E::v(e.op("sub", {E::s(1.0), E::v(e.op("mul", {E::v(y), E::v(y)}))}))});
       })},
      {"sigmoid", unary([](E& e, Operand, int y, int g) {
         return e.op("mul", {E::v(e.op("mul", {E::v(g), E::v(y)})), E::v(e.op("sub", {E::s(1.0), E::v(y)}))});
       })},
      {"relu", unary([](E& e, Operand, int y, int g) { return e.op("where", {E::v(e.op("gt", {E::v(y), E::s(0.0)})), E::v(g), E::s(0.0)}); })},
      {"erf", unary([](E& e, Operand x, int, int g) {
         int ex = e.op("exp", {E::v(e.op("neg", {E::v(e.op("mul", {x, x}))}))});
         return e.op("mul", {E::v(g), E::v(e.op("mul", {E::v(ex), E::s(M_2_SQRTPI)}))});
       })},
      {"silu", unary([](E& e, Operand x, int, int g) {
         // s (1 + x (1 - s)) with s = sigmoid(x)
         int s = e.op("sigmoid", {x});
         int t = e.op("add", {E::v(e.op("mul", {x, E::v(e.op("sub", {E::s(1.0), E::v(s)}))})), E::s(1.0)});
         return e.op("mul", {E::v(g), E::v(e.op("mul", {E::v(s), E::v(t)}))});
       })},
      {"gelu", [](E& e, const Node& n, const Ops& a, int, int g, const Need&) {
         Operand x = a[0];
         int d;
         if (attr(n, "approximate").as_string() == "tanh") {
           const double beta = std::sqrt(2.0 / M_PI), kappa = 0.044715;
           int x2 = e.op("mul", {x, x});
           int inner = e.op("mul", {E::v(e.op("add", {x, E::v(e.op("mul", {E::v(e.op("mul", {E::v(x2), x})), E::s(kappa)}))})), E::s(beta)});
           int th = e.op("tanh", {E::v(inner)});
           int left_d = e.op("mul", {E::v(e.op("add", {E::v(th), E::s(1.0)})), E::s(0.5)});
           int sech2 = e.op("sub", {E::s(1.0), E::v(e.op("mul", {E::v(th), E::v(th)}))});
           int dinner = e.op("mul", {E::v(e.op("add", {E::v(e.op("mul", {E::v(x2), E::s(3.0 * kappa)})), E::s(1.0)})), E::s(beta)});
           int right_d = e.op("mul", {E::v(e.op("mul", {E::v(e.op("mul", {x, E::s(0.5)})), E::v(sech2)})), E::v(dinner)});
           d = e.op("add", {E::v(left_d), E::v(right_d)});
         } else {
           // Phi(x) + x phi(x)
           int cdf = e.op("mul", {E::v(e.op("add", {E::v(e.op("erf", {E::v(e.op("mul", {x, E::s(M_SQRT1_2)}))})), E::s(1.0)})), E::s(0.5)});
           int pdf = e.op("mul", {E::v(e.op("exp", {E::v(e.op("mul", {E::v(e.op("mul", {x, x})), E::s(-0.5)}))})), E::s(0.5 * M_2_SQRTPI * M_SQRT1_2)});
           d = e.op("add", {E::v(cdf), E::v(e.op("mul", {x, E::v(pdf)}))});
         }
         return Grads{e.op("mul", {E::v(g), E::v(d)})};
       }},
      {"add", [](E&, const Node&, const Ops&, int, int g, const Need&) { return Grads{g, g}; }},
      {"sub", [](E& e, const Node&, const Ops&, int, int g, const Need& need) {
         return Grads{g, need[1] ? e.op("neg", {E::v(g)}) : -1};
       }},
      {"mul", [](E& e, const Node&, const Ops& a, int, int g, const Need& need) {
         return Grads{need[0] ? e.op("mul", {E::v(g), a[1]}) : -1, need[1] ? e.op("mul", {E::v(g), a[0]}) : -1};
       }},
      {"div", [](E& e, const Node&, const Ops& a, int, int g, const Need& need) {
         Grads r{-1, -1};
         if (need[0]) r[0] = e.op("div", {E::v(g), a[1]});
         if (need[1]) r[1] = e.op("neg", {E::v(e.op("div", {E::v(e.op("mul", {E::v(g), a[0]})), E::v(e.op("mul", {a[1], a[1]}))}))});
         return r;
       }},
      {"pow", [](E& e, const Node&, const Ops& a, int y, int g, const Need& need) { return pow_grads(e, a, y, g, need); }},
      {"maximum", extremum("gt")},
      {"minimum", extremum("lt")},
      {"where", [](E& e, const Node&, const Ops& a, int, int g, const Need& need) {
         Grads r{-1, -1, -1};
         if (need[1]) r[1] = e.op("where", {a[0], E::v(g), E::s(0.0)});
         if (need[2]) r[2] = e.op("where", {a[0], E::s(0.0), E::v(g)});
         return r;
       }},
      // The driver casts every gradient to its operand's dtype, which is all `to` needs.
      {"to", [](E&, const Node&, const Ops&, int, int g, const Need&) { return Grads{g}; }},
      {"clone", [](E&, const Node&, const Ops&, int, int g, const Need&) { return Grads{g}; }},
      {"contiguous", [](E&, const Node&, const Ops&, int, int g, const Need&) { return Grads{g}; }},
      {"sum", [](E& e, const Node& n, const Ops& a, int, int g, const Need&) {
         const TensorType x = e.type(a[0]);
         int k = e.reshape(g, keep_shape(x.shape, reduced_dims(n, x.rank())));
         return Grads{e.op("expand", {E::v(k)}, {{"shape", AttrValue::ints(x.shape)}})};
       }},
      {"mean", [](E& e, const Node& n, const Ops& a, int, int g, const Need&) {
         const TensorType x = e.type(a[0]);
         auto dims = reduced_dims(n, x.rank());
         int k = e.op("div", {E::v(e.reshape(g, keep_shape(x.shape, dims))), E::s(static_cast<double>(count_of(x.shape, dims)))});
         return Grads{e.op("expand", {E::v(k)}, {{"shape", AttrValue::ints(x.shape)}})};
       }},
      {"var", [](E& e, const Node& n, const Ops& a, int, int g, const Need&) {
         // 2 (x - mean) / (N - correction) * g
         const TensorType x = e.type(a[0]);
         auto dims = reduced_dims(n, x.rank());
         double count = static_cast<double>(count_of(x.shape, dims));
         int mean = e.op("div", {E::v(e.op("sum", {a[0]}, dims_attr(dims, true))), E::s(count)});
         int diff = e.op("sub", {a[0], E::v(mean)});
         double scale = 2.0 / std::max(count - static_cast<double>(attr_int(n, "correction")), 0.0);
         int k = e.op("mul", {E::v(e.reshape(g, keep_shape(x.shape, dims))), E::s(scale)});
         return Grads{e.op("mul", {E::v(diff), E::v(k)})};
       }},
      {"amax", [](E& e, const Node& n, const Ops& a, int y, int g, const Need&) { return extremum_reduction(e, n, a, y, g); }},
      {"amin", [](E& e, const Node& n, const Ops& a, int y, int g, const Need&) { return extremum_reduction(e, n, a, y, g); }},
      {"softmax", [](E& e, const Node& n, const Ops&, int y, int g, const Need&) {
         Attrs d = dims_attr({attr_int(n, "dim")}, true);
         int gy = e.op("mul", {E::v(g), E::v(y)});
         return Grads{e.op("sub", {E::v(gy), E::v(e.op("mul", {E::v(y), E::v(e.op("sum", {E::v(gy)}, d))}))})};
       }},
      {"log_softmax", [](E& e, const Node& n, const Ops&, int y, int g, const Need&) {
         Attrs d = dims_attr({attr_int(n, "dim")}, true);
         int s = e.op("sum", {E::v(g)}, d);
         return Grads{e.op("sub", {E::v(g), E::v(e.op("mul", {E::v(e.op("exp", {E::v(y)})), E::v(s)}))})};
       }},
      {"layer_norm", [](E& e, const Node& n, const Ops& a, int, int g, const Need& need) { return layer_norm_grads(e, n, a, g, need); }},
      {"matmul", [](E& e, const Node&, const Ops& a, int, int g, const Need& need) {
         // Batch broadcasting is summed away by the driver's sum_to.
         Grads r{-1, -1};
         if (need[0]) r[0] = e.op("matmul", {E::v(g), E::v(transpose_last(e, a[1]))});
         if (need[1]) r[1] = e.op("matmul", {E::v(transpose_last(e, a[0])), E::v(g)});
         return r;
       }},
      {"linear", [](E& e, const Node&, const Ops& a, int, int g, const Need& need) {
         // Flatten the leading dims to one so every rank (including 1-D x) is a 2-D matmul.
         const TensorType x = e.type(a[0]), w = e.type(a[1]);
         int64_t out = w.shape[0], in = w.shape[1];
         int g2 = e.reshape(g, {-1, out});
         Grads r(a.size(), -1);
         if (need[0]) r[0] = e.reshape(e.op("matmul", {E::v(g2), a[1]}), x.shape);
         if (need[1]) {
           int gt = e.op("transpose", {E::v(g2)}, {{"dim0", AttrValue(int64_t{0})}, {"dim1", AttrValue(int64_t{1})}});
           r[1] = e.op("matmul", {E::v(gt), E::v(e.reshape(a[0].value, {-1, in}))});
         }
         if (a.size() > 2 && need[2]) r[2] = e.op("sum", {E::v(g2)}, dims_attr({0}, false));
         return r;
       }},
      {"reshape", [](E& e, const Node&, const Ops& a, int, int g, const Need&) { return Grads{e.reshape(g, e.type(a[0]).shape)}; }},
      {"squeeze", [](E& e, const Node&, const Ops& a, int, int g, const Need&) { return Grads{e.reshape(g, e.type(a[0]).shape)}; }},
      {"unsqueeze", [](E& e, const Node&, const Ops& a, int, int g, const Need&) { return Grads{e.reshape(g, e.type(a[0]).shape)}; }},
      {"permute", [](E& e, const Node& n, const Ops& a, int, int g, const Need&) {
         auto dims = attr_ints(n, "dims");
         std::vector<int64_t> inv(dims.size());
         for (size_t i = 0; i < dims.size(); ++i) inv[static_cast<size_t>(normalize_dim(dims[i], e.type(a[0]).rank()))] = static_cast<int64_t>(i);
         return Grads{e.op("permute", {E::v(g)}, {{"dims", AttrValue::ints(inv)}})};
       }},
      {"transpose", [](E& e, const Node& n, const Ops&, int, int g, const Need&) {
         return Grads{e.op("transpose", {E::v(g)}, {{"dim0", AttrValue(attr_int(n, "dim0"))}, {"dim1", AttrValue(attr_int(n, "dim1"))}})};
       }},
      {"expand", [](E& e, const Node&, const Ops& a, int, int g, const Need&) { return Grads{e.sum_to(g, e.type(a[0]).shape)}; }},
      {"slice", [](E& e, const Node& n, const Ops& a, int, int g, const Need&) { return Grads{unslice(e, n, e.type(a[0]).shape, g)}; }},
      {"cat", [](E& e, const Node& n, const Ops& a, int, int g, const Need& need) {
         int64_t dim = normalize_dim(attr_int(n, "dim"), e.type(a[0]).rank());
         Grads r(a.size(), -1);
         int64_t at = 0;
         for (size_t i = 0; i < a.size(); ++i) {
           int64_t len = e.type(a[i]).shape[static_cast<size_t>(dim)];
           if (need[i])
             r[i] = e.op("slice", {E::v(g)}, {{"dim", AttrValue(dim)}, {"start", AttrValue(at)}, {"end", AttrValue(at + len)}});
           at += len;
         }
         return r;
       }},
      {"embedding", [](E& e, const Node&, const Ops& a, int, int g, const Need&) { return Grads{unembed(e, a, g), -1}; }},
      {"gather", [](E& e, const Node& n, const Ops& a, int, int g, const Need&) { return Grads{ungather(e, n, a, g), -1}; }},
  };
  return rules;
}

}  // namespace reprokit::aot_detail
