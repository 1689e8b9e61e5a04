// The inner compiler's entry point: compile_graph hands the graph to the backend the options name
// (backend.h: eager and aot_eager interpret it, cpp and cuda lower it and generate code).
#pragma once
#include <memory>
#include <string>

#include "reprokit/codegen/compile_options.h"
#include "reprokit/codegen/compiled_graph.h"
#include "reprokit/codegen/lowering.h"
#include "reprokit/ir/graph.h"

namespace reprokit {

// Compiles g with options.backend. Throws CompileFailure{compile_error} with the system
// compiler's / NVRTC's message on failure, UserError for an unknown backend.
std::unique_ptr<CompiledGraph> compile_graph(const Graph& g, const CompileOptions& options);

// The cpp backend's toolchain (cpp_toolchain.cpp): how many times this process invoked the system
// compiler (a cache hit does not), and what it printed on the last successful compile: its
// warnings, as generated code compiles with warnings on ("" when clean).
int compiler_invocations();
std::string last_compiler_output();
// The compile cache's directory: `configured`, else $REPRO_CACHE_DIR, else ~/.cache/reprokit, else
// $TMPDIR/reprokit-cache-<uid>. It must be this user's alone (compile_cache_dir.cpp).
std::string default_cache_dir(const std::string& configured);

}  // namespace reprokit
