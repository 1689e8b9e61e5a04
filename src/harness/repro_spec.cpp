// ReproSpec serialisation and run_and_classify.
#include "reprokit/harness/repro_spec.h"

#include <fmt/format.h>

#include <algorithm>

#include "reprokit/codegen/compiler.h"
#include "reprokit/harness/accuracy.h"
#include "reprokit/ir/errors.h"

namespace reprokit {

using nlohmann::json;

json ReproSpec::to_json() const {
  const CompileOptions& c = options.compile;
  json inj = json::array(), pinj = json::array();
  for (auto& i : c.injections) inj.push_back(i.op + ":" + i.kind);
  for (auto& p : c.pass_injections) pinj.push_back(p.pass + ":" + std::to_string(p.n));
  json j = {{"stage", stage},
            {"backend", c.backend},
            {"train", options.train},
            {"inject", inj},
            {"inject_pass", pinj},
            {"injection_nodes", c.injection_nodes},
            {"pass_limits", c.pass_limits},
            {"disabled_passes", c.disabled_passes},
            {"run_passes", c.run_passes},
            {"timeout_s", timeout_s},
            {"check_accuracy", check_accuracy},
            {"attempts", attempts},
            {"expected", expected.to_json()}};
  if (tolerance) j["tolerance"] = *tolerance;
  return j;
}

ReproSpec ReproSpec::from_json(const json& j) {
  ReproSpec s;
  try {
    s.stage = j.at("stage").get<std::string>();
    s.options.compile.backend = j.at("backend").get<std::string>();
    s.options.train = j.value("train", false);
    for (auto& i : j.value("inject", json::array())) s.options.compile.injections.push_back(parse_fault_injection(i.get<std::string>()));
    for (auto& p : j.value("inject_pass", json::array())) s.options.compile.pass_injections.push_back(parse_pass_injection(p.get<std::string>()));
    s.options.compile.injection_nodes = j.value("injection_nodes", std::map<std::string, std::string>{});
    for (auto& [node, kind] : s.options.compile.injection_nodes)
      if (std::find(fault_kinds().begin(), fault_kinds().end(), kind) == fault_kinds().end())
        throw UserError("unknown injection kind '" + kind + "' for node %" + node);
    s.options.compile.pass_limits = j.value("pass_limits", std::map<std::string, int64_t>{});
    s.options.compile.disabled_passes = j.value("disabled_passes", std::set<std::string>{});
    s.options.compile.run_passes = j.value("run_passes", true);
    s.timeout_s = j.value("timeout_s", 0.0);
    s.check_accuracy = j.value("check_accuracy", false);
    s.attempts = std::max(1, j.value("attempts", 1));
    if (j.contains("tolerance")) s.tolerance = j.at("tolerance").get<double>();
    s.expected = Failure::from_json(j.value("expected", json::object()));
  } catch (const json::exception& e) {
    throw UserError(std::string("malformed repro options: ") + e.what());
  }
  return s;
}

Failure check_stage_accuracy(const ReproSpec& spec, const Graph& g, const std::vector<Tensor>& inputs, const StackResult& r) {
  if (spec.stage != "dynamo" || !spec.options.train) return check_accuracy(g, inputs, r.outputs, spec.tolerance);
  // Training: outputs and gradients against the joint graph (inputs, then tangents of ones).
  TrainingGraphs t = build_training_graphs(g);
  std::vector<Tensor> joint_inputs = inputs, compiled = r.outputs;
  for (auto& one : ones_like_outputs(g, r.outputs, r.outputs.size())) joint_inputs.push_back(one);
  compiled.insert(compiled.end(), r.grads.begin(), r.grads.end());
  return check_accuracy(t.joint.graph, joint_inputs, compiled, spec.tolerance);
}

Failure run_and_classify(const ReproSpec& spec, const Graph& g, const std::vector<Tensor>& inputs) {
  Failure f;
  try {
    StackResult r = run_stage(spec.stage, g, inputs, spec.options);
    if (spec.check_accuracy || spec.expected.kind == "accuracy") return check_stage_accuracy(spec, g, inputs, r);
  } catch (const CompileFailure& e) {
    f.kind = e.kind;
    f.message = e.what();
    f.signature = normalise_signature(f.message);
  }
  return f;
}

}  // namespace reprokit
