// bypass: replace a node's uses by its operand of the same dtype and shape, so a chain a->b->c
// can become a->c without turning anything into an input.
#include "strategy_list.h"

namespace reprokit {

Strategy bypass_strategy() {
  return {"bypass", "replace nodes by an operand of the same dtype and shape (delta debugging)", SearchKind::delta,
          [](const Candidate& c) {
            std::vector<int> ids;
            for (int id : body_nodes(c.graph)) {
              const Node& n = c.graph.node(id);
              for (auto& o : n.operands)
                if (o.is_value() && c.graph.node(o.value).type.dtype == n.type.dtype && c.graph.node(o.value).type.shape == n.type.shape) {
                  ids.push_back(id);
                  break;
                }
            }
            return ids;
          },
          bypass_nodes};
}

}  // namespace reprokit
