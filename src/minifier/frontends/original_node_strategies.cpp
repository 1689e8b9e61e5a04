// Strategies over the ONNX model's own nodes (see original_node_strategies.h).
#include "reprokit/minifier/original_node_strategies.h"

#include <algorithm>
#include <set>

#include "reprokit/ir/graph_utils.h"
#include "reprokit/support/errors.h"

namespace reprokit {

namespace {

using Model = std::shared_ptr<const OriginalOnnxModel>;

// Body nodes that hold a value of the model (a node's output, or a constant): the only places a
// graph may end or be cut.
std::vector<int> model_values(const Model& m, const Graph& g) {
  std::vector<int> ids;
  for (int id : body_nodes(g))
    if (m->holds_a_model_value(g.node(id).name)) ids.push_back(id);
  return ids;
}

// What stands in for node `id` when it is bypassed: the first value of the model its ONNX node
// reads (looking through the node's own ops) with its dtype and shape, or -1.
int outside_operand_of_the_same_type(const Model& m, const Graph& g, int id) {
  const Node& n = g.node(id);
  const int origin = m->node_of(n.name);
  std::vector<int> stack{id};
  std::set<int> seen;
  while (!stack.empty()) {
    const int at = stack.back();
    stack.pop_back();
    const Node& a = g.node(at);
    // In operand order, depth first: the node's first input is tried first.
    for (auto o = a.operands.rbegin(); o != a.operands.rend(); ++o) {
      if (!o->is_value() || !seen.insert(o->value).second) continue;
      const Node& u = g.node(o->value);
      if (!u.is_input() && origin >= 0 && m->node_of(u.name) == origin && !m->holds_a_model_value(u.name)) stack.push_back(o->value);
    }
    for (const auto& o : a.operands) {
      if (!o.is_value()) continue;
      const Node& u = g.node(o.value);
      const bool inside = !u.is_input() && origin >= 0 && m->node_of(u.name) == origin && !m->holds_a_model_value(u.name);
      if (!inside && u.type.dtype == n.type.dtype && u.type.shape == n.type.shape) return o.value;
    }
  }
  return -1;
}

Strategy truncate_at_model_values(const Model& m) {
  return {"truncate", "keep the model up to one node and return only its output (binary search)", SearchKind::prefix,
          [m](const Candidate& c) {
            auto ids = model_values(m, c.graph);
            if (!ids.empty()) ids.pop_back();
            return std::vector<int>(ids.rbegin(), ids.rend());
          },
          [m](const Candidate& c, const std::vector<int>& removed) {
            if (removed.empty()) return c;
            auto ids = model_values(m, c.graph);
            if (removed.size() >= ids.size()) throw UserError("truncating every node");
            return c.with_graph(extract_subgraph(c.graph, {ids[ids.size() - 1 - removed.size()]}));
          }};
}

Strategy cut_at_model_values(const Model& m, bool front) {
  return {front ? "cut-front" : "cut",
          front ? "replace the first nodes by inputs holding their original outputs (binary search)"
                : "replace sets of nodes by inputs holding their original outputs (delta debugging)",
          front ? SearchKind::prefix : SearchKind::delta, [m](const Candidate& c) { return model_values(m, c.graph); }, cut_nodes};
}

Strategy bypass_model_nodes(const Model& m) {
  return {"bypass", "replace nodes by an input of the same dtype and shape (delta debugging)", SearchKind::delta,
          [m](const Candidate& c) {
            std::vector<int> ids;
            for (int id : model_values(m, c.graph))
              if (outside_operand_of_the_same_type(m, c.graph, id) >= 0) ids.push_back(id);
            return ids;
          },
          [m](const Candidate& c, const std::vector<int>& bypass) {
            return bypass_nodes(c, bypass, [&m](const Graph& g, int id) { return outside_operand_of_the_same_type(m, g, id); });
          }};
}

// Strategies that rewrite a node: the model's node could not say what they leave. (Smaller
// shapes stay: the plan refuses a candidate where they changed what a node says.)
const std::set<std::string> kRewritesANode = {"drop-operands", "simplify-attributes"};

}  // namespace

std::vector<Strategy> original_node_strategies(std::shared_ptr<const OriginalOnnxModel> model) {
  std::vector<Strategy> table;
  for (Strategy s : strategy_table_with({})) {
    if (kRewritesANode.count(s.name)) continue;
    Strategy own = s.name == "truncate"    ? truncate_at_model_values(model)
                   : s.name == "cut-front" ? cut_at_model_values(model, true)
                   : s.name == "cut"       ? cut_at_model_values(model, false)
                   : s.name == "bypass"    ? bypass_model_nodes(model)
                                           : s;
    own.removes_nodes = s.removes_nodes;
    own.guess_ends = s.guess_ends;
    own.compiler_only = s.compiler_only;
    own.units_are_nodes = s.units_are_nodes;
    auto apply = own.apply;
    own.apply = [apply, model](const Candidate& c, const std::vector<int>& units) {
      Candidate r = apply(c, units);
      if (auto why = model->why_not_writable(r.graph)) throw UserError(*why);
      return r;
    };
    table.push_back(std::move(own));
  }
  return table;
}

}  // namespace reprokit
