// Decompositions: one rule per composite op, each rewriting the op into primitives with
// Graph::add_node. f16/bf16 composites compute in f32 and cast back, as PyTorch's do.
#include "reprokit/aot/decompose.h"

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "reprokit/ir/errors.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/verifier.h"

namespace reprokit {

namespace {

// Emits nodes into the output graph; names derive from the original node's name.
class Emitter {
 public:
  Emitter(Graph& g, std::string base, const std::set<std::string>& reserved) : g_(g), base_(std::move(base)), reserved_(reserved) {}
  int op(const std::string& op, std::vector<Operand> operands, Attrs attrs = {}) {
    // Names of the original graph are reserved: a later original node must keep its own name.
    std::string name = g_.fresh_name(base_ + "." + op);
    for (int k = 1; reserved_.count(name); ++k) name = g_.fresh_name(fmt::format("{}.{}{}", base_, op, k));
    return g_.add_node(name, op, std::move(operands), std::move(attrs));
  }
  static Operand v(int id) { return Operand::of(id); }
  static Operand s(double x) { return Operand::scalar(AttrValue(x)); }
  Graph& g_;
  std::string base_;
  const std::set<std::string>& reserved_;
};

using Rule = std::function<int(Emitter&, const Node&, const std::vector<Operand>&)>;

int sigmoid_of(Emitter& e, Operand x) {
  int neg = e.op("neg", {x});
  int ex = e.op("exp", {Emitter::v(neg)});
  int den = e.op("add", {Emitter::v(ex), Emitter::s(1.0)});
  return e.op("reciprocal", {Emitter::v(den)});
}

int sum_keep(Emitter& e, int x, const std::vector<int64_t>& dims, bool keepdim) {
  return e.op("sum", {Emitter::v(x)}, {{"dims", AttrValue::ints(dims)}, {"keepdim", AttrValue(keepdim)}});
}

const std::map<std::string, Rule, std::less<>>& rules() {
  static const std::map<std::string, Rule, std::less<>> r = {
      {"sigmoid", [](Emitter& e, const Node&, const std::vector<Operand>& a) { return sigmoid_of(e, a[0]); }},
      {"silu", [](Emitter& e, const Node&, const std::vector<Operand>& a) {
         return e.op("mul", {a[0], Emitter::v(sigmoid_of(e, a[0]))});
       }},
      {"gelu", [](Emitter& e, const Node& n, const std::vector<Operand>& a) {
         int inner;
         if (attr(n, "approximate").as_string() == "tanh") {
           // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
           int x3 = e.op("mul", {a[0], Emitter::v(e.op("mul", {a[0], a[0]}))});
           int t = e.op("add", {a[0], Emitter::v(e.op("mul", {Emitter::v(x3), Emitter::s(0.044715)}))});
           int th = e.op("tanh", {Emitter::v(e.op("mul", {Emitter::v(t), Emitter::s(std::sqrt(2.0 / M_PI))}))});
           inner = th;
         } else {
           inner = e.op("erf", {Emitter::v(e.op("mul", {a[0], Emitter::s(M_SQRT1_2)}))});
         }
         int onep = e.op("add", {Emitter::v(inner), Emitter::s(1.0)});
         return e.op("mul", {Emitter::v(e.op("mul", {a[0], Emitter::s(0.5)})), Emitter::v(onep)});
       }},
      {"softmax", [](Emitter& e, const Node& n, const std::vector<Operand>& a) {
         Attrs d{{"dims", AttrValue::ints({attr_int(n, "dim")})}, {"keepdim", AttrValue(true)}};
         int m = e.op("amax", {a[0]}, d);
         int ex = e.op("exp", {Emitter::v(e.op("sub", {a[0], Emitter::v(m)}))});
         int s = e.op("sum", {Emitter::v(ex)}, d);
         return e.op("div", {Emitter::v(ex), Emitter::v(s)});
       }},
      {"log_softmax", [](Emitter& e, const Node& n, const std::vector<Operand>& a) {
         Attrs d{{"dims", AttrValue::ints({attr_int(n, "dim")})}, {"keepdim", AttrValue(true)}};
         int m = e.op("amax", {a[0]}, d);
         int sh = e.op("sub", {a[0], Emitter::v(m)});
         int s = e.op("sum", {Emitter::v(e.op("exp", {Emitter::v(sh)}))}, d);
         return e.op("sub", {Emitter::v(sh), Emitter::v(e.op("log", {Emitter::v(s)}))});
       }},
      {"mean", [](Emitter& e, const Node& n, const std::vector<Operand>& a) {
         const TensorType& t = e.g_.node(a[0].value).type;
         int64_t count = 1;
         std::vector<int64_t> dims;
         if (auto d = attr_opt(n, "dims")) for (auto x : d->as_ints()) dims.push_back(normalize_dim(x, t.rank()));
         else for (int64_t i = 0; i < t.rank(); ++i) dims.push_back(i);
         for (auto d : dims) count *= t.shape[static_cast<size_t>(d)];
         int s = sum_keep(e, a[0].value, dims, attr_bool(n, "keepdim"));
         return e.op("div", {Emitter::v(s), Emitter::s(static_cast<double>(count))});
       }},
      {"var", [](Emitter& e, const Node& n, const std::vector<Operand>& a) {
         const TensorType& t = e.g_.node(a[0].value).type;
         std::vector<int64_t> dims;
         if (auto d = attr_opt(n, "dims")) for (auto x : d->as_ints()) dims.push_back(normalize_dim(x, t.rank()));
         else for (int64_t i = 0; i < t.rank(); ++i) dims.push_back(i);
         int64_t count = 1;
         for (auto d : dims) count *= t.shape[static_cast<size_t>(d)];
         int mean = e.op("div", {Emitter::v(sum_keep(e, a[0].value, dims, true)), Emitter::s(static_cast<double>(count))});
         int diff = e.op("sub", {a[0], Emitter::v(mean)});
         int sq = e.op("mul", {Emitter::v(diff), Emitter::v(diff)});
         int ss = sum_keep(e, sq, dims, attr_bool(n, "keepdim"));
         double denom = std::max<double>(static_cast<double>(count - attr_int(n, "correction")), 0.0);
         return e.op("div", {Emitter::v(ss), Emitter::s(denom)});
       }},
      {"layer_norm", [](Emitter& e, const Node& n, const std::vector<Operand>& a) {
         const TensorType& t = e.g_.node(a[0].value).type;
         auto ns = attr_ints(n, "normalized_shape");
         std::vector<int64_t> dims;
         int64_t count = 1;
         for (size_t i = 0; i < ns.size(); ++i) {
           dims.push_back(t.rank() - static_cast<int64_t>(ns.size()) + static_cast<int64_t>(i));
           count *= ns[i];
         }
         int mean = e.op("div", {Emitter::v(sum_keep(e, a[0].value, dims, true)), Emitter::s(static_cast<double>(count))});
         int diff = e.op("sub", {a[0], Emitter::v(mean)});
         int sq = e.op("mul", {Emitter::v(diff), Emitter::v(diff)});
         int var = e.op("div", {Emitter::v(sum_keep(e, sq, dims, true)), Emitter::s(static_cast<double>(count))});
         int rstd = e.op("rsqrt", {Emitter::v(e.op("add", {Emitter::v(var), Emitter::s(attr_float(n, "eps"))}))});
         int y = e.op("mul", {Emitter::v(diff), Emitter::v(rstd)});
         if (a.size() > 1) y = e.op("mul", {Emitter::v(y), a[1]});
         if (a.size() > 2) y = e.op("add", {Emitter::v(y), a[2]});
         return y;
       }},
      {"linear", [](Emitter& e, const Node&, const std::vector<Operand>& a) {
         int wt = e.op("transpose", {a[1]}, {{"dim0", AttrValue(int64_t{0})}, {"dim1", AttrValue(int64_t{1})}});
         const TensorType& x = e.g_.node(a[0].value).type;
         int y;
         if (x.rank() >= 2) {
           y = e.op("matmul", {a[0], Emitter::v(wt)});
         } else {
           int x2 = e.op("unsqueeze", {a[0]}, {{"dim", AttrValue(int64_t{0})}});
           y = e.op("squeeze", {Emitter::v(e.op("matmul", {Emitter::v(x2), Emitter::v(wt)}))}, {{"dim", AttrValue(int64_t{0})}});
         }
         if (a.size() > 2) y = e.op("add", {Emitter::v(y), a[2]});
         return y;
       }},
  };
  return r;
}

// Low-precision composites compute in f32 (softmax and friends on f16 would lose too much).
bool upcast(const Node& n, const Graph& g) {
  if (n.op == "linear") return false;  // matmul handles f16/bf16 itself
  DType t = n.type.dtype;
  return (t == DType::f16 || t == DType::bf16) && !n.operands.empty() && n.operands[0].is_value() &&
         g.node(n.operands[0].value).type.dtype == t;
}

}  // namespace

bool has_decomposition(std::string_view op) { return rules().count(op) > 0; }

Graph decompose(const Graph& g) {
  Graph out;
  out.name = g.name;
  std::vector<int> map(static_cast<size_t>(g.size()), -1);
  std::set<std::string> reserved;
  for (auto& n : g.nodes) reserved.insert(n.name);
  for (int i = 0; i < g.size(); ++i) {
    const Node& n = g.node(i);
    std::vector<Operand> ops;
    for (auto& o : n.operands) ops.push_back(o.is_value() ? Operand::of(map[static_cast<size_t>(o.value)]) : o);
    if (n.is_input()) {
      out.nodes.push_back(n);
      map[static_cast<size_t>(i)] = out.size() - 1;
      continue;
    }
    auto it = rules().find(n.op);
    if (it == rules().end()) {
      Attrs attrs = n.attrs;
      map[static_cast<size_t>(i)] = out.add_node(n.name, n.op, ops, attrs);
      continue;
    }
    Emitter e(out, n.name, reserved);
    int result;
    if (upcast(n, out)) {
      std::vector<Operand> up;
      for (auto& o : ops)
        up.push_back(o.is_value() ? Operand::of(e.op("to", {o}, {{"dtype", AttrValue(DType::f32)}})) : o);
      int r32 = it->second(e, n, up);
      result = e.op("to", {Operand::of(r32)}, {{"dtype", AttrValue(n.type.dtype)}});
    } else {
      result = it->second(e, n, ops);
    }
    out.node(result).name = n.name;  // the node producing the original value keeps its name
    map[static_cast<size_t>(i)] = result;
  }
  for (int o : g.outputs) out.outputs.push_back(map[static_cast<size_t>(o)]);
  verify(out);
  return out;
}

}  // namespace reprokit
