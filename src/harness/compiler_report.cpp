// A bug report in a foreign compiler's own terms (see compiler_report.h).
#include "compiler_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "bisect_switches.h"
#include "reprokit/codegen/backend.h"
#include "reprokit/codegen/onnx_worker_compilers.h"
#include "reprokit/harness/failure.h"
#include "reprokit/harness/child_run.h"
#include "reprokit/harness/repro_file.h"
#include "reprokit/process/self_executable.h"
#include "reprokit/ir/names.h"
#include "reprokit/runtime/interpreter.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/runtime/templates.h"
#include "reprokit/support/errors.h"

namespace reprokit {

namespace {

using nlohmann::json;

constexpr const char* kExpectedDir = "repro_expected";

// What went wrong, in the words of someone who ran the compiler.
std::string what_failed(FailureKind kind) {
  switch (kind) {
    case FailureKind::compile_error: return "session creation fails";
    case FailureKind::runtime_error: return "the run fails";
    case FailureKind::crash: return "crashes";
    case FailureKind::timeout: return "hangs";
    case FailureKind::accuracy: return "wrong results";
    default: return "fails";
  }
}

// The ops of the graph in order, "pad -> avg_pool2d" (at most 6, then how many more).
std::string op_chain(const Graph& g) {
  std::vector<std::string> ops;
  for (const Node& n : g.nodes)
    if (!n.is_input()) ops.push_back(std::string(op_name(n.op)));
  if (ops.size() > 6) {
    const size_t more = ops.size() - 6;
    ops.resize(6);
    ops.push_back(fmt::format("... ({} more)", more));
  }
  return ops.empty() ? "a graph of constants" : fmt::format("{}", fmt::join(ops, " -> "));
}

// A Python list literal of strings (JSON's string syntax, ASCII only, is Python's too).
std::string python_strings(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + json(s).dump(-1, ' ', true);
  return out;
}

// "rewrite rule Pad_Fusion", "optimiser QuickGeluFusion" (or the compiler's own word for the
// switch: "config change emulate_precision_casts"), or "" when the search named none.
std::string culprit(const json* bisection) {
  if (!bisection || !bisection->is_object()) return "";
  if (bisection->value("rule", json()).is_string()) return "rewrite rule " + (*bisection)["rule"].get<std::string>();
  if (bisection->value("optimizer", json()).is_string()) {
    const json kind = bisection->value("optimizer_kind", json());
    return (kind.is_string() ? kind.get<std::string>() : std::string("optimiser")) + " " + (*bisection)["optimizer"].get<std::string>();
  }
  return "";
}

}  // namespace

namespace {

// Every compiler's reproducer script; a directory holds at most the one of its backend.
constexpr std::string_view kReproducers[] = {"repro_onnxruntime.py", "repro_openvino.py", "repro_tvm.py", "repro_iree.py"};

// The float64 values a reproducer judges the compiler's outputs against, in kExpectedDir (written
// aside, then moved in place); returns the outputs' names.
std::vector<std::string> write_expected(const Dir& d, const Graph& g, const std::vector<Tensor>& inputs) {
  InterpretOptions f64;
  f64.cast_to_f64 = true;
  const std::vector<Tensor> expected = interpret(g, inputs, f64);
  d.remove_tree(std::string(kExpectedDir) + ".new");
  const Dir staging = d.sub(std::string(kExpectedDir) + ".new", true);
  std::vector<std::string> outputs;
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    outputs.push_back(g.node(g.outputs[k]).name);
    staging.write(outputs.back() + ".npy", encode_npy(expected.at(k)));
  }
  d.remove_tree(kExpectedDir);
  d.rename(std::string(kExpectedDir) + ".new", kExpectedDir);
  return outputs;
}

// What the compiler is and how it was set, for the report and its reproducer.
struct Reproducer {
  std::string compiler, script, version;
  std::map<std::string, std::string> vars;  // the template's, less those every reproducer has
  std::string settings;                     // the report's lines on the compiler's settings
};

Reproducer onnxruntime_reproducer(const BackendSwitches& sw, const CompileOptions& c) {
  // What goes into the generated script is one of the compiler's own level names (a bundle is
  // untrusted), and every name goes in as a quoted literal.
  std::string level = backend_option_string(c.backend_options, sw.level_option);
  if (level.empty()) level = std::string(sw.levels.back());
  if (std::find(sw.levels.begin(), sw.levels.end(), level) == sw.levels.end())
    throw UserError(fmt::format("backend option {}: '{}' is not one of {}", sw.level_option, printable(level), fmt::join(sw.levels, ", ")));
  const std::vector<std::string> disabled = split_commas(backend_option_string(c.backend_options, sw.disable_option));
  return {std::string(sw.compiler),
          "repro_onnxruntime.py",
          sw.version(),
          {{"ORT_LEVEL", python_strings({level})}, {"ORT_DISABLED", python_strings(disabled)}},
          fmt::format("CPU execution provider, one thread\n- Session options: graph_optimization_level={}, disabled optimizers: {}", level,
                      disabled.empty() ? "none" : fmt::format("{}", fmt::join(disabled, ", ")))};
}

// A compiler the ONNX worker runs: its options (validated as a run validates them) go into the
// script as one JSON string literal, which the script parses.
Reproducer onnx_worker_reproducer(const OnnxWorkerCompiler& w) {
  std::string shown;
  for (const auto& [key, value] : w.options.items()) shown += fmt::format("{}{}={}", shown.empty() ? "" : ", ", key, value.dump(-1, ' ', true));
  return {w.compiler,
          fmt::format("repro_{}.py", w.backend),
          onnx_worker_compiler_version(w.backend),
          {{"OPTIONS", json(w.options.dump(-1, ' ', true)).dump(-1, ' ', true)}},
          fmt::format("CPU, one thread\n- Options: {}", shown.empty() ? "the compiler's defaults" : shown)};
}

std::optional<Reproducer> reproducer_for(const CompileOptions& c) {
  const Backend* backend = find_backend(c.backend);
  if (backend && backend->switches && c.backend == "onnxruntime") return onnxruntime_reproducer(*backend->switches, c);
  if (std::optional<OnnxWorkerCompiler> w = onnx_worker_compiler(c)) return onnx_worker_reproducer(*w);
  return std::nullopt;
}

}  // namespace

std::optional<CompilerReport> write_compiler_report(const Dir& d, const Graph& g, const std::vector<Tensor>& inputs, const ReproSpec& spec,
                                                    const json* bisection) {
  const std::optional<Reproducer> r = reproducer_for(spec.options.compile);
  for (std::string_view script : kReproducers)
    if (!r || script != r->script) d.remove_file(std::string(script));
  if (!r) {
    d.remove_tree(kExpectedDir);
    return std::nullopt;
  }
  std::map<std::string, std::string> vars = r->vars;
  vars["GRAPH"] = g.name;
  vars["INPUTS_DIR"] = "repro_inputs";
  vars["EXPECTED_DIR"] = kExpectedDir;
  vars["OUTPUT_NAMES"] = python_strings(write_expected(d, g, inputs));
  std::vector<std::string> bf16_inputs;
  for (int i = 0; i < g.num_inputs(); ++i)
    if (g.node(i).type.dtype == DType::bf16) bf16_inputs.push_back(g.node(i).name);
  vars["BF16_INPUTS"] = python_strings(bf16_inputs);
  d.write(r->script, render_template(r->script, vars), true);

  const std::string cause = culprit(bisection);
  CompilerReport report;
  report.title = fmt::format("{}: {} on {}{}", r->compiler, what_failed(spec.expected.kind), op_chain(g), cause.empty() ? "" : " (" + cause + ")");
  std::string search;
  if (bisection && bisection->contains("finding"))
    search = fmt::format(
        "Which optimiser: {} (`reprokit bisect` searched {}'s optimisation levels, then the optimisers it names as "
        "changing the graph, turning each off).",
        (*bisection)["finding"].get<std::string>(), r->compiler);
  else if (const Backend* backend = find_backend(spec.options.compile.backend); backend && backend->switches)
    search = fmt::format("Which optimiser: not searched; `reprokit bisect` on the bundle searches {}'s levels and optimisers.", r->compiler);
  else search = fmt::format("Which optimiser: {} exposes no optimisation switches reprokit can turn off one by one.", r->compiler);
  report.section = fmt::format(
      "## {}\n\n"
      "`python3 {}` reproduces it with {}'s own Python API and nothing of reprokit: it "
      "runs `repro.onnx` on `repro_inputs/`, prints each output against its float64 values (`{}/`, from reprokit's reference "
      "interpreter), prints `REPRODUCED` and exits 1 when the failure happens.\n\n"
      "- Compiler: {}, {}\n"
      "- {}\n",
      r->compiler, r->script, r->compiler, kExpectedDir, r->version, r->settings, search);
  return report;
}

std::optional<json> bisect_compiler_switches(const std::string& repro_path) {
  const ReproFile repro = load_repro_file(repro_path);
  const ReproSpec& spec = repro.spec;
  const Backend* backend = find_backend(spec.options.compile.backend);
  if (!backend || !backend->switches || !backend->switches->searched_in_reports || !spec.expected.failed()) return std::nullopt;
  BisectStep base;
  base.backend = spec.options.compile.backend;
  base.backend_options = spec.options.compile.backend_options;
  const double timeout = rerun_timeout(spec);
  const std::string exe = self_executable();
  int runs = 0;
  auto fails = [&](const BisectStep& step, const std::string& what) {
    const Failure got = run_bisect_try(exe, repro_path, step, timeout);
    const bool f = same_failure(spec.expected, got);
    fmt::print("  [{:>2}] {:<58} {}\n", ++runs, what,
               f              ? "FAILS"
               : got.failed() ? "passes (fails differently: " + std::string(got.kind_name()) + ")"
                              : "passes");
    if (!f && unjudged(spec.expected, got)) throw UnjudgedTry{what};
    return f;
  };
  return bisect_switches(*backend->switches, repro.graph, base, fails);
}

}  // namespace reprokit
