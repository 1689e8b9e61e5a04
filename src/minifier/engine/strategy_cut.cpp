// cut-front and cut: turn nodes into graph inputs that carry the value the node had in the
// original run, so the nodes feeding them disappear (value-dependent bugs survive the cut).
#include "strategy_list.h"

namespace reprokit {

Strategy cut_front_strategy() {
  Strategy s{"cut-front", "replace the first nodes by inputs holding their original values (binary search)", SearchKind::prefix,
             [](const Candidate& c) { return body_nodes(c.graph); }, cut_nodes};
  s.units_are_nodes = true;
  return s;
}

Strategy cut_strategy() {
  return {"cut", "replace sets of nodes by inputs holding their original values (delta debugging)", SearchKind::delta,
          [](const Candidate& c) { return body_nodes(c.graph); }, cut_nodes};
}

}  // namespace reprokit
