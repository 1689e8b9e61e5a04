// The cuda backend is not built yet: CUDA source generation and NVRTC compilation are planned
// (issue 3); until then selecting it is a clear usage error rather than a silent fallback.
#include "cuda_backend.h"

#include "reprokit/ir/errors.h"

namespace reprokit {

std::unique_ptr<CompiledGraph> compile_cuda(const Graph& lowered, const NodeInjections&, const CompileOptions&) {
  throw UserError("the cuda backend is not available in this build of reprokit (graph " + lowered.name +
                  "): CUDA code generation is not implemented yet; use --backend cpp");
}

}  // namespace reprokit
