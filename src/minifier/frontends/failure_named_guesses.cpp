// First guesses from the nodes a failure names (see failure_named_guesses.h).
#include "reprokit/minifier/failure_named_guesses.h"

#include <map>
#include <set>

#include "reprokit/ir/graph_utils.h"
#include "reprokit/minifier/strategies.h"
#include "reprokit/support/errors.h"

namespace reprokit {

std::vector<NamedNodeGuess> failure_named_guesses(const Candidate& start, const OriginalOnnxModel& model, const std::string& message,
                                                  size_t max_nodes) {
  const Graph& g = start.graph;
  std::map<int, int> origin;  // body node -> the ONNX node that made it
  for (int id : body_nodes(g)) origin[id] = model.node_of(g.node(id).name);
  const auto holds = [&](int node) {
    for (const auto& [id, o] : origin)
      if (o == node) return true;
    return false;
  };
  std::vector<int> named;
  for (int node : model.nodes_named_in(message))
    if (named.size() < max_nodes && holds(node)) named.push_back(node);

  std::vector<NamedNodeGuess> guesses;
  std::set<uint64_t> seen;
  for (int node : named) {
    // The candidate that computes `node`'s outputs from the ops of `kept` nodes, every other value
    // of the model it reads cut into an input.
    const auto keeping = [&](const std::set<int>& kept, const std::string& what) {
      std::vector<int> outputs;
      std::set<int> cut;
      for (const auto& [id, o] : origin) {
        if (!model.holds_a_model_value(g.node(id).name)) continue;
        if (o == node) outputs.push_back(id);
        else if (!kept.count(o)) cut.insert(id);
      }
      if (outputs.empty()) return;
      try {
        Candidate c = start.with_graph(extract_subgraph(g, outputs, cut));
        if (c.graph.num_ops() == 0 || c.graph.num_ops() >= g.num_ops() || model.why_not_writable(c.graph)) return;
        if (!seen.insert(c.key(true)).second) return;
        guesses.push_back({std::move(c), model.describe_node(node) + " " + what});
      } catch (const UserError&) {}  // no graph to guess: the search will do
    };
    keeping({node}, "alone");
    std::set<int> with_feeders{node};
    for (const auto& [id, o] : origin) {
      if (o != node) continue;
      for (const Operand& operand : g.node(id).operands)
        if (operand.is_value())
          if (auto it = origin.find(operand.value); it != origin.end() && it->second >= 0) with_feeders.insert(it->second);
    }
    if (with_feeders.size() > 1) keeping(with_feeders, "with the nodes that feed it");
  }
  return guesses;
}

}  // namespace reprokit
