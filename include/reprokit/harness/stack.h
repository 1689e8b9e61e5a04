// The compile stack as the harness sees it: capture -> backend (aot: decompose, autodiff,
// partition) -> inner compiler -> run. The unwrapped stage functions are what the harness wraps
// (REPRO_AFTER) and what `repro`, `minify` and `bisect` replay on a saved graph.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "reprokit/aot/partition.h"
#include "reprokit/codegen/compile_options.h"
#include "reprokit/ir/graph.h"
#include "reprokit/runtime/tensor.h"

namespace reprokit {

class CompiledGraphs;

struct StackOptions {
  CompileOptions compile;  // compile.backend: a row of the backend table
  bool train = false;      // also run the backward pass on the sum of the outputs
  // Where given: graphs compiled for the same question before are run again (compiled_graphs.h).
  CompiledGraphs* compiled = nullptr;
};

struct StackResult {
  std::vector<Tensor> outputs;
  std::vector<Tensor> grads;  // with train: one per input marked `grad`, in input order
};

// Stages by name, as recorded in bundles: "dynamo" (the whole backend on the captured graph),
// "aot_forward" / "aot_backward" (the inner compiler on one graph after aot).
// Runs one stage unwrapped (no harness), raising CompileFailure on compile/run errors.
// For "dynamo" with train the result has grads; for aot stages only outputs.
StackResult run_stage(const std::string& stage, const Graph& g, const std::vector<Tensor>& inputs, const StackOptions& options);

// The aot transform of a captured graph for training: the joint graph of its decomposition and
// the forward / backward graphs partitioned from it.
struct TrainingGraphs {
  JointGraph joint;
  PartitionedGraphs parts;
};
TrainingGraphs build_training_graphs(const Graph& captured);

// Tangents of ones for the first `count` outputs: the gradient of the sum of the outputs.
std::vector<Tensor> ones_like_outputs(const std::vector<Tensor>& outputs, size_t count);

// Training through the partitioned graphs: runs the forward graph (stage "aot_forward"), then the
// backward graph (stage "aot_backward") on the values it saved and tangents of ones. `run` runs
// one graph: (stage, graph, inputs) -> outputs.
using GraphRunner = std::function<std::vector<Tensor>(const std::string& stage, const Graph& g, const std::vector<Tensor>& inputs)>;
StackResult run_training(const TrainingGraphs& t, const std::vector<Tensor>& inputs, const GraphRunner& run);

}  // namespace reprokit
