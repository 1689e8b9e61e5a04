// The accuracy rule: compiled outputs against eager (the graph's precision) and the float64
// reference. Two forms:
//  - auto (the default; REPRO_TOLERANCE unset or "auto"): each floating output's error against
//    float64 must stay within kFloorFactor times its noise floor (harness/noise_floor.h: the widest
//    deviation that legitimate ways of computing the graph show), as an RMS over the tensor and as
//    its largest element, plus kUlpSlack ulps of the output's scale (the factor is wider for
//    outputs of few elements: floor_factor). docs/ACCURACY.md has the
//    formula and a worked example.
//  - a fixed tolerance (REPRO_TOLERANCE=number): pass when close to eager within the tolerance, or
//    when the compiled RMSE against float64 is at most k * eager's RMSE + tolerance / 10 (k = 2, or
//    3 for f16/bf16).
// In both, integer and bool outputs must match eager exactly; NaN/inf must appear where the
// reference has them; a dtype or shape mismatch fails.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "reprokit/harness/failure.h"
#include "reprokit/harness/noise_floor.h"
#include "reprokit/ir/graph.h"
#include "reprokit/runtime/tensor.h"

namespace reprokit {

// The compiled error may be kFloorFactor * (1 + 2 / sqrt(elements)) times the floor: the floor of
// a small output rests on few numbers (a scalar: one per variant), so it gets more room.
inline constexpr double kFloorFactor = 3;
inline constexpr double kUlpSlack = 4;  // plus this many ulps of the output's largest value

// Each element is also judged against its own floor (its largest deviation among the variants):
// a point of a sweep that is 50% wrong hides inside the tensor's RMS when its value is small.
// It may reach kElementFactor times its floor plus kElementUlps ulps of its own float64 value
// (plus the smallest normal number, so flushing a subnormal to zero is no bug).
inline constexpr double kElementFactor = 16;
inline constexpr double kElementUlps = 64;

double default_tolerance(DType t);  // the fixed rule's default (1e-3; 1e-2 for f16/bf16)

// Compares each compiled output with the graph's eager and float64 outputs. `tolerance`: a fixed
// tolerance, or nullopt for auto (the noise floor is measured only when an output's error exceeds
// what eager's own error allows). Returns an empty Failure when every output passes; otherwise kind
// "accuracy" and signature "accuracy" (some floating output fails) or "accuracy-integer" (only
// integer/bool outputs differ).
Failure check_accuracy(const Graph& g, const std::vector<Tensor>& inputs, const std::vector<Tensor>& compiled, std::optional<double> tolerance);

// One output's share of check_accuracy's verdict, for reports with a line per output.
struct OutputVerdict {
  std::string why;                 // "" when the output passes
  std::optional<Deviation> error;  // its error against float64: floating outputs of the reference's dtype and shape
  // For an output that passes only because a decision near a kink (a relu input or a comparison
  // within the noise of its threshold) may legitimately go the other way, one line saying so:
  // a difference this large between two backends is then not a bug. Else "".
  std::string decided_at_kink;
};
// check_accuracy, also giving each output's verdict in `verdicts` (one per output compared:
// the first min(g.outputs.size(), compiled.size())).
Failure check_accuracy(const Graph& g, const std::vector<Tensor>& inputs, const std::vector<Tensor>& compiled, std::optional<double> tolerance,
                       std::vector<OutputVerdict>& verdicts);

// The fixed rule for one output, given eager and reference values; "" when it passes, else why not.
std::string compare_output(const std::string& name, const Tensor& compiled, const Tensor& eager, const Tensor& reference, double tolerance);

// The auto rule for one output, given its noise floor; "" when it passes, else why not.
std::string compare_output_to_floor(const std::string& name, const Tensor& compiled, const Tensor& eager, const Tensor& reference,
                                    const OutputNoise& floor);

// For a value that passes the auto rule given `floor`: the one line saying it passes only because a
// decision near a kink may go the other way (OutputVerdict::decided_at_kink), else "". `what` names
// the value in that line ("output %y", "%y").
std::string decided_at_kink(const std::string& what, const Tensor& compiled, const Tensor& reference, const OutputNoise& floor);

double floor_factor(int64_t elements);  // kFloorFactor, widened for small outputs (above)

// What the auto rule allows an output: its error against float64 may reach these.
struct Allowance {
  double rms = 0, max = 0;
};
// `reference`: the output's float64 values; `dtype`: the output's own (the ulps are its).
Allowance allowance(const OutputNoise& floor, const std::vector<double>& reference, DType dtype);

}  // namespace reprokit
