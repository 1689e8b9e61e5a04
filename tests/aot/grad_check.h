// Shared helpers of the aot tests: running joint and partitioned graphs on seeded inputs with
// tangents of ones (loss = sum of the outputs), and float64 central finite differences.
#pragma once
#include <string>
#include <vector>

#include "reprokit/aot/autodiff.h"
#include "reprokit/aot/partition.h"
#include "reprokit/runtime/tensor.h"

namespace reprokit::testing {

// Ones of each float output's dtype and shape (zeros for non-float outputs, which get no tangent).
std::vector<Tensor> ones_tangents(const Graph& g);
// Runs the joint graph on forward inputs + ones tangents; returns all its outputs.
std::vector<Tensor> run_joint(const JointGraph& j, const std::vector<Tensor>& inputs, bool f64);
// Runs forward, then backward on the saved values + ones tangents; forward outputs then gradients.
// In f64 mode the saved values are rounded to their declared dtype at the boundary.
std::vector<Tensor> run_partitioned(const PartitionedGraphs& p, const std::vector<Tensor>& inputs, bool f64);
// d(sum of all float outputs)/d(input k) for each grad input, by central differences in float64.
// The graph's floating inputs must be f64 (so a perturbation is not rounded away).
std::vector<std::vector<double>> finite_difference_grads(const Graph& g, const std::vector<Tensor>& inputs, const std::vector<int>& grad_inputs,
                                                         double h = 1e-6);
// Largest |a-b| / (1 + |a|) over two tensor lists of equal layout; "what" names the mismatch.
double max_rel_diff(const std::vector<Tensor>& a, const std::vector<Tensor>& b);
// The same graph text with every f32 replaced by f64.
std::string as_f64(std::string text);

}  // namespace reprokit::testing
