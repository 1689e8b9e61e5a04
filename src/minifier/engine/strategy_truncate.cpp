// truncate: the graph up to a node, returning only that node. Units are body nodes from the
// last one backwards; removing the first k keeps the prefix that ends k nodes earlier.
#include "reprokit/support/errors.h"
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
          [](const Candidate& c, const std::vector<int>& removed) {
            auto ids = body_nodes(c.graph);
            if (removed.empty()) return c;
            if (removed.size() >= ids.size()) throw UserError("truncating every node");
            return c.with_graph(extract_subgraph(c.graph, {ids[ids.size() - 1 - removed.size()]}));
          }};
}

}  // namespace reprokit
