// Graph utilities the passes and the minifier share: users, DCE, subgraph extraction, hashing.
#pragma once
#include <cstdint>
#include <set>
#include <vector>

#include "reprokit/ir/graph.h"

namespace reprokit {

// users[i] = ids of the nodes that use node i as an operand (each user once).
std::vector<std::vector<int>> compute_users(const Graph& g);

// Removes body nodes that no output depends on. Inputs are kept (the signature does not change).
Graph eliminate_dead_code(const Graph& g);
// Same, and also drops inputs that nothing uses.
Graph prune_unused_inputs(const Graph& g);

// The graph that computes `outputs` of g, where every node in `cut` becomes a graph input of the
// same name and type (in node order, after g's own used inputs). Only nodes needed are kept;
// unused inputs are dropped. Types are re-inferred.
Graph extract_subgraph(const Graph& g, const std::vector<int>& outputs, const std::set<int>& cut = {});

// Builds a new graph from g keeping the nodes for which keep[i] is true, with operands renamed by
// `remap` applied first (remap[i] = node that replaces uses of i; identity where remap[i] == i).
// Used by strategies that bypass nodes. Returns the compacted, verified graph.
Graph rebuild_graph(const Graph& g, const std::vector<int>& remap, const std::vector<bool>& keep);

// A hash of the structure (ops, attributes, literals, types, wiring, outputs) that ignores value
// names and the graph name: two graphs that differ only by naming hash equal.
uint64_t structural_hash(const Graph& g);

// Ids of all nodes that `id` depends on (transitively), including id.
std::vector<bool> ancestors(const Graph& g, const std::vector<int>& roots);

}  // namespace reprokit
