// The graph edits strategies are built from: cutting nodes into inputs and bypassing nodes. An
// edit that leaves no valid graph throws UserError; the engine treats that as invalid.
#include <algorithm>
#include <set>

#include "reprokit/support/errors.h"
#include "reprokit/ir/graph_utils.h"
#include "reprokit/minifier/strategies.h"

namespace reprokit {

std::vector<int> body_nodes(const Graph& g) {
  std::vector<int> ids;
  for (int i = g.num_inputs(); i < g.size(); ++i) ids.push_back(i);
  return ids;
}

Graph reinfer_types(const Graph& g) {
  Graph out;
  out.name = g.name;
  for (int i = 0; i < g.size(); ++i) {
    const Node& n = g.node(i);
    if (n.is_input()) out.nodes.push_back(n);
    else out.add_node(n.name, n.op, n.operands, n.attrs);  // VerifyError when the types no longer fit
  }
  out.outputs = g.outputs;
  return out;
}

Candidate cut_nodes(const Candidate& c, const std::vector<int>& cut) {
  if (cut.empty()) return c;
  std::set<int> cut_set(cut.begin(), cut.end());
  // A returned node that is cut would leave an output that is just an input: keep the others.
  std::vector<int> outs;
  for (int o : c.graph.outputs)
    if (!cut_set.count(o)) outs.push_back(o);
  if (outs.empty()) throw UserError("the cut removes every output");
  return c.with_graph(extract_subgraph(c.graph, outs, cut_set));
}

int operand_of_the_same_type(const Graph& g, int id) {
  const Node& n = g.node(id);
  for (auto& o : n.operands)
    if (o.is_value() && g.node(o.value).type.dtype == n.type.dtype && g.node(o.value).type.shape == n.type.shape) return o.value;
  return -1;
}

Candidate bypass_nodes(const Candidate& c, const std::vector<int>& bypass, const BypassChoice& replacement) {
  const Graph& g = c.graph;
  std::vector<int> remap(static_cast<size_t>(g.size()));
  for (int i = 0; i < g.size(); ++i) remap[static_cast<size_t>(i)] = i;
  std::vector<bool> keep(static_cast<size_t>(g.size()), true);
  for (int id : bypass) {
    const int with = replacement ? replacement(g, id) : operand_of_the_same_type(g, id);
    if (with < 0) throw UserError("a bypassed node has no operand of its type");
    remap[static_cast<size_t>(id)] = with;
    keep[static_cast<size_t>(id)] = false;
  }
  Graph r = prune_unused_inputs(rebuild_graph(g, remap, keep));
  // Outputs that collapsed onto the same value, or onto an input, are kept once / dropped.
  std::vector<int> outs;
  for (int o : r.outputs)
    if (!r.node(o).is_input() && std::find(outs.begin(), outs.end(), o) == outs.end()) outs.push_back(o);
  if (outs.empty()) throw UserError("bypassing leaves no output");
  r.outputs = outs;
  return c.with_graph(prune_unused_inputs(eliminate_dead_code(r)));
}

}  // namespace reprokit
