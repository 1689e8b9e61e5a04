// bypass: replace a node's uses by its operand of the same dtype and shape, so a chain a->b->c
// can become a->c without turning anything into an input.
#include "strategy_list.h"

namespace reprokit {

Strategy bypass_strategy() {
  return {"bypass", "replace nodes by an operand of the same dtype and shape (delta debugging)", SearchKind::delta,
          [](const Candidate& c) {
            std::vector<int> ids;
            for (int id : body_nodes(c.graph))
              if (operand_of_the_same_type(c.graph, id) >= 0) ids.push_back(id);
            return ids;
          },
          [](const Candidate& c, const std::vector<int>& bypass) { return bypass_nodes(c, bypass); }};
}

}  // namespace reprokit
