// How the onnxruntime backend reaches ONNX Runtime: examples/ort_check/check.mjs under Node.js,
// with the backend's options (graph_optimization_level, disabled_optimizers) passed as that
// script's environment, and the optimisation switches `reprokit bisect` walks.
#pragma once
#include <map>
#include <string>

#include "reprokit/codegen/backend_switches.h"
#include "reprokit/codegen/compile_options.h"

namespace reprokit {

// $REPRO_ORT_RUNNER, else the script of this source tree.
std::string ort_runner_script();
// The runner's environment for these backend options; UserError naming the option when ONNX
// Runtime takes no such option or value.
std::map<std::string, std::string> ort_runner_env(const CompileOptions& options);
// ONNX Runtime's graph optimisation levels and optimisers, for the backend table.
extern const BackendSwitches kOnnxRuntimeSwitches;

}  // namespace reprokit
