// Decompositions: rewrite every composite op (linear, gelu, silu, sigmoid, softmax, log_softmax,
// layer_norm, mean, var) into primitive ops. A table holds one rule per composite op.
#pragma once
#include <string_view>

#include "reprokit/ir/graph.h"

namespace reprokit {

// Returns an equivalent graph with no composite op left. Value names of the original nodes are
// kept for the node that produces the original value; new nodes get fresh names. Verified.
Graph decompose(const Graph& g);
bool has_decomposition(std::string_view op);

}  // namespace reprokit
