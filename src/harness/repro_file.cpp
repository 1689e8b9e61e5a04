// Repro files (see repro_file.h).
#include "reprokit/harness/repro_file.h"

#include "compiler_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <filesystem>
#include <sstream>

#include "reprokit/codegen/backend.h"
#include "reprokit/codegen/compiler.h"
#include "reprokit/codegen/passes/pass_manager.h"
#include "reprokit/harness/bundle.h"
#include "reprokit/harness/stack.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/onnx/onnx_export.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/ir/names.h"
#include "reprokit/runtime/templates.h"
#include "reprokit/codegen/inductor_options.h"
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

namespace {

// What the spec does with the compiler's passes, in a few words.
std::string passes_summary(const ReproSpec& spec) {
  const CompileOptions& c = spec.options.compile;
  if (const Backend* b = find_backend(c.backend); b && b->switches)
    return fmt::format("none of reprokit's; {}'s own: see above", b->switches->compiler);
  if (const Backend* b = find_backend(c.backend); !b || !b->runs_passes) return fmt::format("none (the {} backend runs none)", c.backend);
  if (!c.run_passes) return "none";
  std::vector<std::string> on;
  for (auto& p : pass_table()) {
    if (c.disabled_passes.count(p.name)) continue;
    auto lim = c.pass_limits.find(p.name);
    on.push_back(lim == c.pass_limits.end() ? p.name : fmt::format("{} (first {} rewrites)", p.name, lim->second));
  }
  if (on.size() == pass_table().size() && c.pass_limits.empty()) return "all";
  if (on.empty()) return "none (all switched off)";
  return fmt::format("only {}", fmt::join(on, ", "));
}

// The graph's name as a GoogleTest test name: a C++ identifier that GoogleTest runs (a name
// starting with DISABLED_ would make a test that silently never runs; '.' and other characters
// are valid in graph names but not in identifiers).
std::string test_name(const std::string& graph) {
  std::string n;
  for (char c : graph) n += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (n.empty() || !std::isalpha(static_cast<unsigned char>(n[0])) || n.rfind("DISABLED_", 0) == 0) n = "g_" + n;
  return n;
}

// "OP:KIND" for each planted fault. An injection on a composite op (sigmoid) lands on the node that
// computes its value, which after decomposition is the last primitive of it (reciprocal): when the
// repro holds no node of the op asked about, say which node carries the fault.
std::string injection_summary(const Graph& g, const CompileOptions& c) {
  std::string out;
  for (const auto& inj : c.injections) {
    std::string s = inj.str();
    bool op_present = false;
    for (const Node& n : g.nodes) op_present |= !n.is_input() && n.op == inj.op;
    if (!op_present) {
      std::vector<std::string> carriers;
      for (const auto& [name, fault] : c.injection_nodes) {
        int id = g.find(name);
        if (id >= 0 && !g.node(id).is_input() && fault.kind == inj.kind) carriers.push_back(print_node(g, id));
      }
      if (!carriers.empty())
        s += fmt::format(" (no {} node is left: the fault sits on {}, the last primitive of {}'s decomposition, which computes its value)",
                         op_name(inj.op), fmt::join(carriers, "; "), op_name(inj.op));
    }
    out += (out.empty() ? "" : " ") + s;
  }
  for (const auto& p : c.pass_injections) out += (out.empty() ? "" : " ") + p.pass + ":" + std::to_string(p.n) + "(pass)";
  return out;
}

// The template variables of a repro (or twin) file.
std::map<std::string, std::string> repro_vars(const std::string& stem, const Graph& g, const ReproSpec& spec, const std::string& summary) {
  const CompileOptions& c = spec.options.compile;
  std::string inject = injection_summary(g, c);
  std::string failure = spec.expected.failed() ? spec.expected.label() : "(none recorded)";
  int64_t elements = 0;
  for (int i = 0; i < g.num_inputs(); ++i) elements += g.node(i).type.numel();
  return {{"GRAPH", g.name},
          {"TITLE", fmt::format("Bug report: graph `{}` fails in the {} stage ({} backend)", g.name, spec.stage, c.backend)},
          {"TEST_NAME", test_name(g.name)},
          {"FILE", stem + ".rk"},
          {"INPUTS_DIR", stem + "_inputs"},
          {"STAGE", spec.stage},
          {"BACKEND", c.backend},
          {"PASSES", comment_safe(passes_summary(spec))},
          {"INJECT", inject.empty() ? "none" : comment_safe(inject)},
          {"FAILURE", comment_safe(failure)},
          {"MESSAGE", utf8_safe(spec.expected.message)},
          {"SPEC", spec.to_json().dump()},
          {"GRAPH_TEXT", print_graph(g)},
          {"NODES", std::to_string(g.num_ops())},
          {"ELEMENTS", std::to_string(elements)},
          {"SUMMARY", comment_safe(summary)},
          {"ENVIRONMENT", environment_info().dump(2)}};
}

// How the failing program called Inductor, for repro_torch.py to call it the same way; none for
// reprokit's own backends.
std::optional<InductorCall> inductor_call(const ReproSpec& spec) {
  const CompileOptions& c = spec.options.compile;
  if (c.backend != "inductor") return std::nullopt;
  InductorCall call{c.backend_options, ""};
  // The switches bisect turns are reprokit's, not config options: the stage is torch.compile's
  // backend; subsystems turned off exist only inside reprokit's worker.
  call.options.erase(std::string(kInductorDisableOption));
  if (call.options.erase(std::string(kInductorStageOption)))
    call.backend = backend_option_choice(c.backend_options, kInductorStageOption, kInductorStages);
  if (call.options.erase(std::string(kInductorDeviceOption)))
    call.device = backend_option_choice(c.backend_options, kInductorDeviceOption, kInductorDevices);
  for (const FaultInjection& inj : c.injections)
    if (inj.op == Op::relu) call.relu_bug = std::string(fault_kind_name(inj.kind));
  return call;
}

// The BUG_REPORT.md lines on the compiler that is not reprokit's, when it is Inductor.
std::string compiler_note(const std::optional<InductorCall>& inductor) {
  if (!inductor) return "";
  std::string options;
  for (const auto& [key, value] : inductor->options) options += fmt::format("{}`{}={}`", options.empty() ? "" : ", ", key, value);
  return fmt::format(
      "The compiler is PyTorch's Inductor: `python3 repro_torch.py` (torch 2, no reprokit needed) compiles the graph with "
      "`torch.compile(backend=\"inductor\")` as the program did, prints `REPRODUCED` and exits 1 when the failure happens; "
      "paste it into a PyTorch issue as it is. Inductor options (`torch._inductor.config`): {}. Planted fault: {}.\n",
      options.empty() ? "the defaults" : comment_safe(options),
      inductor->relu_bug.empty()
          ? "none"
          : fmt::format("`{}.inject_relu_bug_TESTING_ONLY = \"{}\"`", inductor->device == "cuda" ? "triton" : "cpp", inductor->relu_bug));
}

// The inputs/ of the bundle a repro is written into (the bundle itself or its original/), whose
// files a repro input with the same bytes links to: a model's weights are stored once per bundle,
// not once for the bundle, once for the un-minified repro and once for the minified one.
std::optional<Dir> bundle_inputs(const Dir& d) {
  if (d.exists("manifest.json") && d.is_dir("inputs")) return d.sub("inputs");
  const std::filesystem::path parent = std::filesystem::path(d.path()).parent_path();
  if (std::filesystem::path(d.path()).filename() != "original" || parent.empty()) return std::nullopt;
  Dir bundle = Dir::open(parent.string());
  if (bundle.exists("manifest.json") && bundle.is_dir("inputs")) return bundle.sub("inputs");
  return std::nullopt;
}

// <stem>.rk and its inputs in <stem>_inputs/ (staged in a fresh directory and swapped in, so the
// file and its inputs agree).
void write_rk(const Dir& d, const std::string& stem, const Graph& g, const std::vector<Tensor>& inputs,
              const std::map<std::string, std::string>& vars) {
  const std::string in_dir = stem + "_inputs";
  d.remove_tree(in_dir + ".new");
  Dir staging = d.sub(in_dir + ".new", true);
  const std::optional<Dir> store = bundle_inputs(d);
  for (int i = 0; i < g.num_inputs(); ++i) {
    const std::string file = g.node(i).name + ".npy", bytes = encode_npy(inputs.at(static_cast<size_t>(i)));
    if (!store || !staging.link_if_same(file, bytes, *store, file)) staging.write(file, bytes);
  }
  d.remove_tree(in_dir);
  d.rename(in_dir + ".new", in_dir);
  d.write(stem + ".rk", render_template("repro.rk", vars));
}

// <stem>_compiled/<output>.npy: what the compiled graph computed (staged and swapped in like the
// inputs), or no such directory (a compiled result of an earlier repro must not outlive it).
void write_compiled(const Dir& d, const std::string& stem, const Graph& g, const std::vector<Tensor>* compiled) {
  const std::string out_dir = stem + "_compiled";
  d.remove_tree(out_dir + ".new");
  if (!compiled || compiled->size() != g.outputs.size()) {
    d.remove_tree(out_dir);
    return;
  }
  Dir staging = d.sub(out_dir + ".new", true);
  for (size_t k = 0; k < g.outputs.size(); ++k) staging.write(g.node(g.outputs[k]).name + ".npy", encode_npy((*compiled)[k]));
  d.remove_tree(out_dir);
  d.rename(out_dir + ".new", out_dir);
}

}  // namespace

std::optional<std::vector<Tensor>> compiled_outputs(const ReproSpec& spec, const Graph& g, const std::vector<Tensor>& inputs) {
  if (spec.expected.kind != FailureKind::accuracy) return std::nullopt;
  try {
    return run_stage(spec.stage, g, inputs, spec.options).outputs;
  } catch (const CompileFailure&) {
  } catch (const UserError&) {}
  return std::nullopt;
}

void write_repro_files(const std::string& dir, const Graph& g, const std::vector<Tensor>& inputs, const ReproSpec& spec, const std::string& summary,
                       const PassingTwin* twin, const std::vector<Tensor>* compiled, const nlohmann::json* compiler_bisection) {
  Dir d = Dir::open(dir);
  std::map<std::string, std::string> vars = repro_vars("repro", g, spec, summary);
  const std::optional<InductorCall> inductor = inductor_call(spec);
  vars["COMPILER"] = compiler_note(inductor);
  if (std::optional<CompilerReport> own = write_compiler_report(d, g, inputs, spec, compiler_bisection)) {
    vars["TITLE"] = comment_safe(own->title);
    vars["COMPILER"] += own->section;
  }
  write_rk(d, "repro", g, inputs, vars);
  write_compiled(d, "repro", g, compiled);
  // The passing twin, or none: a twin of an earlier repro must not outlive it.
  if (twin) {
    write_rk(d, "twin", twin->graph, twin->inputs, repro_vars("twin", twin->graph, twin->spec, "Passing twin of repro.rk: " + twin->difference));
    write_compiled(d, "twin", twin->graph, twin->compiled ? &*twin->compiled : nullptr);
    const std::optional<InductorCall> twin_inductor = inductor_call(twin->spec);
    d.write("twin_torch.py", emit_torch_program(twin->graph, "twin", twin_inductor ? &*twin_inductor : nullptr));
    vars["TWIN"] = fmt::format(
        "## Passing twin\n\n{}\n\n```\nreprokit repro twin.rk             # prints NOT REPRODUCED: the nearest variant that passes\n```\n\n"
        "```\n{}```\n",
        comment_safe(twin->difference), print_graph(twin->graph));
  } else {
    d.remove_file("twin.rk");
    d.remove_file("twin_torch.py");
    d.remove_tree("twin_inputs");
    d.remove_tree("twin_compiled");
    vars["TWIN"] = "";
  }
  // repro.onnx lets the bug go to any ONNX consumer; a graph ONNX cannot hold still gets the rest.
  try {
    write_onnx_repro(d, g);
    vars["ONNX"] = "`repro.onnx` is the same graph as an ONNX model (opset 17); its inputs are `repro_inputs/<input>.npy`.";
  } catch (const UserError& e) {
    d.remove_file("repro.onnx");
    vars["ONNX"] = "No `repro.onnx`: " + comment_safe(e.what());
  } catch (const InternalError& e) {  // a bug in the exporter must not cost the user the other files
    d.remove_file("repro.onnx");
    vars["ONNX"] = "No `repro.onnx` (a reprokit bug, please report it): " + comment_safe(e.what());
  }
  d.write("repro_test.cpp", render_template("repro_test.cpp", vars));
  d.write("CMakeLists.txt", render_template("repro_CMakeLists.txt", vars));
  d.write("repro_torch.py", emit_torch_program(g, "repro", inductor ? &*inductor : nullptr));
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
  } catch (const UserError& e) { throw UserError(fmt::format("{}:{}: bad '#! spec' directive: {}", path, spec_line, e.what())); }
  r.graph = parse_module(text, path).entry();
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  Dir d = Dir::open(parent.empty() ? "." : parent.string());
  // FILE.rk's inputs are in FILE_inputs/ (repro.rk: repro_inputs/, twin.rk: twin_inputs/).
  const std::string in_dir = std::filesystem::path(path).stem().string() + "_inputs";
  for (int i = 0; i < r.graph.num_inputs(); ++i) {
    std::string file = in_dir + "/" + r.graph.node(i).name + ".npy";
    if (!d.exists(in_dir) || !d.sub(in_dir).exists(r.graph.node(i).name + ".npy"))
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
