// Fusion passes. They record decisions as the node attribute "group": nodes of one group become
// one loop nest. Pointwise fusion merges a same-shape pointwise producer that has a single user into
// its consumer's group, or whose users all ended in one group; reduction fusion appends a
// reduction to the group producing its input.
#include <algorithm>
#include <map>
#include <set>

#include "graph_builder.h"
#include "passes.h"
#include "reprokit/ir/graph_utils.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/op_semantics.h"
#include "reprokit/support/hash.h"

namespace reprokit {

namespace {

// Where a long group ends depends on its members, not on where it started: past kCutFrom members
// a group closes after a node whose name hashes to 0 mod kCutEvery. A graph with nodes removed in
// front (the minifier's cuts) then has the same groups, so the same kernels and compiled units,
// from the first such node on.
constexpr size_t kCutFrom = 32;
constexpr uint64_t kCutEvery = 16;
bool ends_long_group(const Node& n) { return fnv1a64(n.name) % kCutEvery == 0; }

// Shared walk of both fusion passes: `wants(node, producer)` says whether node may join the
// producer's group. Works in place on attributes (types and wiring do not change). Group
// membership is kept on the side, so the walk is linear in the graph.
// With `shared`, a producer read by several nodes that all ended in one group joins it as well
// (consumers first, so a chain of them joins in one sweep): gelu's x * (1 + erf(x / sqrt 2)), a
// bias add before it, had been a pass of its own over the whole tensor. Only when all its users
// are in that group: every member but a group's last keeps its users inside the group, so no
// value is read before its group has run.
template <class Wants> bool fuse(Graph& g, RewriteBudget& budget, Wants wants, bool shared = false) {
  auto users = compute_users(g);
  std::set<int> outputs(g.outputs.begin(), g.outputs.end());
  std::map<int64_t, std::vector<int>> members;
  std::map<int64_t, bool> has_reduction;
  int64_t next_group = 0;
  for (int i = 0; i < g.size(); ++i)
    if (auto gr = group_of(g.node(i))) {
      members[*gr].push_back(i);
      has_reduction[*gr] = has_reduction[*gr] || is_reduction(g.node(i).op);
      next_group = std::max(next_group, *gr + 1);
    }
  auto size_of = [&](std::optional<int64_t> gr) { return gr ? members[*gr].size() : size_t{1}; };
  // Whether producer prod (of group gp, if in one) may join a group `into` (none: a new one).
  auto fits = [&](std::optional<int64_t> gp, std::optional<int64_t> into, const Node& prod) {
    if (gp && has_reduction[*gp]) return false;
    if (size_of(gp) + size_of(into) > kMaxGroupSize) return false;
    return !(size_of(gp) >= kCutFrom && ends_long_group(prod));
  };
  auto join = [&](int node, int64_t target) {
    g.node(node).attrs["group"] = AttrValue(target);
    members[target].push_back(node);
    has_reduction[target] = has_reduction[target] || is_reduction(g.node(node).op);
  };
  auto move_group = [&](int64_t from, int64_t target) {
    for (int m : members[from]) join(m, target);
    members.erase(from);
  };
  bool changed = false;
  std::vector<int> injected;  // nodes whose fused value is perturbed afterwards
  for (int i = g.num_inputs(); i < g.size(); ++i) {
    for (auto& o : g.node(i).operands) {
      if (!o.is_value()) continue;
      int p = o.value;
      const Node& prod = g.node(p);
      if (prod.is_input() || users[static_cast<size_t>(p)].size() != 1 || outputs.count(p)) continue;
      if (!wants(g.node(i), prod)) continue;
      auto gp = group_of(prod), gi = group_of(g.node(i));
      if ((gp && gi && *gp == *gi) || !fits(gp, gi, prod)) continue;
      if (!budget.allow()) continue;
      int64_t target = gi ? *gi : gp ? *gp : next_group++;
      if (gp && *gp != target) move_group(*gp, target);  // the producer's whole group moves
      else if (!gp) join(p, target);
      if (!gi) join(i, target);
      std::sort(members[target].begin(), members[target].end());
      if (budget.inject_now()) injected.push_back(i);
      changed = true;
    }
  }
  for (int p = g.size() - 1; shared && p >= g.num_inputs(); --p) {
    const auto& us = users[static_cast<size_t>(p)];
    const Node& prod = g.node(p);
    if (us.size() < 2 || outputs.count(p)) continue;
    const auto target = group_of(g.node(us.front()));
    bool ok = target.has_value() && !has_reduction[*target];
    for (int u : us) ok = ok && group_of(g.node(u)) == target && wants(g.node(u), prod);
    const auto gp = group_of(prod);
    if (!ok || (gp && *gp == *target) || !fits(gp, target, prod)) continue;
    if (!budget.allow()) continue;
    if (gp) move_group(*gp, *target);
    else join(p, *target);
    std::sort(members[*target].begin(), members[*target].end());
    if (budget.inject_now()) injected.push_back(*std::max_element(us.begin(), us.end()));
    changed = true;
  }
  if (!injected.empty()) {  // the injected bug: the fused consumer computes a slightly wrong value
    GraphBuilder b(g);
    for (int i = 0; i < g.size(); ++i) {
      int nid = b.copy(i);
      if (std::find(injected.begin(), injected.end(), i) != injected.end()) b.alias(i, b.perturb(nid));
    }
    g = b.finish();
  }
  return changed;
}

}  // namespace

bool run_pointwise_fusion(Graph& g, RewriteBudget& budget) {
  return fuse(
      g, budget, [](const Node& n, const Node& prod) { return is_pointwise(n.op) && is_pointwise(prod.op) && n.type.shape == prod.type.shape; },
      /*shared=*/true);
}

bool run_reduction_fusion(Graph& g, RewriteBudget& budget) {
  return fuse(g, budget, [](const Node& n, const Node& prod) { return is_reduction(n.op) && is_pointwise(prod.op); });
}

}  // namespace reprokit
