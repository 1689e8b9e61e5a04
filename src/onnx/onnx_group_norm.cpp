// Folding the exporter's written-out GroupNorm back into group_norm (see onnx_group_norm.h).
#include "onnx_group_norm.h"

#include <algorithm>
#include <optional>

namespace reprokit {
namespace {

struct Chain {
  int x = -1;                  // the normalised input [N, C, ...]
  int weight = -1, bias = -1;  // [C, 1, ...] graph values, or -1 (no Mul, no Add)
  int64_t groups = 0;
  double eps = 1e-5;
  std::vector<int> inner;  // the nodes the fold replaces, the last one included
};

class Folder {
 public:
  Folder(const Graph& g, const std::map<std::string, Tensor>& known) : g_(g), known_(known), uses_(static_cast<size_t>(g.size())) {
    for (const Node& n : g.nodes)
      for (const Operand& o : n.operands)
        if (o.is_value()) ++uses_[static_cast<size_t>(o.value)];
    for (int o : g.outputs) uses_[static_cast<size_t>(o)] += 2;  // a returned value is never inner
  }

  // The chain ending at `id` (an add, a mul or the reshape back), if it is one.
  std::optional<Chain> chain_ending_at(int id) const {
    Chain c;
    int at = id;
    const Node* n = &g_.node(at);
    if (n->op == Op::add) {
      auto [inner, other] = split(*n, [&](int m) {
        const Node& mul = g_.node(m);
        return mul.op == Op::mul &&
               std::any_of(mul.operands.begin(), mul.operands.end(), [&](const Operand& o) { return o.is_value() && is_normed(o.value); });
      });
      if (inner < 0) return std::nullopt;
      c.bias = other;
      c.inner.push_back(at);
      at = inner;
      n = &g_.node(at);
    }
    if (n->op == Op::mul) {
      if (at != id && !single_use(at)) return std::nullopt;
      auto [inner, other] = split(*n, [&](int m) { return is_normed(m); });
      if (inner < 0) return std::nullopt;
      c.weight = other;
      c.inner.push_back(at);
      at = inner;
      n = &g_.node(at);
    } else if (c.bias >= 0) {
      return std::nullopt;
    }
    // reshape back (to x's shape) of instance_norm of reshape(x) to [N, groups, -1]
    if (n->op != Op::reshape || (at != id && !single_use(at))) return std::nullopt;
    c.inner.push_back(at);
    const int norm = n->operands[0].value;
    const Node& in = g_.node(norm);
    if (in.op != Op::instance_norm || !single_use(norm)) return std::nullopt;
    c.inner.push_back(norm);
    for (size_t k = 1; k < in.operands.size(); ++k) {  // scale of ones, bias of zeros, or none
      const Operand& o = in.operands[k];
      if (!o.is_value() || !single_use(o.value) || !is_full(o.value, k == 1 ? 1.0 : 0.0)) return std::nullopt;
      c.inner.push_back(o.value);
    }
    const int grouped = in.operands[0].value;
    const Node& r = g_.node(grouped);
    if (r.op != Op::reshape || !single_use(grouped)) return std::nullopt;
    c.inner.push_back(grouped);
    c.x = r.operands[0].value;
    const Shape& xs = g_.node(c.x).type.shape;
    const Shape& gs = r.type.shape;
    if (xs.size() < 3 || gs.size() != 3 || gs[0] != xs[0] || gs[1] <= 0 || xs[1] % gs[1] != 0) return std::nullopt;
    if (n->type.shape != xs || g_.node(c.x).type.dtype != n->type.dtype) return std::nullopt;
    c.groups = gs[1];
    c.eps = in.has_attr("eps") ? in.attrs.at("eps").as_float() : 1e-5;
    for (int p : {c.weight, c.bias})
      if (p >= 0 && !per_channel(p, g_.node(c.x).type)) return std::nullopt;
    return c;
  }

  bool single_use(int id) const { return uses_[static_cast<size_t>(id)] == 1; }

 private:
  // The operand of a binary node that `inner` accepts (single use) and the other operand: {-1, -1}
  // if neither is. Either order: Mul(w, x) is Mul(x, w).
  template <class Accept> std::pair<int, int> split(const Node& n, Accept inner) const {
    if (n.operands.size() != 2 || !n.operands[0].is_value() || !n.operands[1].is_value()) return {-1, -1};
    for (int k : {0, 1}) {
      int a = n.operands[static_cast<size_t>(k)].value, b = n.operands[static_cast<size_t>(1 - k)].value;
      if (inner(a) && single_use(a)) return {a, b};
    }
    return {-1, -1};
  }
  // reshape(instance_norm(...)): the chain's reshape back.
  bool is_normed(int id) const {
    const Node& n = g_.node(id);
    return n.op == Op::reshape && n.operands[0].is_value() && g_.node(n.operands[0].value).op == Op::instance_norm;
  }
  // A full() of `value`, or an input known to hold it everywhere.
  bool is_full(int id, double value) const {
    const Node& n = g_.node(id);
    if (n.op == Op::full) return n.has_attr("value") && n.attrs.at("value").as_float() == value;
    auto k = known_.find(n.name);
    if (!n.is_input() || k == known_.end()) return false;
    const std::vector<double> xs = k->second.to_doubles();
    return std::all_of(xs.begin(), xs.end(), [&](double x) { return x == value; });
  }
  // [C, 1, ..., 1] against x [N, C, ...]: one value per channel, of x's dtype.
  bool per_channel(int id, const TensorType& x) const {
    const TensorType& t = g_.node(id).type;
    if (t.dtype != x.dtype || t.shape.size() + 1 != x.shape.size() || t.shape[0] != x.shape[1]) return false;
    for (size_t d = 1; d < t.shape.size(); ++d)
      if (t.shape[d] != 1) return false;
    return true;
  }

  const Graph& g_;
  const std::map<std::string, Tensor>& known_;
  std::vector<int> uses_;
};

// A name for a new node, taken in neither graph.
std::string new_name(const Graph& old, const Graph& out, const std::string& base) {
  std::string name = out.fresh_name(base);
  for (int k = 1; old.find(name) >= 0 || out.find(name) >= 0; ++k) name = out.fresh_name(base + "_" + std::to_string(k));
  return name;
}

}  // namespace

Graph fold_exported_group_norm(const Graph& g, const std::map<std::string, Tensor>& known) {
  Folder f(g, known);
  std::vector<std::optional<Chain>> ending(static_cast<size_t>(g.size()));
  std::vector<bool> dropped(static_cast<size_t>(g.size()));
  for (int id = g.size() - 1; id >= g.num_inputs(); --id) {  // last nodes first: the longest chain wins
    if (dropped[static_cast<size_t>(id)]) continue;
    std::optional<Chain> c = f.chain_ending_at(id);
    if (!c) continue;
    for (int k : c->inner) dropped[static_cast<size_t>(k)] = true;
    ending[static_cast<size_t>(id)] = std::move(c);
  }
  Graph out;
  out.name = g.name;
  std::vector<int> map(static_cast<size_t>(g.size()), -1);
  for (int id = 0; id < g.size(); ++id) {
    const Node& n = g.node(id);
    if (n.is_input()) {
      if (dropped[static_cast<size_t>(id)]) continue;  // ones or zeros only the chain used
      out.nodes.push_back(n);
      map[static_cast<size_t>(id)] = out.size() - 1;
      continue;
    }
    if (const auto& c = ending[static_cast<size_t>(id)]) {
      const int64_t channels = g.node(c->x).type.shape[1];
      auto per_channel = [&](int p) {
        if (p < 0) return Operand{};
        return Operand::of(out.add_node(new_name(g, out, g.node(p).name + "_per_channel"), Op::reshape, {Operand::of(map[static_cast<size_t>(p)])},
                                        {{"shape", AttrValue::ints({channels})}}));
      };
      Operand w = per_channel(c->weight), b = per_channel(c->bias);
      std::vector<Operand> ops = {Operand::of(map[static_cast<size_t>(c->x)])};
      if (c->weight >= 0) ops.push_back(w);
      if (c->bias >= 0) ops.push_back(b);
      map[static_cast<size_t>(id)] =
          out.add_node(n.name, Op::group_norm, std::move(ops), {{"num_groups", AttrValue(c->groups)}, {"eps", AttrValue(c->eps)}});
      continue;
    }
    if (dropped[static_cast<size_t>(id)]) continue;
    std::vector<Operand> ops;
    for (const Operand& o : n.operands) ops.push_back(o.is_value() ? Operand::of(map[static_cast<size_t>(o.value)]) : o);
    map[static_cast<size_t>(id)] = out.add_node(n.name, n.op, std::move(ops), n.attrs);
  }
  for (int o : g.outputs) out.outputs.push_back(map[static_cast<size_t>(o)]);
  return out;
}

}  // namespace reprokit
