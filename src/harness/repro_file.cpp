// Repro files (see repro_file.h).
#include "reprokit/harness/repro_file.h"

#include <fmt/format.h>

#include <filesystem>
#include <sstream>

#include "reprokit/harness/bundle.h"
#include "reprokit/ir/errors.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/onnx/onnx_export.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/ir/names.h"
#include "reprokit/runtime/templates.h"
#include "reprokit/runtime/torch_emitter.h"
#include "reprokit/support/files.h"

namespace reprokit {

namespace {

// One line of printable ASCII without backslashes: what may go into a comment of a generated
// file (a newline or a trailing backslash would end or extend the comment).
std::string comment_safe(std::string_view s) {
  std::string out;
  for (char c : s) out += (c >= 0x20 && c < 0x7f && c != '\\') ? c : '?';
  return out;
}

}  // namespace

void write_repro_files(const std::string& dir, const Graph& g, const std::vector<Tensor>& inputs, const ReproSpec& spec,
                       const std::string& summary) {
  Dir d = Dir::open(dir);
  // New inputs are staged in a fresh directory and swapped in, so repro.rk and its inputs agree.
  d.remove_tree("repro_inputs.new");
  Dir staging = d.sub("repro_inputs.new", true);
  for (int i = 0; i < g.num_inputs(); ++i) staging.write(g.node(i).name + ".npy", encode_npy(inputs.at(static_cast<size_t>(i))));
  d.remove_tree("repro_inputs");
  d.rename("repro_inputs.new", "repro_inputs");
  const CompileOptions& c = spec.options.compile;
  std::string inject;
  for (auto& i : c.injections) inject += (inject.empty() ? "" : " ") + i.str();
  for (auto& p : c.pass_injections) inject += (inject.empty() ? "" : " ") + p.pass + ":" + std::to_string(p.n) + "(pass)";
  std::string failure = spec.expected.failed() ? std::string(spec.expected.kind_name()) + ": " + spec.expected.signature : "(none recorded)";
  // repro.onnx lets the bug go to any ONNX consumer; a graph ONNX cannot hold still gets the rest.
  std::string onnx_note;
  try {
    write_onnx_repro(d, g);
    onnx_note = "`repro.onnx` is the same graph as an ONNX model (opset 17); its inputs are `repro_inputs/<input>.npy`.";
  } catch (const UserError& e) {
    d.remove_file("repro.onnx");
    onnx_note = "No `repro.onnx`: " + comment_safe(e.what());
  } catch (const InternalError& e) {  // a bug in the exporter must not cost the user the other files
    d.remove_file("repro.onnx");
    onnx_note = "No `repro.onnx` (a reprokit bug, please report it): " + comment_safe(e.what());
  }
  std::string text = print_graph(g);
  std::map<std::string, std::string> vars = {
      {"GRAPH", g.name},
      {"STAGE", spec.stage},
      {"BACKEND", c.backend},
      {"INJECT", inject.empty() ? "none" : comment_safe(inject)},
      {"FAILURE", comment_safe(failure)},
      {"MESSAGE", utf8_safe(spec.expected.message)},
      {"SPEC", spec.to_json().dump()},
      {"GRAPH_TEXT", text},
      {"NODES", std::to_string(g.num_ops())},
      {"SUMMARY", comment_safe(summary)},
      {"ONNX", onnx_note},
      {"ENVIRONMENT", environment_info().dump(2)}};
  d.write("repro.rk", render_template("repro.rk", vars));
  d.write("repro_test.cpp", render_template("repro_test.cpp", vars));
  d.write("CMakeLists.txt", render_template("repro_CMakeLists.txt", vars));
  d.write("repro_torch.py", emit_torch_program(g));
  d.write("BUG_REPORT.md", render_template("BUG_REPORT.md", vars));
}

ReproFile load_repro_file(const std::string& path) {
  std::string text = read_file(path, kMaxTextFileBytes);
  ReproFile r;
  r.path = path;
  std::istringstream lines(text);
  std::string line, spec_json;
  int lineno = 0, spec_line = 0;
  while (std::getline(lines, line)) {
    ++lineno;
    if (line.rfind("#! spec ", 0) == 0) {
      spec_json = line.substr(8);
      spec_line = lineno;
    }
  }
  if (spec_json.empty()) throw UserError(fmt::format("{}: not a reprokit repro: no '#! spec' directive", path));
  try {
    r.spec = ReproSpec::from_json(nlohmann::json::parse(spec_json));
  } catch (const nlohmann::json::exception& e) {
    throw UserError(fmt::format("{}:{}: bad '#! spec' directive: {}", path, spec_line, e.what()));
  } catch (const UserError& e) {
    throw UserError(fmt::format("{}:{}: bad '#! spec' directive: {}", path, spec_line, e.what()));
  }
  r.graph = parse_module(text, path).entry();
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  Dir d = Dir::open(parent.empty() ? "." : parent.string());
  for (int i = 0; i < r.graph.num_inputs(); ++i) {
    std::string file = "repro_inputs/" + r.graph.node(i).name + ".npy";
    if (!d.exists("repro_inputs") || !d.sub("repro_inputs").exists(r.graph.node(i).name + ".npy"))
      throw UserError(fmt::format("{}: input file {} is missing", path, d.path(file)));
    Tensor t = parse_npy(d.read(file, kMaxDataFileBytes), d.path(file));
    const TensorType& decl = r.graph.node(i).type;
    if (t.dtype() != decl.dtype || t.shape() != decl.shape)
      throw UserError(fmt::format("{}: input file {} holds {}[{}], the graph declares {}", path, d.path(file), dtype_name(t.dtype()),
                                  fmt::join(t.shape(), ", "), decl.str()));
    r.inputs.push_back(t);
  }
  return r;
}

}  // namespace reprokit
