// remove-outputs: drop returned values (and what only they needed). Value strategies: replace
// input values by zeros, ones or small integers, and single elements by 0, so the repro does not
// depend on particular numbers.
#include <algorithm>

#include "reprokit/support/errors.h"
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
  std::string what = fill == InputFill::zeros ? "zeros" : fill == InputFill::ones ? "ones" : "small integers (rounded, in [-4, 4])";
  std::string name = fill == InputFill::zeros ? "zero-inputs" : fill == InputFill::ones ? "one-inputs" : "integer-inputs";
  return {name, "replace input values by " + what + " (delta debugging)", SearchKind::delta,
          [](const Candidate& c) {
            std::vector<int> ids;
            for (int i = 0; i < c.graph.num_inputs(); ++i)
              if (c.edit(c.graph.node(i).name).fill == InputFill::original) ids.push_back(i);
            return ids;
          },
          [fill](const Candidate& c, const std::vector<int>& removed) {
            Candidate r = c;
            for (int i : removed) r.edits[c.graph.node(i).name].fill = fill;
            return r;
          }};
}

namespace {
// Element-wise zeroing is worth it only once the inputs are small.
constexpr int64_t kMaxZeroableElements = 64;
}  // namespace

Strategy zero_elements_strategy() {
  return {"zero-elements", "set single input elements to 0, keeping only the ones that matter (delta debugging; small inputs)", SearchKind::delta,
          [](const Candidate& c) {
            std::vector<int> units;  // input index * 2^20 + element
            int64_t total = 0;
            for (int i = 0; i < c.graph.num_inputs(); ++i) total += c.graph.node(i).type.numel();
            if (total > kMaxZeroableElements) return units;
            for (int i = 0; i < c.graph.num_inputs(); ++i) {
              const InputEdit& e = c.edit(c.graph.node(i).name);
              if (e.fill == InputFill::zeros) continue;
              for (int64_t k = 0; k < c.graph.node(i).type.numel(); ++k)
                if (std::find(e.zeroed.begin(), e.zeroed.end(), k) == e.zeroed.end()) units.push_back(i * (1 << 20) + static_cast<int>(k));
            }
            return units;
          },
          [](const Candidate& c, const std::vector<int>& removed) {
            Candidate r = c;
            for (int u : removed) {
              auto& z = r.edits[c.graph.node(u >> 20).name].zeroed;
              z.push_back(u & ((1 << 20) - 1));
              std::sort(z.begin(), z.end());
            }
            return r;
          }};
}

}  // namespace reprokit
