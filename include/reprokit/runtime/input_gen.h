// Seeded input generation: random tensors that honour declared strides and give integer inputs
// valid, non-trivial values (embedding and gather indices in range, never all zeros).
#pragma once
#include <cstdint>
#include <vector>

#include "reprokit/ir/graph.h"
#include "reprokit/runtime/tensor.h"

namespace reprokit {

// One tensor per graph input. Floats ~ N(0,1) scaled; integer inputs used as indices get values in
// [0, size of the indexed dim); other integers in [-8, 8]; bools ~ Bernoulli(0.5).
std::vector<Tensor> generate_inputs(const Graph& g, uint64_t seed);
// The same, leaving an empty tensor for each input marked in `provided` (whose values the caller
// has, e.g. a model's weights): the other inputs get the same values as above.
std::vector<Tensor> generate_inputs(const Graph& g, uint64_t seed, const std::vector<bool>& provided);

}  // namespace reprokit
