// ReproSpec: everything needed to rerun one failing stage on a graph (stage, backend, options,
// injections, tolerance, timeout, the expected failure). Bundles and repro files both hold one.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reprokit/harness/failure.h"
#include "reprokit/harness/stack.h"

namespace reprokit {

// The longest timeout reprokit accepts anywhere (REPRO_TIMEOUT, --timeout, specs): a week.
constexpr double kMaxTimeoutSeconds = 7 * 24 * 3600;

struct ReproSpec {
  std::string stage = "dynamo";  // dynamo, aot_forward, aot_backward
  StackOptions options;
  std::optional<double> tolerance;
  double timeout_s = 0;         // 0: the default of the tool that reruns it
  bool check_accuracy = false;  // level 4: also apply the accuracy rule
  Failure expected;             // empty for a level-3 bundle written before compiling
  int attempts = 1;             // a flaky failure: reruns until it shows, up to this many times
  // --samples N: sample 0 is the saved inputs, sample k (1 <= k < N) is drawn like them with
  // sample_like(seed sample_seeds[k - 1]). failing_samples: the samples the original fails on; a
  // rerun (repro, each minifier candidate) reproduces only when it fails on every one of them.
  std::vector<uint64_t> sample_seeds;
  std::vector<int> failing_samples;
  int samples() const { return 1 + static_cast<int>(sample_seeds.size()); }

  nlohmann::json to_json() const;
  static ReproSpec from_json(const nlohmann::json& j);  // UserError on malformed input
};

// Runs the spec's stage on (g, inputs) in this process and classifies what happens: compile and
// runtime errors from CompileFailure, and the accuracy rule when spec.check_accuracy. A crash or
// a hang happens for real (the caller runs this in a child process and judges signal/timeout).
// With samples (spec.failing_samples not empty): runs each failing sample and returns the first
// sample's failure, or a pass as soon as one of them passes.
Failure run_and_classify(const ReproSpec& spec, const Graph& g, const std::vector<Tensor>& inputs);

// The inputs of sample k (0: `inputs` themselves).
std::vector<Tensor> sample_inputs(const ReproSpec& spec, const Graph& g, const std::vector<Tensor>& inputs, int k);

// The most samples --samples accepts.
constexpr int kMaxSamples = 1000;

// The accuracy rule for a stage's result: outputs, and with training at the dynamo level also
// the gradients (against the joint graph fed tangents of ones).
Failure check_stage_accuracy(const ReproSpec& spec, const Graph& g, const std::vector<Tensor>& inputs, const StackResult& result);

}  // namespace reprokit
