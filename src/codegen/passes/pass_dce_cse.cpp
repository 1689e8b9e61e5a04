// Dead-code elimination and common-subexpression elimination.
#include <map>

#include "graph_builder.h"
#include "passes.h"
#include "reprokit/ir/graph_utils.h"

namespace reprokit {

bool run_dce(Graph& g, RewriteBudget& budget) {
  auto live = ancestors(g, g.outputs);
  auto users = compute_users(g);
  // Decide from the back: a dead node goes only once all its users went, so a limit that stops
  // part-way still leaves a valid graph.
  std::vector<bool> removed(static_cast<size_t>(g.size()), false);
  int injected = -1;
  for (int i = g.size() - 1; i >= g.num_inputs(); --i) {
    if (live[static_cast<size_t>(i)]) continue;
    bool users_gone = true;
    for (int u : users[static_cast<size_t>(i)]) users_gone &= removed[static_cast<size_t>(u)];
    if (!users_gone || !budget.allow()) continue;
    removed[static_cast<size_t>(i)] = true;
    if (budget.inject_now()) injected = i;
  }
  GraphBuilder b(g);
  bool changed = false;
  for (int i = 0; i < g.size(); ++i) {
    if (!removed[static_cast<size_t>(i)]) {
      b.copy(i);
      continue;
    }
    changed = true;
    // The injected bug: removing this node also corrupts its first operand for later users.
    const Node& n = g.node(i);
    if (i == injected && !n.operands.empty() && n.operands[0].is_value()) {
      int src = n.operands[0].value;
      b.alias(src, b.perturb(b.mapped(src)));
    }
  }
  if (changed) g = b.finish();
  return changed;
}

bool run_cse(Graph& g, RewriteBudget& budget) {
  GraphBuilder b(g);
  std::map<std::string, int> seen;  // canonical key -> new id
  bool changed = false;
  for (int i = 0; i < g.size(); ++i) {
    const Node& n = g.node(i);
    if (n.is_input()) {
      b.copy(i);
      continue;
    }
    std::string key = std::string(op_name(n.op)) + "(";
    for (auto& o : n.operands) key += o.is_value() ? "%" + std::to_string(b.mapped(o.value)) + "," : o.literal.str() + ",";
    key += ")";
    for (auto& [k, v] : n.attrs) key += k + "=" + v.str() + ";";
    auto it = seen.find(key);
    if (it != seen.end() && budget.allow()) {
      b.alias(i, budget.inject_now() ? b.perturb(it->second) : it->second);
      changed = true;
      continue;
    }
    int nid = b.copy(i);
    seen.emplace(key, nid);
  }
  if (changed) g = b.finish();
  return changed;
}

}  // namespace reprokit
