// The accuracy rule: compiled outputs against eager (original precision) and the float64
// reference. Pass when close to eager within the tolerance, or when the compiled RMSE against
// float64 is at most k * eager's RMSE against float64 + tolerance / 10 (k = 2, or 3 for f16/bf16).
// Integer and bool outputs must match eager exactly; NaN/inf must appear where the reference has
// them; a dtype or shape mismatch fails.
#pragma once
#include <optional>
#include <vector>

#include "reprokit/harness/failure.h"
#include "reprokit/ir/graph.h"
#include "reprokit/runtime/tensor.h"

namespace reprokit {

double default_tolerance(DType t);

// Compares each compiled output with the graph's eager and float64 outputs. Returns an empty
// Failure when every output passes; otherwise kind "accuracy" and signature "accuracy" (some
// floating output fails) or "accuracy-integer" (only integer/bool outputs differ).
Failure check_accuracy(const Graph& g, const std::vector<Tensor>& inputs, const std::vector<Tensor>& compiled,
                       std::optional<double> tolerance);

// The rule for one output, given eager and reference values; "" when it passes, else why not.
std::string compare_output(const std::string& name, const Tensor& compiled, const Tensor& eager, const Tensor& reference,
                           double tolerance);

}  // namespace reprokit
