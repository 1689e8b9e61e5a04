// Lowering of a decomposed, optimised graph to C++ source: one loop nest per kernel (a fusion
// group, or a standalone matmul / view / cat / embedding / gather / full / reduction node).
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "reprokit/codegen/failure_kind.h"
#include "reprokit/ir/graph.h"

namespace reprokit {

// Fault injections resolved to nodes: node name -> kind (compile_error, runtime_error, ...).
using NodeInjections = std::map<std::string, NodeFault>;

// The generated C++ of a graph, as translation units compiled on their own and linked together.
// `entry` defines `extern "C" int rk_graph_run(void* const* inputs, void* const* outputs, unsigned
// char* ws, char* err, int errlen)`: inputs in graph order (with their declared strides), outputs
// contiguous, allocated by the caller, and a workspace of `rk_graph_workspace_bytes()` bytes (64-byte
// aligned, kept by the caller across runs of one compiled graph; its last `rk_graph_kept_bytes()`,
// zeroed before the first run, hold what kernels derived from `frozen_inputs`, whose values every
// run passes unchanged in the same tensor); returns 0, or 1 with a message in err. It calls the `units`, each one
// function of a few kernels named rk_u_<hash of its text>: a unit's text depends only on the
// kernels it holds (buffers arrive as a pointer list, names inside are numbered per kernel), so
// candidates that keep most of a graph share most of its compiled units.
// The entry also defines `rk_graph_profile`, rk_graph_run with a last argument `double* seconds`
// (rk_graph_kernel_count() of them, zeroed by the caller) to which each kernel adds its wall time,
// in the order of `kernel_labels`; no other run of the same library may run beside it (the timer
// is the library's own state).
// `rk_graph_threads()` says how many threads a run uses; `rk_graph_one_thread()` makes the runs
// of the calling thread use it alone, so that runs on workspaces of their own go side by side.
struct CppSource {
  std::vector<std::string> units;
  std::string entry;
  std::string prelude;                     // the text the entry and most units begin with (cpp_prelude.h)
  std::vector<std::string> kernel_labels;  // each kernel's nodes and ops, in the order the entry runs them
  size_t library_units = 0;                // units[0, library_units): the prelude's kernels (float code, no integer wrap)
  std::vector<bool> pointwise_units;       // beside units: true where a unit's kernels are all pointwise loops
  std::string text() const;                // all of it, for reading (not compilable as one unit)
};
CppSource render_cpp(const Graph& g, const NodeInjections& injections, const std::set<std::string>& frozen_inputs = {});

// What every unit but the kernels units, and the entry point, begin with (cpp_prelude.h).
const std::string& cpp_prelude();

// A kernels unit: one of the prelude's kernel families (a conv GEMM, a depthwise window and
// activation, ...) as a translation unit of its own, the same text in every graph that calls it.
struct CppKernelsUnit {
  std::string call;  // what a generated unit's text holds where it calls the family
  std::string text;  // the unit: the family's #define, then the prelude
};
// Every kernels unit render_cpp can put in a graph, longest to compile first.
const std::vector<CppKernelsUnit>& cpp_kernels_units();

// The same lowering rendered as CUDA C++: one `rk_graph_kernel(inputs, outputs, ws, err)` run by a
// single thread block, each kernel a block-strided loop followed by __syncthreads(). Errors set
// *err to a 1-based index into error_messages.
struct CudaSource {
  std::string source;
  int64_t workspace_bytes = 0;
  std::vector<std::string> error_messages;
};
CudaSource render_cuda(const Graph& g, const NodeInjections& injections);

}  // namespace reprokit
