// What every backend returns (CompiledGraph) and how the compile stack reports a failure of its
// own (CompileFailure). A crash or hang is not an exception: it happens for real, in the process.
#pragma once
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "reprokit/codegen/failure_kind.h"
#include "reprokit/runtime/tensor.h"

namespace reprokit {

// A failure of the compile stack, with its kind (compile_error, runtime_error, ...) for the harness.
struct CompileFailure : std::runtime_error {
  CompileFailure(FailureKind kind, const std::string& msg) : std::runtime_error(msg), kind(kind) {}
  FailureKind kind;  // compile_error or runtime_error
};

class CompiledGraph {
 public:
  virtual ~CompiledGraph() = default;
  // Runs on inputs matching the graph's input types; returns the outputs.
  // Throws CompileFailure{runtime_error} when the generated code reports an error.
  virtual std::vector<Tensor> run(const std::vector<Tensor>& inputs) = 0;
  virtual std::string source() const { return {}; }  // generated source, when there is one
  // Kernel timing, where the backend has it (cpp): what each kernel computes, and a run that adds
  // each kernel's wall time in seconds to (*seconds)[k] (sized to the labels).
  virtual std::vector<std::string> kernel_labels() const { return {}; }
  virtual std::vector<Tensor> run_timing_kernels(const std::vector<Tensor>& inputs, std::vector<double>* seconds) {
    (void)seconds;
    return run(inputs);
  }
};

}  // namespace reprokit
