// Warm runs of the stack (see warm_runs.h).
#include "reprokit/harness/warm_runs.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>

#include "reprokit/codegen/compiler.h"
#include "reprokit/codegen/lowering.h"

namespace reprokit {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

double WarmRunTimes::median_ms() const {
  if (run_ms.empty()) return 0;
  std::vector<double> v = run_ms;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double WarmRunTimes::min_ms() const { return run_ms.empty() ? 0 : *std::min_element(run_ms.begin(), run_ms.end()); }

WarmRunTimes time_warm_runs(const Graph& captured, const std::vector<Tensor>& inputs, const StackOptions& options, int runs, int warmups) {
  WarmRunTimes t;
  std::function<void()> run_once;
  std::unique_ptr<CompiledGraph> whole, forward, backward;
  TrainingGraphs training;
  const auto c0 = std::chrono::steady_clock::now();
  if (!options.train) {
    // As run_stage's forward-only "dynamo" stage: the inner compiler on the captured graph.
    whole = compile_graph(captured, options.compile);
    run_once = [&] { (void)whole->run(inputs); };
  } else {
    // As run_stage's training: injections resolved to node names, then one compile per part.
    CompileOptions compile = options.compile;
    compile.injection_nodes = resolve_injections(captured, options.compile);
    training = build_training_graphs(captured);
    forward = compile_graph(training.parts.forward, compile);
    backward = compile_graph(training.parts.backward, compile);
    run_once = [&] {
      (void)run_training(training, inputs, [&](const std::string& stage, const Graph&, const std::vector<Tensor>& in) {
        return (stage == "aot_forward" ? forward : backward)->run(in);
      });
    };
  }
  t.compile_ms = ms_since(c0);
  for (int k = 0; k < warmups; ++k) run_once();
  for (int k = 0; k < runs; ++k) {
    const auto r0 = std::chrono::steady_clock::now();
    run_once();
    t.run_ms.push_back(ms_since(r0));
  }
  return t;
}

}  // namespace reprokit
