// `reprokit compare MODEL --inputs DIR --outputs DIR`: judges outputs that another program computed
// (ONNX Runtime, TVM, a vendor's compiler) for a model and its inputs by reprokit's accuracy rule
// against the float64 reference (harness/accuracy.h). The check an external runner needs to take
// part in `reprokit reduce --check` and `reprokit fuzz --check` (examples/ort_check).
//
// Files are named after the model's values: DIR/<name>.npy. For an ONNX model the name is the ONNX
// graph's own input or output name (what an ONNX runtime calls it), so a runner can name its files
// without knowing reprokit's name mapping; a name that cannot be a file name (one holding '/') is
// looked up under reprokit's mapped name instead, and the mapped name (what `reprokit run
// --save-outputs` writes) is accepted when the ONNX-named file is missing.
#include <fmt/core.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>

#include "command.h"
#include "reprokit/harness/accuracy.h"
#include "reprokit/harness/harness_config.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/names.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/onnx/onnx_import.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/support/files.h"

namespace reprokit::cli {

namespace {

// A value's files, in the order they are looked for: the ONNX name's (when it can be a file
// name), then reprokit's name's.
struct ValueFiles {
  std::string rk_name;             // %name in the imported graph
  std::vector<std::string> files;  // "<name>.npy", first choice first; never empty
};

// Whether `name` + ".npy" is one plain file name (no directory part, within NAME_MAX).
bool usable_as_file_stem(const std::string& name) {
  return !name.empty() && name.size() <= 251 && name.find('/') == std::string::npos && name.find('\0') == std::string::npos;
}

ValueFiles files_of(const std::string& rk_name, const std::string* onnx_name) {
  ValueFiles v{rk_name, {}};
  if (onnx_name && *onnx_name != rk_name && usable_as_file_stem(*onnx_name)) v.files.push_back(*onnx_name + ".npy");
  v.files.push_back(rk_name + ".npy");
  return v;
}

std::string tensor_str(const Tensor& t) { return fmt::format("{}[{}]", dtype_name(t.dtype()), fmt::join(t.shape(), ", ")); }

// The first of `v.files` that exists in `dir`, skipping second choices that are another value's
// first choice (ONNX output "y_1" and output "y/1", mapped to y_1_1, must not share a file).
std::optional<std::string> find_file(const std::string& dir, const ValueFiles& v, const std::map<std::string, std::string>& first_choice_of) {
  namespace fs = std::filesystem;
  for (size_t k = 0; k < v.files.size(); ++k) {
    if (k > 0) {
      auto owner = first_choice_of.find(v.files[k]);
      if (owner != first_choice_of.end() && owner->second != v.rk_name) continue;
    }
    std::error_code ec;
    const fs::path p = fs::path(dir) / v.files[k];
    if (fs::exists(fs::symlink_status(p, ec))) return p.string();
  }
  return std::nullopt;
}

// Reads `path` and checks it holds what `what` (a value of type t) must.
Tensor read_checked(const std::string& path, const TensorType& t, const std::string& what) {
  Tensor x = read_npy(path);
  if (x.dtype() != t.dtype || x.shape() != t.shape)
    throw UserError(fmt::format("{}: holds {}, {} is {}[{}]", path, tensor_str(x), what, dtype_name(t.dtype), fmt::join(t.shape, ", ")));
  return x;
}

std::string missing_message(const std::string& dir, const ValueFiles& v, const std::string& what) {
  std::string tried = fmt::format("'{}/{}'", dir, v.files[0]);
  for (size_t k = 1; k < v.files.size(); ++k) tried += fmt::format(" or '{}/{}'", dir, v.files[k]);
  return fmt::format("{}: {} is missing", what, tried);
}

std::optional<double> tolerance_of(const Args& args) {
  if (auto t = args.get("--tolerance")) {
    if (*t == "auto") return std::nullopt;
    char* end = nullptr;
    const double v = std::strtod(t->c_str(), &end);
    if (t->empty() || *end || !std::isfinite(v) || v < 0 || v > 1e6)
      throw UsageError(fmt::format("--tolerance expects auto or a number in [0, 1e6], got '{}'", printable(*t)));
    return v;
  }
  return HarnessConfig::from_env().tolerance;  // REPRO_TOLERANCE, else auto
}

int run_compare(const std::vector<std::string>& argv) {
  Args args(argv, {"--inputs", "--outputs", "--tolerance", "--shape", "--graph"}, {});
  if (args.positional().size() != 1) throw UsageError("expected exactly one MODEL.rk or MODEL.onnx");
  const auto outputs_dir = args.get("--outputs");
  if (!outputs_dir || outputs_dir->empty()) throw UsageError("--outputs DIR is required");
  const std::optional<double> tolerance = tolerance_of(args);
  const std::string& path = args.positional()[0];

  // The graph, each input's and output's files, and the values the model holds (initializers).
  Graph g;
  std::map<std::string, Tensor> known;
  std::vector<ValueFiles> in_files, out_files;
  if (is_onnx_path(path)) {
    if (args.get("--graph")) throw UsageError("--graph applies to .rk files only");
    ImportedModel im = import_onnx(path, parse_shape_specs(args.get_all("--shape")));
    g = std::move(im.graph);
    known = std::move(im.values);
    for (int i = 0; i < g.num_inputs(); ++i) in_files.push_back(files_of(g.node(i).name, &im.input_sources[static_cast<size_t>(i)]));
    for (size_t k = 0; k < g.outputs.size(); ++k) out_files.push_back(files_of(g.node(g.outputs[k]).name, &im.output_sources[k]));
  } else {
    Module m = load_model(path, parse_shape_specs(args.get_all("--shape")));
    g = args.get("--graph") ? m.get(*args.get("--graph")) : m.entry();
    for (int i = 0; i < g.num_inputs(); ++i) in_files.push_back(files_of(g.node(i).name, nullptr));
    for (int o : g.outputs) out_files.push_back(files_of(g.node(o).name, nullptr));
  }
  // Two different values must not be read from one file.
  std::map<std::string, std::string> first_in, first_out;  // first-choice file -> %name
  for (auto group : {std::pair{&in_files, &first_in}, std::pair{&out_files, &first_out}})
    for (const ValueFiles& v : *group.first)
      if (auto [it, fresh] = group.second->emplace(v.files[0], v.rk_name); !fresh && it->second != v.rk_name)
        throw UserError(fmt::format("{}: values %{} and %{} would both be read from '{}'; compare cannot tell them apart", path, it->second,
                                    v.rk_name, v.files[0]));

  // Inputs: every one needs its value, from --inputs or the model (an ONNX initializer). Nothing
  // random: the outputs were computed from definite inputs.
  const std::string inputs_dir = args.get_or("--inputs", "");
  if (!inputs_dir.empty()) Dir::open(inputs_dir);  // "is not a directory", named
  std::vector<Tensor> inputs;
  for (int i = 0; i < g.num_inputs(); ++i) {
    const ValueFiles& v = in_files[static_cast<size_t>(i)];
    const std::string what = "input %" + v.rk_name;
    std::optional<std::string> file = inputs_dir.empty() ? std::nullopt : find_file(inputs_dir, v, first_in);
    if (file) {
      inputs.push_back(read_checked(*file, g.node(i).type, what));
    } else if (auto it = known.find(v.rk_name); it != known.end()) {
      inputs.push_back(it->second);
    } else if (inputs_dir.empty()) {
      throw UsageError(fmt::format("{} has no value in the model: give --inputs DIR holding {}", what, v.files[0]));
    } else {
      throw UserError(missing_message(inputs_dir, v, what));
    }
  }
  Dir::open(*outputs_dir);
  std::vector<Tensor> outputs;
  std::vector<std::string> output_paths;
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    const ValueFiles& v = out_files[k];
    const std::string what = "output %" + v.rk_name;
    std::optional<std::string> file = find_file(*outputs_dir, v, first_out);
    if (!file) throw UserError(missing_message(*outputs_dir, v, what));
    outputs.push_back(read_checked(*file, g.node(g.outputs[k]).type, what));
    output_paths.push_back(*file);
  }

  std::vector<OutputVerdict> verdicts;
  const Failure f = check_accuracy(g, inputs, outputs, tolerance, verdicts);
  const std::string rule = tolerance ? fmt::format("tolerance {:g}", *tolerance) : std::string("auto noise floor");
  for (size_t k = 0; k < outputs.size(); ++k) {
    const OutputVerdict& v = k < verdicts.size() ? verdicts[k] : OutputVerdict{"not compared", std::nullopt, ""};
    std::string error = is_floating(outputs[k].dtype()) ? "" : "  exact";
    if (v.error) error = fmt::format("  error vs float64: RMS {:.3g}, largest {:.3g}", v.error->rms, v.error->max);
    fmt::print("%{}  {}  {}{}  {}\n", g.node(g.outputs[k]).name, output_paths[k], tensor_str(outputs[k]), error, v.why.empty() ? "ok" : "FAIL");
  }
  for (const OutputVerdict& v : verdicts)
    if (!v.decided_at_kink.empty()) fmt::print("reprokit compare: note: {}\n", v.decided_at_kink);
  if (f.failed()) {
    fmt::print("reprokit compare: MISMATCH ({}): {}\n", rule, f.message);
    return 1;
  }
  fmt::print("reprokit compare: PASS: {} output{} agree with the float64 reference ({})\n", outputs.size(), outputs.size() == 1 ? "" : "s", rule);
  return 0;
}

}  // namespace

static CommandRegistration reg(
    {"compare", "reprokit compare MODEL.rk|MODEL.onnx --outputs DIR [--inputs DIR] [--tolerance T|auto] [--shape NAME:[d0,...]] [--graph NAME]",
     "judge outputs another program computed for a model by the accuracy rule against float64",
     "  --outputs DIR       the outputs to judge: DIR/<output name>.npy for each output of the model\n"
     "  --inputs DIR        the inputs they were computed from: DIR/<input name>.npy for each input\n"
     "                      (an ONNX model's initializers are its default values; any other missing input\n"
     "                      is an error, never filled in at random)\n"
     "  --tolerance T|auto  auto (the default, or REPRO_TOLERANCE): each floating output's error against\n"
     "                      float64 within 3x the noise floor of legitimate ways of computing the graph\n"
     "                      (docs/ACCURACY.md); a number: the fixed rule with that tolerance\n"
     "  --shape NAME:[d,..] (.onnx models) the shape of an input with dynamic dimensions; repeatable\n"
     "  --graph NAME        (.rk files) compare graph NAME of a multi-graph file\n"
     "Names: an ONNX model's files are named after its ONNX input and output names (what an ONNX runtime\n"
     "calls them); a name holding '/' uses reprokit's mapped name instead, and the mapped name (what\n"
     "`reprokit run --save-outputs` writes) is read when the ONNX-named file is missing. Integer and bool\n"
     "outputs must match exactly; NaN and inf must appear where the reference has them.\n"
     "Prints a line per output, then PASS or MISMATCH. Exit 0: every output passes; 1: one does not;\n"
     "2: bad usage or input (a missing .npy, or one of the wrong dtype or shape, named with its path).\n"
     "examples/ort_check uses it to check ONNX Runtime under `reprokit reduce --check` and `reprokit fuzz`.",
     run_compare});

}  // namespace reprokit::cli
