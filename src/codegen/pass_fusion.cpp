// Fusion passes. They record decisions as the node attribute "group": nodes of one group become
// one loop nest. Pointwise fusion merges a same-shape pointwise producer that has a single user into
// its consumer's group; reduction fusion appends a reduction to the group producing its input.
#include <map>

#include "graph_builder.h"
#include "passes.h"
#include "reprokit/ir/graph_utils.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/op_semantics.h"

namespace reprokit {

namespace {

bool is_reduction(Op op) { return op_schema(op).primitive_reduction(); }

std::optional<int64_t> group_of(const Node& n) {
  auto it = n.attrs.find("group");
  if (it == n.attrs.end()) return std::nullopt;
  return it->second.as_int();
}

bool is_output(const Graph& g, int id) { return std::find(g.outputs.begin(), g.outputs.end(), id) != g.outputs.end(); }

bool group_has_reduction(const Graph& g, int64_t group) {
  for (auto& n : g.nodes)
    if (group_of(n) == group && is_reduction(n.op)) return true;
  return false;
}

// Shared walk of both fusion passes: `wants(node, producer)` says whether node may join the
// producer's group. Works in place on attributes (types and wiring do not change).
template <class Wants>
bool fuse(Graph& g, RewriteBudget& budget, Wants wants) {
  auto users = compute_users(g);
  int64_t next_group = 0;
  for (auto& n : g.nodes)
    if (auto gr = group_of(n)) next_group = std::max(next_group, *gr + 1);
  bool changed = false;
  std::vector<std::pair<int, int>> injected;  // (node, where) perturbations to add afterwards
  for (int i = g.num_inputs(); i < g.size(); ++i) {
    for (auto& o : g.node(i).operands) {
      if (!o.is_value()) continue;
      int p = o.value;
      const Node& prod = g.node(p);
      if (prod.is_input() || users[static_cast<size_t>(p)].size() != 1 || is_output(g, p)) continue;
      if (!wants(g.node(i), prod)) continue;
      auto gp = group_of(prod), gi = group_of(g.node(i));
      if (gp && gi && *gp == *gi) continue;
      if (gp && group_has_reduction(g, *gp)) continue;
      if (!budget.allow()) continue;
      int64_t target = gi ? *gi : gp ? *gp : next_group++;
      for (auto& n : g.nodes)  // relabel the producer's whole group
        if (gp && group_of(n) == gp) n.attrs["group"] = AttrValue(target);
      g.node(p).attrs["group"] = AttrValue(target);
      g.node(i).attrs["group"] = AttrValue(target);
      if (budget.inject_now()) injected.push_back({i, 0});
      changed = true;
    }
  }
  if (!injected.empty()) {  // the injected bug: the fused consumer computes a slightly wrong value
    GraphBuilder b(g);
    for (int i = 0; i < g.size(); ++i) {
      int nid = b.copy(i);
      for (auto& [node, unused] : injected)
        if (node == i) b.alias(i, b.perturb(nid));
    }
    g = b.finish();
  }
  return changed;
}

}  // namespace

bool run_pointwise_fusion(Graph& g, RewriteBudget& budget) {
  return fuse(g, budget, [](const Node& n, const Node& prod) {
    return is_pointwise(n.op) && is_pointwise(prod.op) && n.type.shape == prod.type.shape;
  });
}

bool run_reduction_fusion(Graph& g, RewriteBudget& budget) {
  return fuse(g, budget, [](const Node& n, const Node& prod) { return is_reduction(n.op) && is_pointwise(prod.op); });
}

}  // namespace reprokit
