// ReproSpec serialisation and run_and_classify.
#include "reprokit/harness/repro_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include <cmath>

#include "reprokit/codegen/backend.h"
#include "reprokit/codegen/compiler.h"
#include "reprokit/codegen/compile_options.h"
#include "reprokit/codegen/passes/pass_manager.h"
#include "reprokit/harness/accuracy.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/names.h"

#include "reprokit/runtime/input_gen.h"

namespace reprokit {

using nlohmann::json;

namespace {

json injection_nodes_json(const std::map<std::string, NodeFault>& nodes) {
  json j = json::object();
  for (auto& [node, fault] : nodes) j[node] = fault.str();
  return j;
}

const std::vector<std::string>& stage_names() {
  static const std::vector<std::string> stages = {"dynamo", "aot_forward", "aot_backward"};
  return stages;
}

void check_one_of(const std::string& v, const std::vector<std::string>& allowed, const char* what) {
  if (std::find(allowed.begin(), allowed.end(), v) != allowed.end()) return;
  std::string list;
  for (auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  throw UserError(fmt::format("unknown {} '{}' (expected {})", what, printable(v), list));
}

void check_pass(const std::string& name, const char* where) {
  if (!find_pass(name)) throw UserError(fmt::format("{} names an unknown pass '{}'", where, printable(name)));
}

}  // namespace

json ReproSpec::to_json() const {
  const CompileOptions& c = options.compile;
  json inj = json::array(), pinj = json::array();
  for (auto& i : c.injections) inj.push_back(i.str());
  for (auto& p : c.pass_injections) pinj.push_back(p.pass + ":" + std::to_string(p.n));
  json j = {{"stage", stage},
            {"backend", c.backend},
            {"train", options.train},
            {"inject", inj},
            {"inject_pass", pinj},
            {"injection_nodes", injection_nodes_json(c.injection_nodes)},
            {"pass_limits", c.pass_limits},
            {"disabled_passes", c.disabled_passes},
            {"run_passes", c.run_passes},
            {"backend_options", c.backend_options},
            {"timeout_s", timeout_s},
            {"check_accuracy", check_accuracy},
            {"attempts", attempts},
            {"expected", expected.to_json()}};
  if (tolerance) j["tolerance"] = *tolerance;
  if (!sample_seeds.empty()) j["sample_seeds"] = sample_seeds, j["failing_samples"] = failing_samples;
  return j;
}

ReproSpec ReproSpec::from_json(const json& j) {
  ReproSpec s;
  try {
    s.stage = j.at("stage").get<std::string>();
    check_one_of(s.stage, stage_names(), "stage");
    s.options.compile.backend = j.at("backend").get<std::string>();
    backend_named(s.options.compile.backend);
    s.options.train = j.value("train", false);
    for (auto& i : j.value("inject", json::array())) s.options.compile.injections.push_back(parse_fault_injection(i.get<std::string>()));
    for (auto& p : j.value("inject_pass", json::array())) s.options.compile.pass_injections.push_back(parse_pass_injection(p.get<std::string>()));
    for (auto& [node, kind] : j.value("injection_nodes", std::map<std::string, std::string>{})) {
      check_name(node, "value", "injection_nodes");
      std::string why;
      auto k = parse_node_fault(kind, why);
      if (!k) throw UserError(fmt::format("bad injection kind '{}' for node %{}: {}", printable(kind), node, why));
      s.options.compile.injection_nodes[node] = *k;
    }
    if (j.contains("pass_limits")) s.options.compile.pass_limits = pass_limits_from_json(j.at("pass_limits"));
    for (auto& [pass, limit] : s.options.compile.pass_limits) check_pass(pass, "pass_limits");
    s.options.compile.disabled_passes = j.value("disabled_passes", std::set<std::string>{});
    for (auto& pass : s.options.compile.disabled_passes) check_pass(pass, "disabled_passes");
    s.options.compile.run_passes = j.value("run_passes", true);
    s.options.compile.backend_options = j.value("backend_options", std::map<std::string, std::string>{});
    for (auto& [key, value] : s.options.compile.backend_options) check_backend_option(key, value);
    s.timeout_s = j.value("timeout_s", 0.0);
    if (!std::isfinite(s.timeout_s) || s.timeout_s < 0 || s.timeout_s > kMaxTimeoutSeconds)
      throw UserError(fmt::format("timeout_s {} is not a number of seconds in [0, {}]", s.timeout_s, kMaxTimeoutSeconds));
    s.check_accuracy = j.value("check_accuracy", false);
    s.attempts = j.value("attempts", 1);
    if (s.attempts < 1 || s.attempts > 100) throw UserError(fmt::format("attempts {} is not in [1, 100]", s.attempts));
    if (j.contains("tolerance")) {
      s.tolerance = j.at("tolerance").get<double>();
      if (!std::isfinite(*s.tolerance) || *s.tolerance < 0) throw UserError(fmt::format("tolerance {} is not a non-negative number", *s.tolerance));
    }
    s.expected = Failure::from_json(j.value("expected", json::object()));
    s.sample_seeds = j.value("sample_seeds", std::vector<uint64_t>{});
    if (s.samples() > kMaxSamples) throw UserError(fmt::format("sample_seeds: {} samples, at most {}", s.samples(), kMaxSamples));
    s.failing_samples = j.value("failing_samples", std::vector<int>{});
    std::set<int> seen;
    for (int k : s.failing_samples)
      if (k < 0 || k >= s.samples() || !seen.insert(k).second)
        throw UserError(fmt::format("failing_samples: {} is not a distinct sample in [0, {})", k, s.samples()));
  } catch (const json::exception& e) { throw UserError(std::string("malformed repro options: ") + e.what()); }
  return s;
}

Failure check_stage_accuracy(const ReproSpec& spec, const Graph& g, const std::vector<Tensor>& inputs, const StackResult& r) {
  if (spec.stage != "dynamo" || !spec.options.train) return check_accuracy(g, inputs, r.outputs, spec.tolerance);
  // Training: outputs and gradients against the joint graph (inputs, then tangents of ones).
  TrainingGraphs t = build_training_graphs(g);
  std::vector<Tensor> joint_inputs = inputs, compiled = r.outputs;
  for (auto& one : ones_like_outputs(r.outputs, r.outputs.size())) joint_inputs.push_back(one);
  compiled.insert(compiled.end(), r.grads.begin(), r.grads.end());
  return check_accuracy(t.joint.graph, joint_inputs, compiled, spec.tolerance);
}

std::vector<Tensor> sample_inputs(const ReproSpec& spec, const Graph& g, const std::vector<Tensor>& inputs, int k) {
  if (k <= 0 || k > static_cast<int>(spec.sample_seeds.size())) return inputs;
  return sample_like(g, inputs, spec.sample_seeds[static_cast<size_t>(k - 1)]);
}

namespace {
Failure classify_one(const ReproSpec& spec, const Graph& g, const std::vector<Tensor>& inputs) {
  Failure f;
  try {
    StackResult r = run_stage(spec.stage, g, inputs, spec.options);
    if (spec.check_accuracy || spec.expected.kind == FailureKind::accuracy) return check_stage_accuracy(spec, g, inputs, r);
  } catch (const CompileFailure& e) { f = failure_from(e.kind, e.what()); }
  return f;
}
}  // namespace

Failure run_and_classify(const ReproSpec& spec, const Graph& g, const std::vector<Tensor>& inputs) {
  if (spec.failing_samples.empty()) return classify_one(spec, g, inputs);
  Failure first;
  for (int k : spec.failing_samples) {
    Failure f = classify_one(spec, g, sample_inputs(spec, g, inputs, k));
    if (!f.failed()) return f;  // the failure no longer shows on a sample the original failed on
    if (!first.failed()) first = f;
  }
  return first;
}

}  // namespace reprokit
