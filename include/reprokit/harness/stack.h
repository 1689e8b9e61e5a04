// The compile stack as the harness sees it: capture -> backend (aot: decompose, autodiff,
// partition) -> inner compiler -> run. The unwrapped stage functions are what the harness wraps
// (REPRO_AFTER) and what `repro`, `minify` and `bisect` replay on a saved graph.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "reprokit/codegen/compile_options.h"
#include "reprokit/ir/graph.h"
#include "reprokit/runtime/tensor.h"

namespace reprokit {

struct StackOptions {
  CompileOptions compile;  // compile.backend: eager, aot_eager, cpp, cuda
  bool train = false;      // also run the backward pass on the sum of the outputs
};

struct StackResult {
  std::vector<Tensor> outputs;
  std::vector<Tensor> grads;  // with train: one per input marked `grad`, in input order
};

// Stages by name, as recorded in bundles: "dynamo" (the whole backend on the captured graph),
// "aot_forward" / "aot_backward" (the inner compiler on one graph after aot).
// Runs one stage unwrapped (no harness), raising CompileFailure on compile/run errors.
// For "dynamo" with train the result has grads; for aot stages only outputs.
StackResult run_stage(const std::string& stage, const Graph& g, const std::vector<Tensor>& inputs,
                      const StackOptions& options);

}  // namespace reprokit
