// Reverse-mode autodiff: builds the joint forward+backward graph. One backward rule per op (table).
#pragma once
#include <string_view>
#include <vector>

#include "reprokit/ir/graph.h"

namespace reprokit {

struct JointGraph {
  Graph graph;                  // inputs: the forward inputs, then one tangent per forward output
                                // outputs: the forward outputs, then one gradient per grad input
  int num_forward_outputs = 0;
  std::vector<int> grad_inputs;  // indices (into the forward inputs) of inputs that get a gradient
};

// Differentiates g (decomposed or not) w.r.t. its inputs marked `grad` (floating only).
// Throws UserError naming the node when an op on the gradient path has no backward rule.
JointGraph build_joint_graph(const Graph& g);
bool has_backward_rule(std::string_view op);

}  // namespace reprokit
