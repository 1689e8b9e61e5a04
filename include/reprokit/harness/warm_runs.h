// Timing a compiled graph the way a user runs a model: compiled once, then run again and again on
// the same inputs (no process start, no weight loading, no compile in the figure).
#pragma once
#include <vector>

#include "reprokit/harness/stack.h"

namespace reprokit {

// The median of `v` (0 when empty): the figure every timing here reports.
double median_of(std::vector<double> v);

struct WarmRunTimes {
  double compile_ms = 0;       // compiling the stage(s) again (a compile-cache hit after a first run)
  std::vector<double> run_ms;  // each timed run, in order
  double median_ms() const;
  double min_ms() const;
};

// Compiles the stack's stage(s) for `options` (with train: the aot forward and backward graphs)
// and times `warmups` untimed then `runs` timed runs of the whole stack on `inputs` (with train:
// forward, then backward on tangents of ones). Raises CompileFailure as run_stage does.
WarmRunTimes time_warm_runs(const Graph& captured, const std::vector<Tensor>& inputs, const StackOptions& options, int runs, int warmups = 1);

// Each kernel of the compiled stack timed over warm runs, as time_warm_runs runs them, where the
// backend times its kernels (cpp; `labels` is empty otherwise): what each kernel computes (with
// train, "forward: " or "backward: " before it), its time in each run, and each whole run's.
struct KernelTimes {
  std::vector<std::string> labels;
  std::vector<std::vector<double>> ms;  // ms[k][r]: kernel k in run r
  std::vector<double> run_ms;
};
KernelTimes time_kernels(const Graph& captured, const std::vector<Tensor>& inputs, const StackOptions& options, int runs, int warmups = 1);

}  // namespace reprokit
