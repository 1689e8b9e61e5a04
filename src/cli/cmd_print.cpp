// `reprokit print FILE`: prints a graph file (.rk, .onnx, or the .json form / a bundle manifest) as .rk text.
#include <fmt/core.h>

#include "command.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/json_format.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/onnx/onnx_import.h"
#include "reprokit/support/files.h"

namespace reprokit::cli {

static int run_print(const std::vector<std::string>& argv) {
  Args args(argv, {"--graph"}, {});
  if (args.positional().size() != 1) throw UsageError("expected exactly one FILE");
  const std::string& path = args.positional()[0];
  Module m;
  if (path.size() > 5 && path.substr(path.size() - 5) == ".json") {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(read_file(path, kMaxTextFileBytes));
    } catch (const nlohmann::json::exception& e) { throw UserError(fmt::format("{}: invalid JSON: {}", path, e.what())); }
    if (j.is_object() && j.contains("graph") && !j.contains("nodes")) j = j["graph"];  // a bundle manifest
    try {
      m = module_from_json(j);
    } catch (const UserError& e) { throw UserError(fmt::format("{}: {}", path, e.what())); } catch (const nlohmann::json::exception& e) {
      throw UserError(fmt::format("{}: malformed graph JSON: {}", path, e.what()));
    }
  } else {
    m = load_model(path);  // .rk, or an ONNX model (imported)
  }
  if (auto name = args.get("--graph")) fmt::print("{}", print_graph(m.get(*name)));
  else fmt::print("{}", print_module(m));
  return 0;
}

static CommandRegistration reg(
    {"print", "reprokit print FILE [--graph NAME]", "print a graph (.rk, .onnx or .json) in the text format",
     "  FILE          a .rk file, an ONNX model, a graph .json, or a bundle's manifest.json\n  --graph NAME  print only the graph NAME", run_print});

}  // namespace reprokit::cli
