// Reduction strategies, declared once in a table that drives run order and the CLI's --only,
// --skip and --list-strategies. A strategy enumerates removable units of a candidate in a fixed
// order and builds the candidate with a set of them removed; the engine does the searching and
// owns validity (it verifies every candidate; an edit that throws UserError is simply invalid).
#pragma once
#include <functional>
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
};

const std::vector<Strategy>& strategy_table();

// Building blocks the strategies share (exposed for their tests).
std::vector<int> body_nodes(const Graph& g);
// Turns `cut` nodes into inputs (keeping their names), dropping what nothing needs any more.
Candidate cut_nodes(const Candidate& c, const std::vector<int>& cut);
// Replaces each node in `bypass` by its first operand of the same dtype and shape.
Candidate bypass_nodes(const Candidate& c, const std::vector<int>& bypass);

}  // namespace reprokit
