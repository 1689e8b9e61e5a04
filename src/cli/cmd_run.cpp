// `reprokit run MODEL.rk`: the whole stack on a model, under the harness (REPRO_* variables).
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>

#include "command.h"
#include "reprokit/aot/decompose.h"
#include "reprokit/codegen/backend.h"
#include "reprokit/codegen/compiled_graph.h"
#include "reprokit/harness/harness.h"
#include "reprokit/harness/repro_spec.h"
#include "reprokit/harness/stack.h"
#include "reprokit/harness/warm_runs.h"
#include "reprokit/support/errors.h"
#include "reprokit/support/escape_controls.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/onnx/onnx_import.h"
#include "reprokit/runtime/input_gen.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/support/files.h"

namespace reprokit::cli {

// Injections from the flags and from REPRO_INJECT / REPRO_INJECT_PASS. An injection the flags ask
// for on an op that the stack never compiles (not in the model, its decomposition or, training,
// its backward graph) would silently do nothing: say so instead. The environment's are ambient,
// as for a C++ program (capture_api.cpp): they plant a bug wherever the op is, and a graph
// without it runs clean (how `reprokit fuzz` runs a planted campaign).
static void add_injections(const Args& args, const Graph& g, bool train, CompileOptions& c) {
  for (auto& spec : args.get_all("--inject")) c.injections.push_back(parse_fault_injection(spec));
  for (auto& spec : args.get_all("--inject-pass")) c.pass_injections.push_back(parse_pass_injection(spec));
  const size_t from_flags = c.injections.size();
  add_injections_from_env(c);
  if (c.injections.empty()) return;
  const Graph decomposed = train ? build_training_graphs(g).joint.graph : decompose(g);
  for (size_t k = 0; k < c.injections.size(); ++k) {
    const FaultInjection& inj = c.injections[k];
    bool found = false;
    for (const Graph* h : {&g, &decomposed})
      for (auto& n : h->nodes) found |= n.op == inj.op;
    if (found) continue;
    const std::string why = fmt::format("graph {} has no node of op {}{}", g.name, op_name(inj.op),
                                        train ? " (nor has its decomposition or backward graph)" : " (nor has its decomposition)");
    if (k < from_flags) throw UserError(fmt::format("--inject {}: {}", inj.str(), why));
    fmt::print(stderr, "reprokit run: note: REPRO_INJECT {}: {}; it runs without it\n", inj.str(), why);
  }
}

static void print_summary(const std::string& name, const Tensor& t) {
  auto v = t.to_doubles();
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  size_t nan = 0;
  for (double x : v) {
    if (std::isnan(x)) {
      ++nan;
      continue;
    }
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    sum += x;
  }
  std::string shape;
  for (size_t i = 0; i < t.shape().size(); ++i) shape += (i ? ", " : "") + std::to_string(t.shape()[i]);
  fmt::print("%{}: {}[{}]", name, dtype_name(t.dtype()), shape);
  if (!v.empty()) fmt::print("  min={:.6g} max={:.6g} mean={:.6g}", lo, hi, v.size() > nan ? sum / static_cast<double>(v.size() - nan) : NAN);
  if (nan) fmt::print("  nan={}", nan);
  fmt::print("\n");
}

// The files of --save-outputs, in order: DIR/<output>.npy for each returned value (once), then with
// --train DIR/grad_<input>.npy for each input marked grad. An output named grad_x beside the
// gradient of %x would make two tensors one file: refused, as a file already in DIR is.
static std::vector<std::string> saved_files(const Graph& g, bool train, const std::string& dir) {
  std::vector<std::string> files;
  std::map<std::string, std::string> what;  // file -> what it holds, for the collision message
  for (int o : g.outputs)
    if (what.emplace(g.node(o).name + ".npy", "output %" + g.node(o).name).second) files.push_back(g.node(o).name + ".npy");
  for (int i = 0; train && i < g.num_inputs(); ++i) {
    if (!g.node(i).type.requires_grad) continue;
    std::string file = "grad_" + g.node(i).name + ".npy";
    if (auto [it, fresh] = what.emplace(file, "the gradient of input %" + g.node(i).name); !fresh)
      throw UsageError(fmt::format("--save-outputs: {} and {} would both be '{}/{}'; rename the output", it->second,
                                   "the gradient of input %" + g.node(i).name, dir, file));
    files.push_back(file);
  }
  return files;
}

// The --inputs files whose values became constants of the graph, for the note: their names are
// the model's input names, so escaped.
static std::string specialised_files(const GivenInputs& given) {
  std::vector<std::string> files;
  for (const std::string& f : given.specialised) files.push_back(escape_controls(f));
  return fmt::format("{}", fmt::join(files, ", "));
}

// --iters: the checked run above, then the compiled stack timed on the same inputs, as a user's
// program runs a model (one untimed warm-up; no process start, weight loading or compile inside).
constexpr int kMaxIters = 100000;

static void print_warm_times(const Graph& g, const std::vector<Tensor>& inputs, const StackOptions& opts, int iters) {
  WarmRunTimes t;
  try {
    t = time_warm_runs(g, inputs, opts, iters);
  } catch (const CompileFailure& e) {  // the checked run passed: a timed run that fails is flaky
    throw UserError(fmt::format("--iters: a timed run failed after the checked run passed ({}): {}", failure_kind_name(e.kind), e.what()));
  }
  fmt::print("time: median {:.4g} ms, min {:.4g} ms over {} warm run{} ({} backend{}; compile {:.0f} ms, not included)\n", t.median_ms(), t.min_ms(),
             iters, iters == 1 ? "" : "s", opts.compile.backend, opts.train ? ", forward and backward" : "", t.compile_ms);
}

// --profile: each kernel of the compiled stack timed over the --iters runs (the cpp backend's
// rk_graph_profile), the longest first, as a maintainer reads a profiler's table: where a model's
// time goes, kernel by kernel, with the nodes and ops each one computes.
constexpr size_t kProfileRows = 25;

static void print_kernel_profile(const Graph& g, const std::vector<Tensor>& inputs, const StackOptions& opts, int iters) {
  KernelTimes t;
  try {
    t = time_kernels(g, inputs, opts, iters);
  } catch (const CompileFailure& e) {
    throw UserError(fmt::format("--profile: a timed run failed after the checked run passed ({}): {}", failure_kind_name(e.kind), e.what()));
  }
  if (t.labels.empty()) throw UserError("--profile: the compiled library has no kernel timer");
  std::vector<std::pair<double, size_t>> rows;  // median ms, kernel
  double in_kernels = 0;
  for (size_t k = 0; k < t.labels.size(); ++k) {
    rows.push_back({median_of(t.ms[k]), k});
    in_kernels += rows.back().first;
  }
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  fmt::print("profile: {} kernels, each the median of {} run{}: {:.4g} ms in kernels (runs timed with the profiler: median {:.4g} ms)\n",
             t.labels.size(), iters, iters == 1 ? "" : "s", in_kernels, median_of(t.run_ms));
  fmt::print("  {:>6}  {:>10}  kernel  [ops]\n", "share", "median us");
  const auto share = [&](double ms) { return in_kernels > 0 ? 100.0 * ms / in_kernels : 0.0; };
  double rest = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i >= kProfileRows) {
      rest += rows[i].first;
      continue;
    }
    const std::string& label = t.labels[rows[i].second];
    fmt::print("  {:>5.1f}%  {:>10.1f}  {}\n", share(rows[i].first), 1e3 * rows[i].first,
               escape_controls(label.empty() ? "(a kernel without nodes)" : label));
  }
  if (rows.size() > kProfileRows) fmt::print("  {:>5.1f}%  {:>10.1f}  the {} other kernels\n", share(rest), 1e3 * rest, rows.size() - kProfileRows);
}

static int run_model(const std::vector<std::string>& argv) {
  Args args(argv,
            {"--backend", "--seed", "--inputs", "--save-outputs", "--inject", "--inject-pass", "--graph", "--shape", "--samples", "--backend-option",
             "--iters"},
            {"--train", "--no-passes", "--verbose", "--profile"});
  if (args.positional().size() != 1) throw UsageError("expected exactly one MODEL.rk");
  std::map<std::string, Tensor> known;  // an ONNX model's initializers: default input values
  GivenInputs given;                    // --inputs files may be named after the ONNX inputs, and may decide shapes
  given.dir = args.get_or("--inputs", "");
  const std::string& inputs_dir = given.dir;
  Module m = load_model(args.positional()[0], parse_shape_specs(args.get_all("--shape")), &known, given);
  const Graph& g = args.get("--graph") ? m.get(*args.get("--graph")) : m.entry();
  StackOptions opts;
  opts.compile.backend = args.get_or("--backend", "cpp");
  opts.compile.run_passes = !args.has("--no-passes");
  opts.compile.verbose = args.has("--verbose");
  opts.train = args.has("--train");
  for (auto& spec : args.get_all("--backend-option")) opts.compile.backend_options.insert(parse_backend_option(spec));
  add_injections(args, g, args.has("--train"), opts.compile);
  if (!find_backend(opts.compile.backend)) throw UsageError("--backend must be " + backend_choices() + "; got '" + opts.compile.backend + "'");
  long seed = args.get_int("--seed", 0);
  HarnessConfig cfg = HarnessConfig::from_env();
  if (args.get("--samples")) {
    long n = args.get_int("--samples", 1);
    if (n < 1 || n > kMaxSamples)
      throw UsageError(fmt::format("option --samples expects a number of input samples in [1, {}], got {}", kMaxSamples, n));
    if (!cfg.enabled()) throw UsageError("option --samples needs the harness: set REPRO_AFTER (dynamo or aot)");
    cfg.samples = static_cast<int>(n);
  }
  const int iters = static_cast<int>(args.get_int("--iters", 0));
  if (args.get("--iters") && (iters < 1 || iters > kMaxIters))
    throw UsageError(fmt::format("option --iters expects a number of timed runs in [1, {}], got {}", kMaxIters, args.get_int("--iters", 0)));
  if (args.has("--profile") && iters < 1) throw UsageError("option --profile times the --iters runs: give --iters N");
  if (args.has("--profile") && !find_backend(opts.compile.backend)->times_kernels)
    throw UsageError(fmt::format("option --profile: the {} backend does not time its kernels (the cpp backend does)", opts.compile.backend));
  std::optional<Dir> save_dir;  // checked before the run, so a refusal costs no run and writes nothing
  std::vector<std::string> save_files;
  if (auto dir = args.get("--save-outputs")) {
    save_files = saved_files(g, opts.train, *dir);
    save_dir.emplace(Dir::create(*dir));
    refuse_existing(*save_dir, save_files, "reprokit run --save-outputs");
  }
  // Values given (an ONNX model's weights, then --inputs files), random for the rest.
  InputOrigins origins;
  std::vector<Tensor> inputs = assemble_inputs(g, known, static_cast<uint64_t>(seed), given, &origins);
  if (!inputs_dir.empty()) {  // say which values are the user's: an answer about random ones must not pass for theirs
    // The files' names come from the model's input names: InputOrigins holds them escaped.
    fmt::print(stderr, "reprokit run: --inputs {}: {} input{} from files ({}){}{}\n", escape_controls(inputs_dir), origins.from_files.size(),
               origins.from_files.size() == 1 ? "" : "s", fmt::join(origins.from_files, ", "),
               given.specialised.empty() ? std::string() : fmt::format("; specialised into the graph (shapes, axes): {}", specialised_files(given)),
               origins.random.empty() ? std::string() : fmt::format("; random (seed {}): {}", seed, fmt::join(origins.random, ", ")));
    if (!origins.unused.empty()) fmt::print(stderr, "reprokit run: note: --inputs {}: {}\n", escape_controls(inputs_dir), origins.unused);
  }
  StackResult r;
  try {
    r = run_stack(g, inputs, opts, cfg, static_cast<uint64_t>(seed));
  } catch (const StackFailure& e) {
    fmt::print(stderr, "reprokit run: FAILED: {}: {}\n", e.failure.kind_name(), escape_controls_keep_newlines(e.failure.message));
    return 1;
  }
  for (size_t k = 0; k < r.outputs.size(); ++k) print_summary(g.node(g.outputs[k]).name, r.outputs[k]);
  std::vector<std::string> grad_names;  // inputs marked grad, in input order
  for (int i = 0; i < g.num_inputs(); ++i)
    if (g.node(i).type.requires_grad) grad_names.push_back(g.node(i).name);
  for (size_t k = 0; k < r.grads.size() && k < grad_names.size(); ++k) print_summary("grad_" + grad_names[k], r.grads[k]);
  // The timed runs take an ONNX model's initializers as constants, as ONNX Runtime does: the same
  // tensors every run, so what is derived from them (a GEMM's packed weights) is derived once.
  StackOptions timed = opts;
  for (int i = 0; i < g.num_inputs() && !opts.train; ++i)
    if (known.count(g.node(i).name)) timed.compile.frozen_inputs.insert(g.node(i).name);
  if (iters > 0) print_warm_times(g, inputs, timed, iters);
  if (args.has("--profile")) print_kernel_profile(g, inputs, timed, iters);
  if (save_dir) {
    std::map<std::string, const Tensor*> holds;  // file -> its tensor
    for (size_t k = 0; k < r.outputs.size(); ++k) holds.emplace(g.node(g.outputs[k]).name + ".npy", &r.outputs[k]);
    for (size_t k = 0; k < r.grads.size() && k < grad_names.size(); ++k) holds.emplace("grad_" + grad_names[k] + ".npy", &r.grads[k]);
    for (const auto& file : save_files)
      if (auto it = holds.find(file); it != holds.end()) write_new_file(*save_dir, file, encode_npy(*it->second), "reprokit run --save-outputs");
  }
  return 0;
}

// The --backend lines of the help, one per row of the backend table.
static std::string backend_help() {
  std::string s = "  --backend B         the compiler to run (default cpp; docs/ADDING_A_BACKEND.md):\n";
  for (const Backend& b : backend_table()) s += fmt::format("                        {:<12} {}\n", b.name, b.summary);
  return s;
}

static CommandRegistration reg(
    {"run",
     "reprokit run MODEL.rk|MODEL.onnx [--backend B] [--train] [--seed S] [--inputs DIR] [--save-outputs DIR] [--inject OP:KIND] [--inject-pass "
     "PASS:N] [--graph NAME] [--shape NAME:[d0,...]] [--samples N] [--backend-option KEY=VALUE] [--iters N [--profile]]",
     "run a model through the compile stack, under the harness (REPRO_* variables)",
     backend_help() + "  --backend-option K=V  an option of a compiler that is not reprokit's, saved in bundles (inductor: a\n"
                      "                      torch._inductor.config option, e.g. cpp.simdlen=8; onnxruntime: graph_optimization_level,\n"
                      "                      disabled_optimizers=A,B); repeatable\n"
                      "  --seed S            seed of the random inputs (default 0)\n"
                      "  --inputs DIR        load DIR/<input name>.npy (random for any missing; an ONNX model's weights by default);\n"
                      "                      an ONNX input's file is named after its ONNX name, else after reprokit's name for it\n"
                      "  --save-outputs DIR  write DIR/<returned value name>.npy (and DIR/grad_<input name>.npy with --train);\n"
                      "                      a file already there, or an output named like a gradient's file, is refused (exit 2)\n"
                      "  --inject OP:KIND    make the codegen misbehave on every node of OP (also REPRO_INJECT); inductor: relu only,\n"
                      "                      with Inductor's own testing fault (compile_error, runtime_error, accuracy)\n"
                      "                      KIND: compile_error runtime_error accuracy accuracy=REL accuracy_one=K crash hang flaky\n"
                      "  --inject-pass P:N   make the Nth rewrite of pass P wrong (also REPRO_INJECT_PASS)\n"
                      "  --graph NAME        run graph NAME of a multi-graph file\n"
                      "  --shape NAME:[d,..] (.onnx models) the shape of an input with dynamic dimensions; repeatable\n"
                      "  --samples N         (under the harness) also check each stage on N - 1 input samples drawn like its inputs\n"
                      "                      (weights marked grad kept); the bundle records which samples fail\n"
                      "  --iters N           then time N warm runs of the compiled stack on the same inputs and print the median\n"
                      "                      (after one untimed run; the compile is timed apart, mostly a cache hit after the checked\n"
                      "                      run); an ONNX model's initializers are constants of these runs, as ONNX Runtime takes\n"
                      "                      them: what the backend derives from them (packed GEMM weights) is kept from run to run\n"
                      "  --profile           (with --iters) then time each kernel over N more runs and print the 25 longest, with the\n"
                      "                      nodes and ops each computes (cpp backend)\n"
                      "  --no-passes         compile without optimisation passes\n"
                      "  --verbose           log each compiler pass\n"
                      "  --train             also run the backward pass on the sum of the outputs (gradients of inputs marked grad)\n"
                      "environment: REPRO_AFTER (dynamo|aot) REPRO_LEVEL (1-4) REPRO_DIR REPRO_MINIFY REPRO_TOLERANCE REPRO_TIMEOUT\n"
                      "             REPRO_INJECT REPRO_INJECT_PASS (ambient: a graph without the op runs clean) REPRO_MEMORY_BUDGET (MB)\n"
                      "             cpp backend: REPRO_CACHE_DIR REPRO_CACHE_MAX REPRO_KERNELS_LIBRARY (off, or the kernels library's directory)",
     run_model});

}  // namespace reprokit::cli
