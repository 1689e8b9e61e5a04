// The parts of a bug report that speak a foreign compiler's own terms, for a repro whose backend is
// a compiler that is not reprokit's and reads the exported ONNX model (onnxruntime, openvino, tvm,
// iree): a title in plain words, a standalone reproducer in the compiler's own Python API with the
// float64 values it is judged against, the compiler's version and options, and which of its
// optimisers causes the failure.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reprokit/harness/repro_spec.h"
#include "reprokit/support/files.h"

namespace reprokit {

struct CompilerReport {
  std::string title;    // "ONNX Runtime: session creation fails on pad -> avg_pool2d (rewrite rule Pad_Fusion)"
  std::string section;  // BUG_REPORT.md's section on the compiler
};

// For a backend with a report of its own: writes its reproducer (repro_<backend>.py) and
// repro_expected/ into d and returns the report's parts; nullopt (and removes those files) for any
// other backend.
// `bisection`: bisect_switches' answer for this repro, when it was searched.
std::optional<CompilerReport> write_compiler_report(const Dir& d, const Graph& g, const std::vector<Tensor>& inputs, const ReproSpec& spec,
                                                    const nlohmann::json* bisection);

}  // namespace reprokit
