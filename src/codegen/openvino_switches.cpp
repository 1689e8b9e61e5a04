// OpenVINO's optimisation switches, compile_model's properties by OpenVINO's names. Its release
// build has no optimisation level and cannot skip one of the CPU plugin's transformations by name
// (that needs a build with its debug capabilities); what it does expose:
//   EXECUTION_MODE_HINT        ACCURACY or PERFORMANCE (OpenVINO's default): the level. ACCURACY
//                              forbids lowering precision, dynamic quantisation and a quantised
//                              KV cache; with reprokit's f32 inference precision an ONNX model of
//                              reprokit's runs the same at both, so the switches are walked at
//                              ACCURACY too.
//   INFERENCE_PRECISION_HINT   f32 (reprokit's default: never bf16 behind an f32 model's back),
//                              bf16 or f16: precision lowering, off at f32.
//   SNIPPETS_MODE              ENABLE (default), IGNORE_CALLBACK (fuses more) or DISABLE: the
//                              plugin's fusion of subgraphs into its own JIT kernels.
//   disabled_properties        names of the last two, each set to its value that turns it off.
// CPU_DENORMALS_OPTIMIZATION and DYNAMIC_QUANTIZATION_GROUP_SIZE are not switches here: neither
// changes the graph the plugin executes for such a model, so no try could tell them apart.
// Which switches changed the model the worker says by comparing the plugin's runtime model with
// each one on and off (openvino_cpu.py's changed()).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <span>

#include "onnx_worker_backend.h"
#include "reprokit/codegen/backend_switches.h"
#include "reprokit/ir/names.h"
#include "reprokit/support/errors.h"

namespace reprokit {

extern const OnnxCompiler kOpenVinoCompiler;  // openvino_backend.cpp

namespace {

constexpr std::string_view kLevels[] = {"ACCURACY", "PERFORMANCE"};
constexpr std::string_view kPrecisions[] = {"f32", "bf16", "f16"};
constexpr std::string_view kSnippetsModes[] = {"ENABLE", "IGNORE_CALLBACK", "DISABLE"};
constexpr std::string_view kLevelOption = "EXECUTION_MODE_HINT", kDisableOption = "disabled_properties";

// The properties a backend option may set, with their values; the last ones are the switches.
struct Property {
  std::string_view name;
  std::span<const std::string_view> values;
};
constexpr Property kProperties[] = {{kLevelOption, kLevels}, {"INFERENCE_PRECISION_HINT", kPrecisions}, {"SNIPPETS_MODE", kSnippetsModes}};
constexpr std::string_view kSwitches[] = {"INFERENCE_PRECISION_HINT", "SNIPPETS_MODE"};

bool known_switch(std::string_view name) { return std::find(std::begin(kSwitches), std::end(kSwitches), name) != std::end(kSwitches); }

std::vector<std::string> changed(const Graph& g, const CompileOptions& options) {
  return onnx_worker_changed(g, options, kOpenVinoCompiler, known_switch);
}

std::string version() {
  static const std::string answer = "OpenVINO " + onnx_worker_version(kOpenVinoCompiler);
  return answer;
}

std::string_view kind_of(std::string_view) { return "property"; }

}  // namespace

nlohmann::json openvino_worker_options(const CompileOptions& options) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, value] : options.backend_options) {
    const std::string& name = key;  // clang 14 (the libFuzzer build) cannot capture a structured binding
    const auto p = std::find_if(std::begin(kProperties), std::end(kProperties), [&](const Property& q) { return q.name == name; });
    if (p != std::end(kProperties)) {
      out[key] = backend_option_choice(options.backend_options, key, p->values);
    } else if (key == kDisableOption) {
      const std::vector<std::string> names = split_commas(backend_option_string(options.backend_options, key));
      for (const std::string& n : names)
        if (!known_switch(n)) throw UserError(fmt::format("backend option {}: '{}' is not {}", key, printable(n), fmt::join(kSwitches, " or ")));
      out[key] = names;
    } else {
      throw UserError(
          fmt::format("the openvino backend takes the backend options EXECUTION_MODE_HINT, INFERENCE_PRECISION_HINT, SNIPPETS_MODE and {}, not '{}'",
                      kDisableOption, printable(key)));
    }
  }
  return out;
}

extern const BackendSwitches kOpenVinoSwitches;
const BackendSwitches kOpenVinoSwitches = {"OpenVINO", kLevelOption, kLevels, kDisableOption, {}, changed, version, nullptr, false, kind_of, true};

}  // namespace reprokit
