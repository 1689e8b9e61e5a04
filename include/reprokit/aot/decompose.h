// Decompositions: rewrite every composite op (ops.def's COMPOSITE flag: linear, gelu, silu,
// sigmoid, softmax, log_softmax, layer_norm, batch_norm, group_norm, instance_norm,
// pixel_shuffle, pixel_unshuffle, einsum, grid_sample, affine_grid, mean, var) into primitive ops,
// one rule per op.
#pragma once

#include "reprokit/ir/graph.h"

namespace reprokit {

// Returns an equivalent graph with no composite op left. Value names of the original nodes are
// kept for the node that produces the original value; new nodes get fresh names. Verified.
Graph decompose(const Graph& g);
bool has_decomposition(Op op);

}  // namespace reprokit
