// Constructors of the strategies of strategy_table_with(), one per file.
#pragma once
#include "reprokit/minifier/strategies.h"

namespace reprokit {

Strategy truncate_strategy();
Strategy cut_front_strategy();
Strategy bypass_strategy();
Strategy cut_strategy();
Strategy remove_outputs_strategy();
Strategy drop_operands_strategy();
Strategy fill_inputs_strategy(InputFill fill);
Strategy zero_elements_strategy();
Strategy resize_strategy(bool halve);  // halve-shapes, or shrink-shapes (to 1)
Strategy simplify_attributes_strategy();

}  // namespace reprokit
