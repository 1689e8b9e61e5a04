// remove-outputs: drop returned values (and what only they needed). zero-inputs / one-inputs:
// replace input values by zeros or ones, so the repro does not depend on particular numbers.
#include <algorithm>

#include "reprokit/ir/errors.h"
#include "reprokit/ir/graph_utils.h"
#include "strategy_list.h"

namespace reprokit {

Strategy remove_outputs_strategy() {
  return {"remove-outputs", "drop returned values that the failure does not need (delta debugging)", SearchKind::delta,
          [](const Candidate& c) {
            std::vector<int> pos;
            for (int i = 0; i < static_cast<int>(c.graph.outputs.size()); ++i) pos.push_back(i);
            return c.graph.outputs.size() > 1 ? pos : std::vector<int>{};
          },
          [](const Candidate& c, const std::vector<int>& removed) {
            Graph g = c.graph;
            std::vector<int> outs;
            for (int i = 0; i < static_cast<int>(g.outputs.size()); ++i)
              if (std::find(removed.begin(), removed.end(), i) == removed.end()) outs.push_back(g.outputs[static_cast<size_t>(i)]);
            if (outs.empty()) throw UserError("removing every output");
            g.outputs = outs;
            return c.with_graph(prune_unused_inputs(eliminate_dead_code(g)));
          }};
}

Strategy fill_inputs_strategy(InputFill fill) {
  std::string name = fill == InputFill::zeros ? "zero-inputs" : "one-inputs";
  return {name, std::string("replace input values by ") + (fill == InputFill::zeros ? "zeros" : "ones") + " (delta debugging)",
          SearchKind::delta,
          [](const Candidate& c) {
            std::vector<int> ids;
            for (int i = 0; i < c.graph.num_inputs(); ++i) {
              auto it = c.fills.find(c.graph.node(i).name);
              if (it == c.fills.end() || it->second == InputFill::original) ids.push_back(i);
            }
            return ids;
          },
          [fill](const Candidate& c, const std::vector<int>& removed) {
            Candidate r = c;
            for (int i : removed) r.fills[c.graph.node(i).name] = fill;
            return r;
          }};
}

}  // namespace reprokit
