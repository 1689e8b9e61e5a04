// The backends compile_graph can hand a graph to, as one table: callers ask the table what a
// backend does instead of comparing names. A new backend is one file and one row
// (docs/ADDING_A_BACKEND.md).
#pragma once
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "reprokit/codegen/backend_switches.h"
#include "reprokit/codegen/compile_options.h"
#include "reprokit/codegen/compiled_graph.h"
#include "reprokit/ir/graph.h"

namespace reprokit {

// The ops a compiler's findings are named in (triage groups them so): reprokit's own, the ONNX
// op types of the exported model it reads, or the ATen ops of the PyTorch program it compiles.
enum class OpLanguage { reprokit, onnx, aten };

struct Backend {
  std::string_view name;
  std::string_view summary;  // what runs the graph, in a few words (`reprokit run --help`)
  // The harness's aot stage (decompositions, autodiff, partitioning) runs in front of it, so
  // REPRO_AFTER=aot has a graph to hand over.
  bool has_aot_stage;
  // reprokit's optimisation passes run inside it: pass limits, --inject-pass, bisect's pass steps
  // and the minifier's compiler strategies apply, and a repro names the passes it keeps.
  bool runs_passes;
  // The compiler's own optimisation switches, for bisect to walk; nullptr when it exposes none
  // (or, for reprokit's own backends, when its passes are the switches).
  const BackendSwitches* switches;
  // The reference interpreter, no compiler: the stages bisect and the minifier's stage strategy
  // start from, in table order (eager before aot_eager).
  bool reference;
  // Its compiled graphs time each kernel (CompiledGraph::run_timing_kernels; reprokit run --profile).
  bool times_kernels;
  OpLanguage ops;
  std::unique_ptr<CompiledGraph> (*compile)(const Graph& g, const CompileOptions& options);
};

// Every backend, in the order help texts list them.
std::span<const Backend> backend_table();
const Backend* find_backend(std::string_view name);  // nullptr when there is none by that name
// The backend called `name`; throws UserError naming the choices when there is none.
const Backend& backend_named(std::string_view name);
std::string backend_choices();  // every backend's name, "a, b or c"
// Whether a backend's device is lost to this process: after a fault in a CUDA kernel (an illegal
// address, a trap) the driver keeps failing every later call, and only a new process can use the
// GPU again. A process that runs many graphs (the minifier's workers) ends after its answer then,
// and a fresh one takes over.
bool device_lost_in_this_process();
// Whether reprokit's passes run for these options: the backend runs them and they are not off.
bool passes_run(const CompileOptions& options);

}  // namespace reprokit
