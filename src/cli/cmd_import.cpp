// `reprokit import MODEL.onnx -o DIR`: an ONNX model as DIR/<graph>.rk plus DIR/inputs/<input>.npy
// for every input whose value the model holds (its weights).
#include <fmt/core.h>

#include "command.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/names.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/onnx/onnx_import.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/support/files.h"

namespace reprokit::cli {

static int run_import(const std::vector<std::string>& argv) {
  std::vector<std::string> a = argv;
  for (auto& x : a)
    if (x == "-o") x = "--output";
  Args args(a, {"--output", "--shape"}, {});
  if (args.positional().size() != 1) throw UsageError("expected exactly one MODEL.onnx");
  auto out = args.get("--output");
  if (!out || out->empty()) throw UsageError("-o DIR is required");
  const std::string& path = args.positional()[0];
  ImportedModel m = import_onnx(path, parse_shape_specs(args.get_all("--shape")));
  Dir dir = Dir::create(*out);
  // The model's own names pick the files: none may replace one already there (an earlier import,
  // or anything else in DIR), so all are checked before the first is written.
  const std::string file = m.graph.name + ".rk";
  std::vector<std::string> files = {file};
  for (const auto& [name, t] : m.values) files.push_back("inputs/" + name + ".npy");
  refuse_existing(dir, files, "reprokit import");
  write_new_file(dir, file, fmt::format("# imported from {} (ONNX opset {}) by reprokit import\n{}", printable(path), m.opset, print_graph(m.graph)),
                 "reprokit import");
  if (!m.values.empty()) {
    Dir inputs = dir.sub("inputs", true);
    for (const auto& [name, t] : m.values) write_new_file(inputs, name + ".npy", encode_npy(t), "reprokit import");
  }
  fmt::print("wrote {} ({} nodes, {} inputs, {} of them with values in {})\n", dir.path(file), m.graph.num_ops(), m.graph.num_inputs(),
             m.values.size(), dir.path("inputs"));
  fmt::print("run it with: reprokit run {} --inputs {}\n", dir.path(file), dir.path("inputs"));
  return 0;
}

static CommandRegistration reg({"import", "reprokit import MODEL.onnx -o DIR [--shape NAME:[d0,d1,...]]...",
                                "import an ONNX model as DIR/<graph>.rk and its weights as DIR/inputs/*.npy",
                                "  -o, --output DIR       where to write <graph>.rk and inputs/<input name>.npy (created; existing files are\n"
                                "                         never replaced: an import that would replace one is refused, exit 2)\n"
                                "  --shape NAME:[d0,...]  the shape of input NAME, for inputs with dynamic dimensions (repeatable)\n"
                                "Imports ONNX opsets 7-17 (and opset 6 where semantics agree). Weights (initializers) become graph\n"
                                "inputs whose values are saved; shape arithmetic on constants is evaluated at import time. An op,\n"
                                "attribute or dtype reprokit cannot express is an error naming the ONNX node (exit 2).\n"
                                "`reprokit run DIR/<graph>.rk --inputs DIR/inputs` computes what `reprokit run MODEL.onnx` does.",
                                run_import});

}  // namespace reprokit::cli
