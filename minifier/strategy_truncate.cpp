// truncate: the graph up to a node, returning only that node. Units are body nodes from the
// last one backwards; removing the first k keeps the prefix that ends k nodes earlier.
#include "reprokit/ir/graph_utils.h"
#include "strategy_list.h"

namespace reprokit {

Strategy truncate_strategy() {
  return {"truncate", "keep the graph up to one node and return only that node (binary search)", SearchKind::prefix,
          [](const Candidate& c) {
            auto ids = body_nodes(c.graph);
            if (!ids.empty()) ids.pop_back();  // the last node itself is the k = 0 case
            return std::vector<int>(ids.rbegin(), ids.rend());
          },
          [](const Candidate& c, const std::vector<int>& removed) -> std::optional<Candidate> {
            auto ids = body_nodes(c.graph);
            if (removed.empty() || removed.size() >= ids.size()) return removed.empty() ? std::optional<Candidate>(c) : std::nullopt;
            int last = ids[ids.size() - 1 - removed.size()];
            Candidate r;
            r.graph = extract_subgraph(c.graph, {last});
            for (auto& [k, v] : c.fills)
              if (r.graph.find(k) >= 0) r.fills[k] = v;
            return r;
          }};
}

}  // namespace reprokit
