// drop-operands: remove operands of variadic ops, so a cat of 13 values becomes a cat of the two
// the failure needs (a densenet121 repro used to keep all 13). A unit is one operand of one
// variadic node; every node keeps at least one. The nodes after it are inferred again: an edit
// that changes a shape they cannot take is invalid, and whatever fed only the dropped operands
// goes with them.
#include <map>
#include <utility>

#include "reprokit/support/errors.h"
#include "reprokit/ir/graph_utils.h"
#include "reprokit/ir/op_registry.h"
#include "strategy_list.h"

namespace reprokit {

namespace {

// (node id, operand index) of every operand of a variadic node that has more than one.
std::vector<std::pair<int, int>> variadic_operands(const Graph& g) {
  std::vector<std::pair<int, int>> out;
  for (int id : body_nodes(g)) {
    const Node& n = g.node(id);
    const OpSchema& s = op_schema(n.op);
    if (s.params.empty() || s.params[0].kind != ParamKind::variadic_tensor || n.operands.size() < 2) continue;
    for (int k = 0; k < static_cast<int>(n.operands.size()); ++k) out.emplace_back(id, k);
  }
  return out;
}

Candidate drop_operands(const Candidate& c, const std::vector<int>& units) {
  const auto all = variadic_operands(c.graph);
  std::map<int, std::vector<bool>> dropped;  // node -> operands to remove
  for (int u : units) {
    const auto& [id, k] = all.at(static_cast<size_t>(u));
    auto& d = dropped[id];
    d.resize(c.graph.node(id).operands.size());
    d[static_cast<size_t>(k)] = true;
  }
  Graph g = c.graph;
  for (auto& [id, d] : dropped) {
    Node& n = g.node(id);
    std::vector<Operand> kept;
    for (size_t k = 0; k < n.operands.size(); ++k)
      if (!d[k]) kept.push_back(n.operands[k]);
    if (kept.empty()) throw UserError("dropping every operand of a variadic node");
    n.operands = std::move(kept);
  }
  return c.with_graph(prune_unused_inputs(eliminate_dead_code(reinfer_types(g))));
}

}  // namespace

Strategy drop_operands_strategy() {
  return {"drop-operands", "remove operands of variadic ops such as cat (delta debugging)", SearchKind::delta,
          [](const Candidate& c) {
            std::vector<int> units(variadic_operands(c.graph).size());
            for (size_t i = 0; i < units.size(); ++i) units[i] = static_cast<int>(i);
            return units;
          },
          drop_operands};
}

}  // namespace reprokit
