// IREE's optimisation switches, iree-compile's own flags: opt_level, the value of --iree-opt-level
// (O0..O3), and disabled_flags, the names of boolean flags each passed as `--NAME=false`. IREE has
// no switch that skips a pass by name: these flags are the optimisations of its llvm-cpu pipeline
// that one flag turns off (the same list as iree_cpu.py's SWITCHES). Only names of this table are
// taken, since each goes on the compiler's command line. Which flags changed the model the worker
// says by compiling with each one off and comparing the module's bytes (iree_cpu.py's changed()).
// At O0 constant evaluation, hoisting and binding optimisation still run, so the flags are walked
// at the lowest level too. Each try compiles the model, so `reprokit minify` names `reprokit
// bisect` rather than searching for every report.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "onnx_worker_backend.h"
#include "reprokit/codegen/backend_switches.h"
#include "reprokit/ir/names.h"
#include "reprokit/support/errors.h"

namespace reprokit {

extern const OnnxCompiler kIreeCompiler;  // iree_backend.cpp

namespace {

constexpr std::string_view kLevels[] = {"O0", "O1", "O2", "O3"};
constexpr std::string_view kLevelOption = "opt_level", kDisableOption = "disabled_flags";
// In the order of IREE's phases: global optimisation, dispatch creation, scheduling, codegen.
constexpr std::string_view kFlags[] = {
    "iree-opt-const-eval",
    "iree-opt-const-expr-hoisting",
    "iree-opt-outer-dim-concat",
    "iree-opt-generalize-matmul",
    "iree-dispatch-creation-enable-aggressive-fusion",
    "iree-scheduling-optimize-bindings",
    "iree-llvmcpu-reassociate-fp-reductions",
};

bool known_flag(std::string_view name) { return std::find(std::begin(kFlags), std::end(kFlags), name) != std::end(kFlags); }

std::vector<std::string> changed(const Graph& g, const CompileOptions& options) { return onnx_worker_changed(g, options, kIreeCompiler, known_flag); }

std::string version() {
  static const std::string answer = "IREE " + onnx_worker_version(kIreeCompiler);
  return answer;
}

std::string_view kind_of(std::string_view) { return "flag"; }

}  // namespace

nlohmann::json iree_worker_options(const CompileOptions& options) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, value] : options.backend_options) {
    if (key == kLevelOption) {
      out["opt_level"] = backend_option_choice(options.backend_options, key, kLevels);
    } else if (key == kDisableOption) {
      const std::vector<std::string> names = split_commas(backend_option_string(options.backend_options, key));
      for (const std::string& n : names)
        if (!known_flag(n))
          throw UserError(
              fmt::format("backend option {}: '{}' is not one of IREE's optimisation flags ({})", key, printable(n), fmt::join(kFlags, ", ")));
      out["disabled_flags"] = names;
    } else {
      throw UserError(fmt::format("the iree backend takes the backend options {} and {}, not '{}'", kLevelOption, kDisableOption, printable(key)));
    }
  }
  return out;
}

extern const BackendSwitches kIreeSwitches;
const BackendSwitches kIreeSwitches = {"IREE", kLevelOption, kLevels, kDisableOption, {}, changed, version, nullptr, false, kind_of, true};

}  // namespace reprokit
