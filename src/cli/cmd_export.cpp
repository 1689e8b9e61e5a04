// `reprokit export FILE.rk -o FILE.onnx`: a graph as an ONNX model (opset 17).
#include <fmt/core.h>

#include <filesystem>

#include "command.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/onnx/onnx_export.h"
#include "reprokit/support/files.h"

namespace reprokit::cli {

static int run_export(const std::vector<std::string>& argv) {
  std::vector<std::string> a = argv;
  for (auto& x : a)
    if (x == "-o") x = "--output";
  Args args(a, {"--output", "--graph"}, {});
  if (args.positional().size() != 1) throw UsageError("expected exactly one FILE.rk");
  auto out = args.get("--output");
  if (!out || out->empty()) throw UsageError("-o FILE.onnx is required");
  Module m = load_module_file(args.positional()[0]);
  const Graph& g = args.get("--graph") ? m.get(*args.get("--graph")) : m.entry();
  std::string bytes = export_onnx(g);
  std::filesystem::path p(*out);
  if (p.filename().empty()) throw UsageError("-o must name a file");
  Dir dir = Dir::open(p.has_parent_path() ? p.parent_path().string() : std::string("."));
  write_new_file(dir, p.filename().string(), bytes, "reprokit export");
  fmt::print("wrote {} (graph {}, {} nodes, ONNX opset 17)\n", *out, g.name, g.num_ops());
  return 0;
}

static CommandRegistration reg({"export", "reprokit export FILE.rk -o FILE.onnx [--graph NAME]", "write a graph as an ONNX model (opset 17)",
                                "  -o, --output FILE.onnx  the model to write (never an existing file: that is refused, exit 2)\n"
                                "  --graph NAME            export graph NAME of a multi-graph file (default: the first)\n"
                                "Every op of the op set is exported (composites such as gelu, silu and var as their formulas);\n"
                                "inputs become contiguous ONNX inputs. The model passes onnx.checker and strict shape inference.",
                                run_export});

}  // namespace reprokit::cli
