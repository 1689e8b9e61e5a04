// Warm runs of the stack (see warm_runs.h).
#include "reprokit/harness/warm_runs.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "reprokit/codegen/compiler.h"
#include "reprokit/codegen/lowering.h"

namespace reprokit {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double WarmRunTimes::median_ms() const { return median_of(run_ms); }

double WarmRunTimes::min_ms() const { return run_ms.empty() ? 0 : *std::min_element(run_ms.begin(), run_ms.end()); }

namespace {

// The stack as a user's program runs it: compiled once, then run again and again. Forward only,
// as run_stage's "dynamo" stage: the inner compiler on the captured graph; with train, as
// run_stage's training: injections resolved to node names, then one compile per part.
class WarmStack {
 public:
  WarmStack(const Graph& captured, const StackOptions& options) : train_(options.train) {
    if (!train_) {
      whole_ = compile_graph(captured, options.compile);
      return;
    }
    CompileOptions compile = options.compile;
    compile.injection_nodes = resolve_injections(captured, options.compile);
    training_ = build_training_graphs(captured);
    forward_ = compile_graph(training_.parts.forward, compile);
    backward_ = compile_graph(training_.parts.backward, compile);
  }

  // The kernels timed by run(inputs, seconds), or none where the backend does not time them.
  std::vector<std::string> kernel_labels() const {
    if (!train_) return whole_->kernel_labels();
    std::vector<std::string> labels, f = forward_->kernel_labels(), b = backward_->kernel_labels();
    if (f.empty() || b.empty()) return {};
    for (auto& l : f) labels.push_back("forward: " + l);
    for (auto& l : b) labels.push_back("backward: " + l);
    return labels;
  }

  // One run; with `seconds`, each kernel's time in it (forward's kernels, then backward's).
  void run(const std::vector<Tensor>& inputs, std::vector<double>* seconds = nullptr) {
    if (!train_) {
      (void)(seconds ? whole_->run_timing_kernels(inputs, seconds) : whole_->run(inputs));
      return;
    }
    std::vector<double> f, b;
    (void)run_training(training_, inputs, [&](const std::string& stage, const Graph&, const std::vector<Tensor>& in) {
      CompiledGraph& part = stage == "aot_forward" ? *forward_ : *backward_;
      return seconds ? part.run_timing_kernels(in, stage == "aot_forward" ? &f : &b) : part.run(in);
    });
    if (seconds) {
      *seconds = f;
      seconds->insert(seconds->end(), b.begin(), b.end());
    }
  }

 private:
  bool train_;
  std::unique_ptr<CompiledGraph> whole_, forward_, backward_;
  TrainingGraphs training_;
};

}  // namespace

WarmRunTimes time_warm_runs(const Graph& captured, const std::vector<Tensor>& inputs, const StackOptions& options, int runs, int warmups) {
  WarmRunTimes t;
  const auto c0 = std::chrono::steady_clock::now();
  WarmStack stack(captured, options);
  t.compile_ms = ms_since(c0);
  for (int k = 0; k < warmups; ++k) stack.run(inputs);
  for (int k = 0; k < runs; ++k) {
    const auto r0 = std::chrono::steady_clock::now();
    stack.run(inputs);
    t.run_ms.push_back(ms_since(r0));
  }
  return t;
}

KernelTimes time_kernels(const Graph& captured, const std::vector<Tensor>& inputs, const StackOptions& options, int runs, int warmups) {
  KernelTimes t;
  WarmStack stack(captured, options);
  t.labels = stack.kernel_labels();
  if (t.labels.empty()) return t;
  t.ms.assign(t.labels.size(), {});
  std::vector<double> seconds;
  for (int k = 0; k < warmups; ++k) stack.run(inputs, &seconds);
  for (int k = 0; k < runs; ++k) {
    const auto r0 = std::chrono::steady_clock::now();
    stack.run(inputs, &seconds);
    t.run_ms.push_back(ms_since(r0));
    for (size_t i = 0; i < t.labels.size() && i < seconds.size(); ++i) t.ms[i].push_back(seconds[i] * 1e3);
  }
  return t;
}

}  // namespace reprokit
