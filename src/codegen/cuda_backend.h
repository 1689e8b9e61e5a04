// What the cuda backend can reach on this machine (its compile function is a row of backend.cpp).
#pragma once
#include <memory>

#include "cpp_codegen.h"
#include "reprokit/codegen/compiled_graph.h"
#include "reprokit/codegen/lowering.h"

namespace reprokit {

// Whether NVRTC / the CUDA driver could be loaded (tests skip on what is missing).
bool nvrtc_available();
bool cuda_driver_available();
// Whether a kernel fault has made this process's CUDA context unusable (see backend.h).
bool cuda_context_lost();

}  // namespace reprokit
