// Dead-code elimination and common-subexpression elimination.
#include <map>

#include "graph_builder.h"
#include "passes.h"
#include "reprokit/ir/graph_utils.h"

namespace reprokit {

bool run_dce(Graph& g, RewriteBudget& budget) {
  auto live = ancestors(g, g.outputs);
  GraphBuilder b(g);
  bool changed = false;
  for (int i = 0; i < g.size(); ++i) {
    const Node& n = g.node(i);
    if (n.is_input() || live[static_cast<size_t>(i)] || !budget.allow()) {
      b.copy(i);
      continue;
    }
    changed = true;
    // The injected bug: removing this node also corrupts its first operand for later users.
    if (budget.inject_now() && !n.operands.empty() && n.operands[0].is_value()) {
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
    std::string key = n.op + "(";
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
