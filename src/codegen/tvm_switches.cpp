// TVM's optimisation switches, PassContext's own: opt_level (0..3) and disabled_pass, the names of
// passes to skip. In TVM 0.27 every pass of tvm.compile's CPU pipeline is declared at opt_level 0,
// so the level alone turns none off: the passes are walked at the lowest level too. Which passes
// changed the module a pass instrument in the worker says (tvm_cpu.py's changed()), leaving out
// those the build cannot do without. Each try starts an interpreter and compiles, so `reprokit
// minify` names `reprokit bisect` rather than searching for every report.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>

#include "onnx_worker_backend.h"
#include "reprokit/codegen/backend_switches.h"
#include "reprokit/ir/names.h"
#include "reprokit/support/errors.h"

namespace reprokit {

extern const OnnxCompiler kTvmCompiler;  // tvm_backend.cpp

namespace {

constexpr std::string_view kLevels[] = {"0", "1", "2", "3"};
constexpr std::string_view kLevelOption = "opt_level", kDisableOption = "disabled_pass";

// A TVM pass's name: letters, digits, '_' and the '.' of its namespace ("tirx.CommonSubexprElim").
bool pass_name(std::string_view s) {
  return !s.empty() && s.size() <= 200 &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; });
}

// opt_level as a number (--backend-option opt_level=2) or as bisect writes it ("2").
int level_of(const std::string& value) {
  const nlohmann::json v = nlohmann::json::parse(value, nullptr, false);
  std::string text = v.is_number_integer() ? std::to_string(v.get<long long>()) : v.is_string() ? v.get<std::string>() : value;
  const auto it = std::find(std::begin(kLevels), std::end(kLevels), text);
  if (it == std::end(kLevels)) throw UserError(fmt::format("backend option {}: '{}' is not one of 0, 1, 2, 3", kLevelOption, printable(value)));
  return static_cast<int>(it - std::begin(kLevels));
}

std::vector<std::string> changed(const Graph& g, const CompileOptions& options) { return onnx_worker_changed(g, options, kTvmCompiler, pass_name); }

std::string version() {
  static const std::string answer = "TVM " + onnx_worker_version(kTvmCompiler);
  return answer;
}

std::string_view kind_of(std::string_view) { return "pass"; }

}  // namespace

nlohmann::json tvm_worker_options(const CompileOptions& options) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, value] : options.backend_options) {
    if (key == kLevelOption) {
      out["opt_level"] = level_of(value);
    } else if (key == kDisableOption) {
      const std::vector<std::string> names = split_commas(backend_option_string(options.backend_options, key));
      for (const std::string& n : names)
        if (!pass_name(n)) throw UserError(fmt::format("backend option {}: '{}' is not a TVM pass name", key, printable(n)));
      out["disabled_pass"] = names;
    } else {
      throw UserError(fmt::format("the tvm backend takes the backend options {} and {}, not '{}'", kLevelOption, kDisableOption, printable(key)));
    }
  }
  return out;
}

extern const BackendSwitches kTvmSwitches;
const BackendSwitches kTvmSwitches = {"TVM", kLevelOption, kLevels, kDisableOption, {}, changed, version, nullptr, false, kind_of, true};

}  // namespace reprokit
