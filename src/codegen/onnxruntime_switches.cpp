// ONNX Runtime's optimisation switches (see onnxruntime_runner.h). Its session options name them:
// graph_optimization_level (disabled, basic, extended, layout, all) and the list of optimisers to
// turn off (optimization.disable_specified_optimizers), which takes a graph transformer's name or
// one rewrite rule's. Which transformers changed a model, ORT's own verbose log says
// (`check.mjs --optimizers`); the rules inside a rule-based transformer it does not log, so they
// are listed here.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <sstream>

#include "onnxruntime_runner.h"
#include "reprokit/onnx/onnx_export.h"
#include "reprokit/process/subprocess.h"
#include "reprokit/support/errors.h"
#include "reprokit/support/files.h"
#include "reprokit/ir/names.h"

namespace reprokit {

namespace {

constexpr std::string_view kLevels[] = {"disabled", "basic", "extended", "layout", "all"};

// The rewrite rules of ORT's level-1 rule-based transformer (ORT 1.30's
// GenerateRewriteRules). A name ORT does not know is ignored by it, so an older or newer ORT
// costs a try, never a wrong answer.
constexpr std::string_view kLevel1Rules[] = {
    "EliminateIdentity",    "EliminateSlice",          "UnsqueezeElimination", "EliminateDropout", "ExpandElimination", "CastElimination",
    "CastChainElimination", "PreShapeNodeElimination", "NoopElimination",      "DivMulFusion",     "FuseReluClip",      "GemmSumFusion",
    "GemmTransposeFusion",  "NotWhereFusion",          "ConvAddFusion",        "ConvMulFusion",    "ConvBNFusion",      "ClipQuantRewrite",
    "ReluQuantRewrite",     "LabelEncoderFusion",      "Pad_Fusion",           "MatmulBNFusion"};
constexpr OptimizerGroup kGroups[] = {{"Level1_RuleBasedTransformer", kLevel1Rules}};

// Names of ORT optimisers: letters, digits and '_' (what the runner's environment may carry).
bool optimizer_name(std::string_view s) {
  return !s.empty() && s.size() <= 200 &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// A comma-separated list of such names.
bool optimizer_names(std::string_view list) {
  while (true) {
    const size_t comma = list.find(',');
    if (!optimizer_name(list.substr(0, comma))) return false;
    if (comma == std::string_view::npos) return true;
    list.remove_prefix(comma + 1);
  }
}

std::vector<std::string> changed_optimizers(const Graph& g, const CompileOptions& options) {
  const ScratchDir scratch("rk_ort_optimizers_");
  const Dir& dir = scratch.dir();
  dir.write("model.onnx", export_onnx(g));
  ProcessSpec s;
  s.argv = {"node", ort_runner_script(), "--optimizers", dir.path("model.onnx")};
  s.env_set = ort_runner_env(options);
  s.timeout_s = 300;
  ProcessResult r = run_process(s);
  if (r.exit_code != 0)
    throw UserError(fmt::format("cannot list ONNX Runtime's optimisers ({} --optimizers, exit {}): {}", ort_runner_script(), r.exit_code, r.err));
  std::vector<std::string> names;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);)
    for (std::string_view prefix : {"optimizer: ", "failed in: "})
      if (line.rfind(prefix, 0) == 0) {
        std::string name = line.substr(prefix.size());
        if (optimizer_name(name) && std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
      }
  return names;
}

// Asked once per process: every report written during a reduction names it.
std::string version() {
  static const std::string answer = [] {
    ProcessSpec s;
    s.argv = {"node", ort_runner_script(), "--version"};
    s.timeout_s = 60;
    try {
      ProcessResult r = run_process(s);
      std::string out = r.out.substr(0, r.out.find('\n'));
      if (r.exit_code == 0 && !out.empty()) return out;
    } catch (const std::exception&) {}
    return std::string("unknown");
  }();
  return answer;
}

}  // namespace

const BackendSwitches kOnnxRuntimeSwitches = {"ONNX Runtime", "graph_optimization_level", kLevels, "disabled_optimizers",
                                              kGroups,        changed_optimizers,         version};

std::string ort_runner_script() {
  if (const char* e = std::getenv("REPRO_ORT_RUNNER"); e && *e) return e;
  return REPROKIT_ORT_RUNNER;
}

std::map<std::string, std::string> ort_runner_env(const CompileOptions& options) {
  std::map<std::string, std::string> env;
  for (const auto& option : options.backend_options) {
    const std::string& key = option.first;
    if (key == kOnnxRuntimeSwitches.level_option) {
      env["ORT_CHECK_OPT_LEVEL"] = backend_option_choice(options.backend_options, key, kLevels);
    } else if (key == kOnnxRuntimeSwitches.disable_option) {
      std::string names = backend_option_string(options.backend_options, key);
      if (!names.empty() && !optimizer_names(names))
        throw UserError(fmt::format("backend option {}: '{}' is not a comma-separated list of optimiser names", key, printable(names)));
      env["ORT_CHECK_DISABLED_OPTIMIZERS"] = names;
    } else {
      throw UserError(fmt::format("the onnxruntime backend takes the backend options {} and {}, not '{}'", kOnnxRuntimeSwitches.level_option,
                                  kOnnxRuntimeSwitches.disable_option, printable(key)));
    }
  }
  return env;
}

std::string optimizer_list(const std::string& base, const std::vector<std::string>& names) {
  std::string out = base;
  for (const std::string& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

}  // namespace reprokit
