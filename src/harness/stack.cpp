// The stack's stages, unwrapped (see stack.h).
#include "reprokit/harness/stack.h"

#include <fmt/format.h>

#include "reprokit/codegen/compiler.h"
#include "reprokit/ir/errors.h"

namespace reprokit {

StackResult run_stage(const std::string& stage, const Graph& g, const std::vector<Tensor>& inputs, const StackOptions& options) {
  if (options.train)
    throw UserError("--train is not available in this build: reverse-mode autodiff (aot) is not implemented yet");
  if (stage != "dynamo" && stage != "aot_forward" && stage != "aot_backward")
    throw UserError(fmt::format("unknown stage '{}' (expected dynamo, aot_forward or aot_backward)", stage));
  // For the forward-only stack, the dynamo-level backend is the inner compiler on the captured
  // graph (compile_graph decomposes first for cpp and aot_eager); the aot stages get the
  // decomposed graph directly.
  StackResult r;
  r.outputs = compile_graph(g, options.compile)->run(inputs);
  return r;
}

}  // namespace reprokit
