// First guesses from the nodes a failure names (see failure_named_guesses.h).
#include "reprokit/minifier/failure_named_guesses.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>

#include "reprokit/ir/graph_utils.h"
#include "reprokit/minifier/strategies.h"
#include "reprokit/support/errors.h"

namespace reprokit {

namespace {

// How a reduction groups the ops of its graph into the units a guess keeps or cuts: the ONNX node
// that made each op (reduce in the model's own nodes), or each op itself.
struct Grouping {
  std::function<int(int id)> group_of;          // the group of body node `id`, or -1 for none
  std::function<bool(int id)> holds_a_value;    // whether `id` holds a value another group may read
  std::function<std::string(int group)> named;  // the group as a message names it
  std::function<bool(const Graph&)> writable;   // whether a candidate can be handed to the check
};

std::vector<NamedNodeGuess> guesses(const Candidate& start, const std::vector<int>& named_groups, const Grouping& by, size_t max_nodes) {
  const Graph& g = start.graph;
  std::map<int, int> origin;  // body node -> its group
  for (int id : body_nodes(g)) origin[id] = by.group_of(id);
  std::vector<int> named;
  for (int group : named_groups) {
    bool held = false;
    for (const auto& [id, o] : origin) held |= o == group;
    if (held && named.size() < max_nodes) named.push_back(group);
  }

  std::vector<NamedNodeGuess> out;
  std::set<uint64_t> seen;
  for (int group : named) {
    // The candidate that computes `group`'s outputs from the ops of the `kept` groups, every other
    // value it reads cut into an input.
    const auto keeping = [&](const std::set<int>& kept, const std::string& what) {
      std::vector<int> outputs;
      std::set<int> cut;
      for (const auto& [id, o] : origin) {
        if (!by.holds_a_value(id)) continue;
        if (o == group) outputs.push_back(id);
        else if (!kept.count(o)) cut.insert(id);
      }
      if (outputs.empty()) return;
      try {
        Candidate c = start.with_graph(extract_subgraph(g, outputs, cut));
        if (c.graph.num_ops() == 0 || c.graph.num_ops() >= g.num_ops() || !by.writable(c.graph)) return;
        if (!seen.insert(c.key(true)).second) return;
        out.push_back({std::move(c), by.named(group), what});
      } catch (const UserError&) {}  // no graph to guess: the search will do
    };
    keeping({group}, "alone");
    std::set<int> with_feeders{group};
    for (const auto& [id, o] : origin) {
      if (o != group) continue;
      for (const Operand& operand : g.node(id).operands)
        if (operand.is_value())
          if (auto it = origin.find(operand.value); it != origin.end() && it->second >= 0) with_feeders.insert(it->second);
    }
    if (with_feeders.size() > 1) keeping(with_feeders, "with the nodes that feed it");
  }
  return out;
}

bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

}  // namespace

std::vector<NamedNodeGuess> failure_named_guesses(const Candidate& start, const OriginalOnnxModel& model, const std::string& message,
                                                  size_t max_nodes) {
  const Graph& g = start.graph;
  Grouping by{[&](int id) { return model.node_of(g.node(id).name); }, [&](int id) { return model.holds_a_model_value(g.node(id).name); },
              [&](int node) { return model.describe_node(node); }, [&](const Graph& c) { return !model.why_not_writable(c); }};
  return guesses(start, model.nodes_named_in(message), by, max_nodes);
}

std::vector<int> ops_named_in(const Graph& g, const std::string& message) {
  std::vector<int> ids;
  for (size_t at = message.find('%'); at != std::string::npos; at = message.find('%', at + 1)) {
    size_t end = at + 1;
    while (end < message.size() && name_char(message[end])) ++end;
    const int id = g.find(message.substr(at + 1, end - at - 1));
    if (id >= g.num_inputs() && std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  return ids;
}

std::vector<std::string> describe_named_guesses(const std::vector<NamedNodeGuess>& guesses) {
  std::vector<std::string> lines;
  for (size_t k = 0; k < guesses.size(); ++k) {
    if (k > 0 && guesses[k - 1].node == guesses[k].node) lines.back() += ", then " + guesses[k].how;
    else lines.push_back(guesses[k].node + ": tried first " + guesses[k].how);
  }
  return lines;
}

std::vector<NamedNodeGuess> failure_named_guesses(const Candidate& start, const std::string& message, size_t max_nodes) {
  const Graph& g = start.graph;
  Grouping by{[](int id) { return id; }, [](int) { return true; },
              [&](int id) { return fmt::format("%{} ({})", g.node(id).name, op_name(g.node(id).op)); }, [](const Graph&) { return true; }};
  return guesses(start, ops_named_in(g, message), by, max_nodes);
}

}  // namespace reprokit
