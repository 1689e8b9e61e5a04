// The cuda backend's entry point (compile_graph dispatches here for backend "cuda").
#pragma once
#include <memory>

#include "cpp_codegen.h"
#include "reprokit/codegen/compiler.h"

namespace reprokit {

// Whether NVRTC / the CUDA driver could be loaded (tests skip on what is missing).
bool nvrtc_available();
bool cuda_driver_available();

std::unique_ptr<CompiledGraph> compile_cuda(const Graph& lowered, const NodeInjections& injections, const CompileOptions& options);

}  // namespace reprokit
