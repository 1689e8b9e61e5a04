// Repro files (see repro_file.h).
#include "reprokit/harness/repro_file.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "reprokit/harness/bundle.h"
#include "reprokit/ir/errors.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/runtime/torch_emitter.h"
#include "template_text.h"

namespace reprokit {

namespace fs = std::filesystem;

static void write_file(const fs::path& p, const std::string& text) {
  fs::path tmp = p;
  tmp += ".tmp";
  {
    std::ofstream out(tmp);
    out << text;
    if (!out) throw UserError(fmt::format("cannot write '{}'", p.string()));
  }
  fs::rename(tmp, p);  // a reader never sees a half-written repro
}

void write_repro_files(const std::string& dir, const Graph& g, const std::vector<Tensor>& inputs, const ReproSpec& spec,
                       const std::string& summary) {
  fs::path d(dir);
  fs::path in_dir = d / "repro_inputs";
  fs::path staging = d / "repro_inputs.new";
  fs::remove_all(staging);
  fs::create_directories(staging);
  for (int i = 0; i < g.num_inputs(); ++i) write_npy((staging / (g.node(i).name + ".npy")).string(), inputs.at(static_cast<size_t>(i)));
  fs::remove_all(in_dir);
  fs::rename(staging, in_dir);
  const CompileOptions& c = spec.options.compile;
  std::string inject;
  for (auto& i : c.injections) inject += (inject.empty() ? "" : " ") + i.op + ":" + i.kind;
  for (auto& p : c.pass_injections) inject += (inject.empty() ? "" : " ") + p.pass + ":" + std::to_string(p.n) + "(pass)";
  std::string failure = spec.expected.failed() ? spec.expected.kind + ": " + spec.expected.signature : "(none recorded)";
  std::string text = print_graph(g);
  std::map<std::string, std::string> vars = {
      {"GRAPH", g.name}, {"STAGE", spec.stage}, {"BACKEND", c.backend}, {"INJECT", inject.empty() ? "none" : inject},
      {"FAILURE", failure}, {"MESSAGE", spec.expected.message}, {"SPEC", spec.to_json().dump()}, {"GRAPH_TEXT", text},
      {"NODES", std::to_string(g.num_ops())}, {"SUMMARY", summary}, {"ENVIRONMENT", environment_info().dump(2)}};
  write_file(d / "repro.rk", render_template("repro.rk", vars));
  write_file(d / "repro_test.cpp", render_template("repro_test.cpp", vars));
  write_file(d / "CMakeLists.txt", render_template("repro_CMakeLists.txt", vars));
  write_file(d / "repro_torch.py", emit_torch_program(g));
  write_file(d / "BUG_REPORT.md", render_template("BUG_REPORT.md", vars));
}

ReproFile load_repro_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError(fmt::format("cannot read '{}': no such file or not readable", path));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
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
  } catch (const nlohmann::json::parse_error& e) {
    throw UserError(fmt::format("{}:{}: bad '#! spec' directive: {}", path, spec_line, e.what()));
  } catch (const UserError& e) {
    throw UserError(fmt::format("{}:{}: bad '#! spec' directive: {}", path, spec_line, e.what()));
  }
  r.graph = parse_module(text, path).entry();
  fs::path in_dir = fs::path(path).parent_path() / "repro_inputs";
  for (int i = 0; i < r.graph.num_inputs(); ++i) {
    fs::path f = in_dir / (r.graph.node(i).name + ".npy");
    if (!fs::exists(f)) throw UserError(fmt::format("{}: input file {} is missing", path, f.string()));
    Tensor t = read_npy(f.string());
    const TensorType& decl = r.graph.node(i).type;
    if (t.dtype() != decl.dtype || t.shape() != decl.shape)
      throw UserError(fmt::format("{}: input file {} holds {}[{}], the graph declares {}", path, f.string(), dtype_name(t.dtype()),
                                  fmt::join(t.shape(), ", "), decl.str()));
    r.inputs.push_back(t);
  }
  return r;
}

}  // namespace reprokit
