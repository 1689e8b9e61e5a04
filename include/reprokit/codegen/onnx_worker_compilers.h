// The compilers reprokit hands its exported ONNX model to through a Python worker (openvino, tvm,
// iree), as a bug report names them: what a reproducer in the compiler's own API needs to run
// the model as the failing run ran it.
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "reprokit/codegen/compile_options.h"

namespace reprokit {

struct OnnxWorkerCompiler {
  std::string backend;   // "tvm"
  std::string compiler;  // "TVM"
  // The options its worker's compile() takes for these backend options (validated: UserError
  // for a bad one, as a run would say).
  nlohmann::json options;
};

// For a backend run through the ONNX worker; nullopt for any other.
std::optional<OnnxWorkerCompiler> onnx_worker_compiler(const CompileOptions& options);

// The compiler's version as its worker reports it ("TVM 0.27.0"); "unknown" when it cannot start.
std::string onnx_worker_compiler_version(const std::string& backend);

}  // namespace reprokit
