// The strategy table: every reduction strategy, once, in run order.
#include "reprokit/ir/graph_utils.h"
#include "reprokit/minifier/strategies.h"
#include "strategy_list.h"

namespace reprokit {

const std::vector<Strategy>& strategy_table() {
  static const std::vector<Strategy> table = {
      truncate_strategy(),       // binary search for the last node that still fails
      cut_front_strategy(),      // binary search for the first node that is still needed
      bypass_strategy(),         // a->b->c becomes a->c, delta debugging over node sets
      cut_strategy(),            // replace node sets by inputs carrying their original values
      remove_outputs_strategy(), // drop returned values
      fill_inputs_strategy(InputFill::zeros),
      fill_inputs_strategy(InputFill::ones),
  };
  return table;
}

}  // namespace reprokit
