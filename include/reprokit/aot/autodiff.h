// Reverse-mode autodiff: builds the joint forward+backward graph. One backward rule per op (table).
#pragma once
#include <string>
#include <vector>

#include "reprokit/ir/graph.h"

namespace reprokit {

struct JointGraph {
  Graph graph;  // inputs: the forward inputs, then one tangent per forward output
                // (named tangent_<output name>, same dtype and shape, contiguous)
                // outputs: the forward outputs, then one gradient per grad input
  int num_forward_outputs = 0;
  std::vector<int> grad_inputs;  // indices (into the forward inputs) of inputs that get a gradient
};

struct AutodiffOptions {
  // Ops treated as having no backward rule: lets tests and fault-injection demos reach the
  // missing-rule error, which the full rule table otherwise never raises.
  std::vector<Op> without_rules;
};

// Differentiates g w.r.t. its inputs marked `grad` (composite ops are decomposed first, so the
// forward part of the joint graph is decompose(g)) (floating only; a grad
// input of another dtype is a UserError naming it, and so is a graph with no grad input).
// Gradients have their input's dtype and shape; an input no output depends on gets zeros.
// Non-floating outputs and non-differentiable ops (comparisons, argmax) stop the gradient. Throws
// UserError naming the node when an op on the gradient path has no backward rule. The result is
// verified.
JointGraph build_joint_graph(const Graph& g, const AutodiffOptions& opts = {});
// Differentiable primitive ops have a rule; composite ops are differentiated through their
// decompositions.
bool has_backward_rule(Op op);

}  // namespace reprokit
