// The stack's stages, unwrapped (see stack.h).
#include "reprokit/harness/stack.h"

#include <fmt/format.h>

#include "reprokit/aot/autodiff.h"
#include "reprokit/aot/decompose.h"
#include "reprokit/aot/partition.h"
#include "reprokit/codegen/compiler.h"
#include "reprokit/harness/compiled_graphs.h"
#include "reprokit/support/errors.h"

namespace reprokit {

std::vector<Tensor> ones_like_outputs(const std::vector<Tensor>& outputs, size_t count) {
  std::vector<Tensor> t;
  for (size_t k = 0; k < count; ++k) {
    Tensor one = Tensor::zeros(outputs[k].dtype(), outputs[k].shape());
    for (int64_t i = 0; i < one.numel(); ++i) one.set(i, 1.0);
    t.push_back(one);
  }
  return t;
}

TrainingGraphs build_training_graphs(const Graph& captured) {
  TrainingGraphs t;
  t.joint = build_joint_graph(captured);
  t.parts = partition_joint_graph(t.joint);
  return t;
}

StackResult run_training(const TrainingGraphs& t, const std::vector<Tensor>& inputs, const GraphRunner& run) {
  std::vector<Tensor> fwd = run("aot_forward", t.parts.forward, inputs);
  auto nfo = static_cast<size_t>(t.parts.num_forward_outputs);
  StackResult r;
  r.outputs.assign(fwd.begin(), fwd.begin() + static_cast<long>(nfo));
  std::vector<Tensor> bwd_inputs(fwd.begin() + static_cast<long>(nfo), fwd.end());
  for (auto& one : ones_like_outputs(r.outputs, nfo)) bwd_inputs.push_back(one);
  r.grads = run("aot_backward", t.parts.backward, bwd_inputs);
  return r;
}

namespace {
// g compiled (or the one compiled for this question before, where `kept` is given) and run.
std::vector<Tensor> run_compiled(const Graph& g, const CompileOptions& options, CompiledGraphs* kept, const std::vector<Tensor>& inputs) {
  if (kept) return kept->compiled(g, options).run(inputs);
  return compile_graph(g, options)->run(inputs);
}
}  // namespace

StackResult run_stage(const std::string& stage, const Graph& g, const std::vector<Tensor>& inputs, const StackOptions& options) {
  if (stage != "dynamo" && stage != "aot_forward" && stage != "aot_backward")
    throw UserError(fmt::format("unknown stage '{}' (expected dynamo, aot_forward or aot_backward)", stage));
  StackResult r;
  if (stage != "dynamo" || !options.train) {
    // The dynamo-level backend of the forward-only stack is the inner compiler on the captured
    // graph (compile_graph decomposes first); aot stages get one partitioned graph directly.
    r.outputs = run_compiled(g, options.compile, options.compiled, inputs);
    return r;
  }
  // Training at the dynamo level: aot (decompose, autodiff, partition), then the inner compiler on
  // the forward graph and on the backward graph, with tangents of ones (loss = sum of outputs).
  // Injections name ops of the captured graph (gelu, linear) that aot decomposes away: resolve
  // them to node names first, as the aot-level harness does; the decomposition keeps the name of
  // the node that computes a composite's value, so the injection follows it into the forward graph.
  CompileOptions compile = options.compile;
  compile.injection_nodes = resolve_injections(g, options.compile);
  return run_training(build_training_graphs(g), inputs, [&](const std::string&, const Graph& part, const std::vector<Tensor>& in) {
    return run_compiled(part, compile, options.compiled, in);
  });
}

}  // namespace reprokit
