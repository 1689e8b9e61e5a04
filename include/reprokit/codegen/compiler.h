// The inner compiler: lowering + passes + codegen for the cpp and cuda backends, and the
// reference-interpreter "compiler" used by eager / aot_eager. compile_graph is the one entry point.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "reprokit/codegen/compile_options.h"
#include "reprokit/codegen/failure_kind.h"
#include "reprokit/ir/graph.h"
#include "reprokit/runtime/tensor.h"

namespace reprokit {

// A failure of the compile stack, with its kind (compile_error, runtime_error, ...) for the
// harness. A crash or hang is not an exception: it happens for real, in the process.
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
};

// Compiles g with options.backend (cpp and cuda decompose it first). Throws CompileFailure
// {compile_error} with the system compiler's / NVRTC's message on failure.
std::unique_ptr<CompiledGraph> compile_graph(const Graph& g, const CompileOptions& options);

struct PassRecord;
// What compile_graph hands to code generation for cpp/cuda: decomposed, then optimised by the
// enabled passes (fusion recorded as "group" attributes). Records each pass when asked.
Graph lower_for_codegen(const Graph& g, const CompileOptions& options, std::vector<PassRecord>* records);

// Nodes of g and of its decomposition that the options' injections target (by op), merged with
// options.injection_nodes.
std::map<std::string, NodeFault> resolve_injections(const Graph& g, const CompileOptions& options);

// How many times this process invoked the system compiler (a cache hit does not).
int compiler_invocations();
// What the system compiler printed on this process's last successful compile: its warnings, as
// generated code compiles with warnings on ("" when clean).
std::string last_compiler_output();

}  // namespace reprokit
