// Small .rk graphs, one or more per differentiable op, shared by the autodiff and partition tests.
#pragma once
#include <string>
#include <vector>

namespace reprokit::testing {

// f32 graphs (turn them into f64 with as_f64 for finite differences) whose inputs marked grad
// reach every differentiable op of the op set, in several forms (broadcasting, scalars, attrs).
const std::vector<std::string>& differentiable_op_graphs();

}  // namespace reprokit::testing
