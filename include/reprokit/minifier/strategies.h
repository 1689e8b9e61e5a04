// Reduction strategies, declared once in a table that drives run order and the CLI's --only,
// --skip and --list-strategies (the compiler's strategies come from the front end:
// compiler_decisions.h). A strategy enumerates removable units of a candidate in a fixed
// order and builds the candidate with a set of them removed; the engine does the searching and
// owns validity (it verifies every candidate; an edit that throws UserError is simply invalid).
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "reprokit/minifier/candidate.h"

namespace reprokit {

enum class SearchKind {
  prefix,  // remove the first k units, for the largest k that stays interesting (binary search)
  delta,   // delta debugging over subsets (chunks and complements) down to single units
};

struct Strategy {
  std::string name;
  std::string description;
  SearchKind search;
  // The removable units of a candidate (node ids, output positions, ...), in search order.
  std::function<std::vector<int>(const Candidate&)> units;
  // The candidate with these units removed. May throw UserError (or VerifyError) when the edit
  // leaves no valid graph.
  std::function<Candidate(const Candidate&, const std::vector<int>&)> apply;
  // Only for backends that run compiler passes (cpp, cuda).
  bool compiler_only = false;
  // Removes nodes: such strategies run to a fixpoint before the others in each round, so a
  // later strategy (fewer passes, smaller shapes) never settles a trade against fewer ops.
  bool removes_nodes = false;
  // Ask a first guess before searching (one query; the whole search when it is right). prefix:
  // remove every unit but the last — the candidate truncation left ends in a node that fails, and
  // often that node alone does. delta: remove every unit but the first and the last — what the
  // prefix searches left has a needed node at each end.
  bool guess_ends = false;
  // The units are node ids. With guess_ends on a prefix search, when the last unit alone is not
  // interesting, one more guess keeps it with the units that feed it (a fused pattern of a node
  // and its producers is the commonest compiler bug that needs two nodes).
  bool units_are_nodes = false;
};

// Every strategy in run order, with a compiler's own (its decisions: passes, rewrites; none for a
// compiler whose decisions are not the engine's to change) after those that remove nodes.
std::vector<Strategy> strategy_table_with(const std::vector<Strategy>& compiler_strategies);

// Building blocks the strategies share (exposed for their tests).
std::vector<int> body_nodes(const Graph& g);
// Turns `cut` nodes into inputs (keeping their names), dropping what nothing needs any more.
Candidate cut_nodes(const Candidate& c, const std::vector<int>& cut);
// Replaces each node in `bypass` by its first operand of the same dtype and shape, or by what
// `replacement` chooses (a node id, or -1 when there is none).
using BypassChoice = std::function<int(const Graph&, int)>;
Candidate bypass_nodes(const Candidate& c, const std::vector<int>& bypass, const BypassChoice& replacement = {});
// The first operand of node `id` with its dtype and shape, or -1.
int operand_of_the_same_type(const Graph& g, int id);
// The same graph with every node's type inferred again (after inputs or attributes changed);
// VerifyError when a node no longer fits.
Graph reinfer_types(const Graph& g);
// g with input dims resized: `dims` sets single (input, dim) sizes, `sizes` maps every input dim
// of an old size (and the attributes naming that size) to a new one. Input strides keep their
// layout kind. VerifyError when the graph no longer fits.
Graph resize_inputs(const Graph& g, const std::map<std::pair<int, size_t>, int64_t>& dims, const std::map<int64_t, int64_t>& sizes);

}  // namespace reprokit
