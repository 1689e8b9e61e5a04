// The optimisation switches of a compiler that is not reprokit's, named as its backend options
// name them: what `reprokit bisect` walks to say which of the compiler's own optimisers causes a
// failure (as it names one of reprokit's passes for the cpp backend). A backend declares them in
// its row of the backend table; one that exposes none has no switches.
#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "reprokit/codegen/compile_options.h"
#include "reprokit/ir/graph.h"

namespace reprokit {

// An optimiser of the compiler that runs many smaller ones, each of which can be turned off by
// its own name (ONNX Runtime's rule-based transformers run rewrite rules).
struct OptimizerGroup {
  std::string_view name;
  std::span<const std::string_view> members;
};

struct BackendSwitches {
  std::string_view compiler;                 // the compiler's own name, for messages
  std::string_view level_option;             // the backend option that sets how much it optimises
  std::span<const std::string_view> levels;  // that option's values, from least to most
  std::string_view disable_option;           // the backend option naming optimisers to turn off
  std::span<const OptimizerGroup> groups;
  // The optimisers that changed `g` under `options`, in the order they ran; when one threw, it
  // is last. Asks the compiler itself.
  std::vector<std::string> (*changed)(const Graph& g, const CompileOptions& options);
  // The compiler's version as it reports it, for bug reports; "unknown" when it cannot say.
  std::string (*version)();
  // The members of group `group` for `g` under `options`, asked of the compiler, for a compiler
  // whose groups depend on the graph (Inductor's lowerings: one per node); null when every group
  // is listed in `groups`.
  std::vector<std::string> (*members)(const Graph& g, const CompileOptions& options, std::string_view group) = nullptr;
  // Whether `reprokit minify` runs the search for every report it writes: where each try costs an
  // interpreter's start and a compile (Inductor's), the report names `reprokit bisect` instead.
  bool searched_in_reports = true;
  // What the compiler calls the switch `name` in its own terms (Inductor: "pass", "config change",
  // "subsystem"); null where every switch is an optimiser (ONNX Runtime's).
  std::string_view (*kind_of)(std::string_view name) = nullptr;
  std::string_view kind(std::string_view name) const { return kind_of ? kind_of(name) : "optimiser"; }
  // Whether the lowest level still runs optimisers that can be turned off one by one (TVM's
  // opt_level 0 runs its whole pipeline): then a failure there is searched for one too.
  bool lowest_level_optimises = false;
};

// `names` joined with commas, as a disable option takes them; `base` (the options' own list) first.
std::string optimizer_list(const std::string& base, const std::vector<std::string>& names);

}  // namespace reprokit
