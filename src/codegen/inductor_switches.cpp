// Inductor's optimisation switches, in PyTorch's own terms (those of its CompilerBisector): the
// level is torch.compile's backend, from `eager` (Dynamo alone) through `aot_eager` (AOTAutograd),
// `aot_eager_decomp_partition` (its decompositions and partitioner) to `inductor`; the optimisers
// are the subsystems the compile went through (pre-grad, joint-graph and post-grad passes, each
// by its own name; the lowerings of ATen ops to Inductor's IR and the decompositions, as groups
// of one member per application) and CompilerBisector's config changes. The worker records what
// applied and turns off what it is told to (inductor_worker.py).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "inductor_worker_client.h"
#include "reprokit/codegen/backend_switches.h"
#include "reprokit/support/errors.h"

namespace reprokit {

namespace {

// Subsystems turned off as a whole before any one of their members, in CompilerBisector's order;
// a name with ':' in the worker's record is one application of the subsystem before the ':'.
// (CompilerBisector's pre_grad_graph is not among them: turning it off skips Inductor altogether.)
constexpr std::string_view kPasses[] = {"pre_grad_passes", "joint_graph_passes", "post_grad_passes"};
constexpr std::string_view kLowering[] = {"lowerings", "decomposition"};
// CompilerBisector's config changes, tried where the subsystems are (worker: _CONFIG_CHANGES).
constexpr std::string_view kConfigChanges[] = {"fallback_random", "emulate_precision_casts", "layout_optimization", "comprehensive_padding"};
constexpr std::string_view kConfigChangesBeforeInductor[] = {"cse"};

std::vector<std::string> applied(const Graph& g, const CompileOptions& options) {
  std::vector<Tensor> zeros;
  for (int i = 0; i < g.num_inputs(); ++i) zeros.push_back(Tensor::zeros(g.node(i).type.dtype, g.node(i).type.shape));
  const nlohmann::json reply = run_in_inductor_worker(g, options, zeros, true, nullptr);
  std::vector<std::string> names;
  for (const auto& a : reply.value("applied", nlohmann::json::array()))
    if (a.is_string()) names.push_back(a.get<std::string>());
  return names;
}

std::string subsystem_of(const std::string& name) { return name.substr(0, name.find(':')); }

bool at_inductor(const CompileOptions& options) {
  const std::string stage = backend_option_string(options.backend_options, kInductorStageOption);
  return stage.empty() || stage == "inductor";
}

// In CompilerBisector's order: the passes that applied, the config changes of the stage, then the
// lowerings and decompositions that applied (a config change such as emulate_precision_casts names
// a cause that every lowering of a low-precision op would otherwise share).
std::vector<std::string> changed(const Graph& g, const CompileOptions& options) {
  const std::vector<std::string> record = applied(g, options);
  auto add_applied = [&](std::span<const std::string_view> names, std::vector<std::string>& out) {
    for (std::string_view s : names)
      if (std::any_of(record.begin(), record.end(), [&](const std::string& a) { return subsystem_of(a) == s; })) out.emplace_back(s);
  };
  std::vector<std::string> out;
  add_applied(kPasses, out);
  if (at_inductor(options)) out.insert(out.end(), std::begin(kConfigChanges), std::end(kConfigChanges));
  else out.insert(out.end(), std::begin(kConfigChangesBeforeInductor), std::end(kConfigChangesBeforeInductor));
  add_applied(kLowering, out);
  return out;
}

// One subsystem's applications, each once, in the order they happened.
std::vector<std::string> members(const Graph& g, const CompileOptions& options, std::string_view group) {
  std::vector<std::string> out;
  for (const std::string& a : applied(g, options))
    if (a.find(':') != std::string::npos && subsystem_of(a) == group && std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  return out;
}

// A switch in CompilerBisector's terms: a pass, a config change or a subsystem (the lowerings, the
// decompositions).
std::string_view kind_of(std::string_view name) {
  auto among = [&](std::span<const std::string_view> names) { return std::find(names.begin(), names.end(), name) != names.end(); };
  if (among(kPasses)) return "pass";
  if (among(kConfigChanges) || among(kConfigChangesBeforeInductor)) return "config change";
  return "subsystem";
}

std::string version() {
  static const std::string answer = [] {
    try {
      return inductor_torch_version();
    } catch (const std::exception&) { return std::string("unknown"); }
  }();
  return answer;
}

}  // namespace

extern const BackendSwitches kInductorSwitches;
const BackendSwitches kInductorSwitches = {
    "Inductor", kInductorStageOption, kInductorStages, kInductorDisableOption, {}, changed, version, members, false, kind_of};

}  // namespace reprokit
