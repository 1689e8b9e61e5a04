// The strategy table: every reduction strategy, once, in run order. Graph strategies first (they
// remove the most per query), then the compiler's decisions, shapes, attributes and values.
#include "reprokit/ir/graph_utils.h"
#include "reprokit/minifier/strategies.h"
#include "strategy_list.h"

namespace reprokit {

namespace {
Strategy removing_nodes(Strategy s) {
  s.removes_nodes = true;
  return s;
}
Strategy guessing_ends(Strategy s) {
  s.guess_ends = true;
  return s;
}
}  // namespace

std::vector<Strategy> strategy_table_with(const std::vector<Strategy>& compiler_strategies) {
  std::vector<Strategy> table = {
      removing_nodes(truncate_strategy()),                  // binary search for the last node that still fails
      removing_nodes(guessing_ends(cut_front_strategy())),  // binary search for the first node that is still needed
      removing_nodes(guessing_ends(bypass_strategy())),     // a->b->c becomes a->c, delta debugging over node sets
      removing_nodes(cut_strategy()),                       // replace node sets by inputs carrying their original values
      removing_nodes(remove_outputs_strategy()),            // drop returned values
      removing_nodes(drop_operands_strategy()),             // drop operands of variadic ops (cat)
  };
  table.insert(table.end(), compiler_strategies.begin(), compiler_strategies.end());  // the fewest compiler passes, rewrites
  for (Strategy s : {
           resize_strategy(false),  // input dims to 1
           resize_strategy(true),   // input dims halved
           simplify_attributes_strategy(), fill_inputs_strategy(InputFill::zeros), fill_inputs_strategy(InputFill::ones),
           fill_inputs_strategy(InputFill::integers),
           zero_elements_strategy(),  // single elements to 0 (small inputs only)
       })
    table.push_back(std::move(s));
  return table;
}

}  // namespace reprokit
