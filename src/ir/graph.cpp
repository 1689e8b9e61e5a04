// Graph and Module: construction helpers that keep the graph's invariants (inputs first, operands
// before users, every node typed).
#include "reprokit/ir/graph.h"

#include <fmt/format.h>

#include "reprokit/support/errors.h"
#include "reprokit/ir/op_registry.h"

namespace reprokit {

int Graph::num_inputs() const {
  int n = 0;
  while (n < size() && nodes[static_cast<size_t>(n)].is_input()) ++n;
  return n;
}

std::vector<int> Graph::input_ids() const {
  std::vector<int> ids;
  for (int i = 0, n = num_inputs(); i < n; ++i) ids.push_back(i);
  return ids;
}

int Graph::find(std::string_view value_name) const {
  for (int i = 0; i < size(); ++i)
    if (nodes[static_cast<size_t>(i)].name == value_name) return i;
  return -1;
}

int Graph::add_input(std::string input_name, TensorType type) {
  int pos = num_inputs();
  for (auto& n : nodes)
    for (auto& o : n.operands)
      if (o.value >= pos) ++o.value;
  for (auto& o : outputs)
    if (o >= pos) ++o;
  Node in;
  in.name = std::move(input_name);
  in.op = Op::input;
  in.type = std::move(type);
  nodes.insert(nodes.begin() + pos, std::move(in));
  return pos;
}

int Graph::add_node(std::string node_name, Op op, std::vector<Operand> operands, Attrs attrs) {
  for (auto& o : operands)
    if (o.is_value() && o.value >= size()) throw InternalError(fmt::format("add_node %{}: operand {} does not exist yet", node_name, o.value));
  Node n;
  n.name = std::move(node_name);
  n.op = op;
  n.operands = std::move(operands);
  n.attrs = std::move(attrs);
  nodes.push_back(std::move(n));
  try {
    nodes.back().type = infer_node_type(*this, size() - 1);
  } catch (...) {
    nodes.pop_back();
    throw;
  }
  return size() - 1;
}

std::string Graph::fresh_name(std::string_view prefix) const {
  std::string base(prefix.empty() ? "v" : prefix);
  if (find(base) < 0) return base;
  for (int i = 1;; ++i) {
    std::string cand = fmt::format("{}_{}", base, i);
    if (find(cand) < 0) return cand;
  }
}

const Graph& Module::entry() const {
  if (graphs.empty()) throw UserError("the module holds no graph");
  return graphs.front();
}

const Graph& Module::get(std::string_view name) const {
  for (auto& g : graphs)
    if (g.name == name) return g;
  std::string names;
  for (auto& g : graphs) names += (names.empty() ? "" : ", ") + g.name;
  throw UserError(fmt::format("no graph named '{}' (the file holds: {})", name, names));
}

}  // namespace reprokit
