// `reprokit passes`: lists the compiler passes in pipeline order, from the pass table.
#include <fmt/core.h>

#include "command.h"
#include "reprokit/codegen/passes/pass_manager.h"

namespace reprokit::cli {

static int run_passes_cmd(const std::vector<std::string>& argv) {
  Args args(argv, {}, {});
  if (!args.positional().empty()) throw UsageError("takes no arguments");
  for (auto& p : pass_table()) fmt::print("{:<26} {}\n", p.name, p.description);
  return 0;
}

static CommandRegistration reg({"passes", "reprokit passes", "list the compiler passes (in pipeline order)", "", run_passes_cmd});

}  // namespace reprokit::cli
