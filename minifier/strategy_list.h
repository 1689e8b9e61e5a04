// Constructors of the strategies of strategy_table(), one per file.
#pragma once
#include "reprokit/minifier/strategies.h"

namespace reprokit {

Strategy truncate_strategy();
Strategy cut_front_strategy();
Strategy bypass_strategy();
Strategy cut_strategy();
Strategy remove_outputs_strategy();
Strategy fill_inputs_strategy(InputFill fill);

}  // namespace reprokit
