// The accuracy rules side by side on the same compiled results: this project's `auto` rule (noise
// floor), its fixed rule (REPRO_TOLERANCE=1e-3, the default before `auto`), and PyTorch's minifier
// rule (torch._dynamo.utils.same with a float64 reference and tol=1e-3, reimplemented from its
// documented behaviour: allclose(atol=rtol=tol), else RMSE against float64 at most
// multiplier * eager's RMSE + tol/10, multiplier 3 for tensors under 1,000 elements or f16/bf16,
// else 2).
//
// Noise-only cases are compiled by the cpp backend with no bug: any failure is a false alarm.
// Bug cases plant a graded fault (--inject OP:accuracy=REL, OP:accuracy_one=K): a pass is a miss
// (cases where the fault changed no element are reported and not counted). With --models DIR (the
// real-models directory the test suite exports, build/real-models), resnet18 and mobilenet_v2
// --train through cpp are judged against the joint forward+backward graph.
//
// Usage: bench_accuracy_rule [--models DIR] [--seeds N]
#include "bench_options.h"
#include <fmt/core.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>

#include "reprokit/codegen/compile_options.h"
#include "reprokit/codegen/compiler.h"
#include "reprokit/harness/accuracy.h"
#include "reprokit/harness/stack.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/onnx/onnx_import.h"
#include "reprokit/process/subprocess.h"
#include "reprokit/runtime/input_gen.h"
#include "reprokit/runtime/interpreter.h"
#include "reprokit/runtime/npy.h"

namespace fs = std::filesystem;
using namespace reprokit;

namespace {

// PyTorch's same() for one floating output (ref = eager, res = compiled, fp64 = reference).
bool torch_same(const Tensor& res, const Tensor& ref, const Tensor& fp64, double tol = 1e-3) {
  auto c = res.to_doubles(), e = ref.to_doubles(), r = fp64.to_doubles();
  bool close = true;
  for (size_t i = 0; i < c.size() && close; ++i)
    if (!(std::fabs(c[i] - e[i]) <= tol + tol * std::fabs(e[i])) && !(std::isnan(c[i]) && std::isnan(e[i]))) close = false;
  if (close) return true;
  double multiplier = c.size() < 1000 || res.dtype() == DType::f16 || res.dtype() == DType::bf16 ? 3.0 : 2.0;
  return deviation(c, r).rms <= multiplier * deviation(e, r).rms + tol / 10;
}

struct Verdicts {
  bool auto_rule = false, fixed_rule = false, torch_rule = false;  // true: passes
  double auto_seconds = 0;
  std::string auto_why;  // the auto rule's message when it fails
};

Verdicts judge(const Graph& g, const std::vector<Tensor>& in, const std::vector<Tensor>& compiled) {
  Verdicts v;
  auto t0 = std::chrono::steady_clock::now();
  Failure f = check_accuracy(g, in, compiled, std::nullopt);
  v.auto_rule = !f.failed();
  v.auto_why = f.message;
  v.auto_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  v.fixed_rule = !check_accuracy(g, in, compiled, 1e-3).failed();
  auto eager = interpret(g, in);
  InterpretOptions f64;
  f64.cast_to_f64 = true;
  auto ref = interpret(g, in, f64);
  v.torch_rule = true;
  for (size_t k = 0; k < compiled.size(); ++k)
    if (is_floating(compiled[k].dtype())) v.torch_rule = v.torch_rule && torch_same(compiled[k], eager[k], ref[k]);
  return v;
}

std::vector<Tensor> compile_and_run(const Graph& g, const std::vector<Tensor>& in, const std::string& inject = "") {
  CompileOptions o;
  o.backend = "cpp";
  if (!inject.empty()) o.injections = {parse_fault_injection(inject)};
  return compile_graph(g, o)->run(in);
}

Tensor map_values(const Tensor& t, const std::function<double(double, size_t)>& f) {
  auto v = t.to_doubles();
  for (size_t i = 0; i < v.size(); ++i) v[i] = f(v[i], i);
  return Tensor::from_doubles(t.dtype(), t.shape(), v);
}

struct Totals {
  int cases = 0, auto_wrong = 0, fixed_wrong = 0, torch_wrong = 0;
};

const char* word(bool passes) { return passes ? "pass" : "FAIL"; }

void row(const std::string& name, const Verdicts& v, bool bug, Totals& t, const std::string& note = "") {
  ++t.cases;
  t.auto_wrong += v.auto_rule == bug;
  t.fixed_wrong += v.fixed_rule == bug;
  t.torch_wrong += v.torch_rule == bug;
  fmt::print("| {:<44} | {:<4} | {:<5} | {:<5} | {:<5} | {:>6.2f} | {}\n", name, bug ? "bug" : "noise", word(v.auto_rule), word(v.fixed_rule),
             word(v.torch_rule), v.auto_seconds, note);
}

struct NoiseCase {
  std::string name;
  std::string text;
  std::function<std::vector<Tensor>(const Graph&, uint64_t)> inputs;  // empty: generate_inputs
};

std::vector<NoiseCase> noise_cases() {
  auto gen = [](const Graph& g, uint64_t seed) { return generate_inputs(g, seed); };
  // Training-mode BatchNorm statistics over a batch of n: (x - mean) * rsqrt(var + eps).
  auto batch_norm = [](int n) {
    return fmt::format(
        "graph bn{0}(%x: f32[{0}, 64]) {{\n  %m = mean(%x, dims=[0], keepdim=true)\n  %v = var(%x, dims=[0], correction=0, keepdim=true)\n"
        "  %d = sub(%x, %m)\n  %e = add(%v, 1e-5)\n  %r = rsqrt(%e)\n  %y = mul(%d, %r)\n  return (%y)\n}}\n",
        n);
  };
  std::string mlp = "graph tanh_mlp(%x: f32[16, 64]";
  for (int l = 0; l < 20; ++l) mlp += fmt::format(", %w{}: f32[64, 64]", l);
  mlp += ") {\n  %h0 = tanh(%x)\n";
  for (int l = 0; l < 20; ++l) mlp += fmt::format("  %z{0} = matmul(%h{0}, %w{0})\n  %h{1} = tanh(%z{0})\n", l, l + 1);
  mlp += "  return (%h20)\n}\n";
  return {
      {"batch_norm training, batch 1", batch_norm(1), gen},
      {"batch_norm training, batch 2", batch_norm(2), gen},
      {"batch_norm training, batch 4", batch_norm(4), gen},
      {"sum of 100000 terms that cancel", "graph cancel(%x: f32[100000]) {\n  %y = sum(%x, dims=[0])\n  return (%y)\n}\n",
       [](const Graph& g, uint64_t seed) {
         auto in = generate_inputs(g, seed);
         in[0] = map_values(in[0], [](double v, size_t i) { return (i % 2 ? -1000.0 : 1000.0) + v; });
         return in;
       }},
      {"softmax of logits x100", "graph logits(%x: f32[8, 512]) {\n  %s = mul(%x, 100.0)\n  %y = softmax(%s, dim=1)\n  return (%y)\n}\n", gen},
      {"layer_norm of near-constant rows", "graph flat(%x: f32[32, 256]) {\n  %y = layer_norm(%x, normalized_shape=[256])\n  return (%y)\n}\n",
       [](const Graph& g, uint64_t seed) {
         auto in = generate_inputs(g, seed);
         in[0] = map_values(in[0], [](double v, size_t) { return 1000.0 + 1e-3 * v; });
         return in;
       }},
      {"20-layer tanh MLP", mlp,
       [](const Graph& g, uint64_t seed) {
         auto in = generate_inputs(g, seed);
         for (size_t k = 1; k < in.size(); ++k) in[k] = map_values(in[k], [](double v, size_t) { return v * 0.25; });  // ~ 2/sqrt(64)
         return in;
       }},
  };
}

struct BugGraph {
  std::string op, text;
};

std::vector<BugGraph> bug_graphs() {
  return {
      {"exp", "graph e(%x: f32[256, 512]) {\n  %y = exp(%x)\n  return (%y)\n}\n"},
      {"matmul", "graph m(%a: f32[256, 256], %b: f32[256, 512]) {\n  %y = matmul(%a, %b)\n  return (%y)\n}\n"},
      {"softmax", "graph s(%x: f32[256, 512]) {\n  %y = softmax(%x, dim=1)\n  return (%y)\n}\n"},
  };
}

// A real model trained through cpp (`reprokit run --train`), judged on the joint graph.
void real_model(const fs::path& dir, const std::string& name, Totals& t) {
  fs::path work = fs::temp_directory_path() / fmt::format("bench_accuracy_{}_{}", name, ::getpid());
  fs::remove_all(work);
  fs::create_directories(work);
  ProcessSpec s;
  s.argv = {REPROKIT_EXE,
            "run",
            (dir / name / "model.onnx").string(),
            "--train",
            "--backend",
            "cpp",
            "--inputs",
            (dir / name).string(),
            "--save-outputs",
            (work / "c").string()};
  s.timeout_s = 900;
  ProcessResult r = run_process(s);
  if (r.exit_code != 0) {
    fmt::print("| {:<44} | cpp run failed: {}\n", name + " --train", r.err.substr(0, 200));
    return;
  }
  ImportedModel m = import_onnx((dir / name / "model.onnx").string());
  TrainingGraphs tg = build_training_graphs(m.graph);
  const Graph& joint = tg.joint.graph;
  std::vector<Tensor> in, compiled;
  for (int i = 0; i < m.graph.num_inputs(); ++i) {
    auto v = m.values.find(m.graph.node(i).name);
    in.push_back(v != m.values.end() ? v->second : read_npy((dir / name / "input.npy").string()));
  }
  for (int k = 0; k < tg.joint.num_forward_outputs; ++k)
    compiled.push_back(read_npy((work / "c" / (joint.node(joint.outputs[static_cast<size_t>(k)]).name + ".npy")).string()));
  for (auto& one : ones_like_outputs(compiled, compiled.size())) in.push_back(one);
  for (int gi : tg.joint.grad_inputs) compiled.push_back(read_npy((work / "c" / ("grad_" + m.graph.node(gi).name + ".npy")).string()));
  Verdicts v = judge(joint, in, compiled);
  row(name + " --train (cpp vs float64)", v, false, t, v.auto_rule ? "" : v.auto_why.substr(0, 400));
  fs::remove_all(work);
}

}  // namespace

int main(int argc, char** argv) {
  const bench::BenchOptions options(
      argc, argv, "bench_accuracy_rule",
      {{"--models", "DIR", "the exported real models (tests/models/export_models.py)"}, {"--seeds", "N", "input seeds a case; default 3"}});
  const std::string models = options.text("--models", "");
  const int seeds = options.number("--seeds", 3, 1);
  Totals noise, bugs;
  fmt::print("| {:<44} | {:<4} | {:<5} | {:<5} | {:<5} | {:>6} |\n", "case", "kind", "auto", "fixed", "torch", "auto s");
  fmt::print("|{:-<46}|{:-<6}|{:-<7}|{:-<7}|{:-<7}|{:-<8}|\n", "", "", "", "", "", "");
  for (auto& c : noise_cases()) {
    Graph g = parse_graph(c.text, c.name);
    for (int seed = 1; seed <= seeds; ++seed) {
      auto in = c.inputs(g, static_cast<uint64_t>(seed));
      Verdicts v = judge(g, in, compile_and_run(g, in));
      row(fmt::format("{} (seed {})", c.name, seed), v, false, noise, v.auto_rule ? "" : v.auto_why.substr(0, 400));
    }
  }
  if (!models.empty())
    for (const char* name : {"resnet18", "mobilenet_v2"}) real_model(models, name, noise);
  int not_planted = 0;
  for (auto& b : bug_graphs()) {
    Graph g = parse_graph(b.text, b.op);
    auto in = generate_inputs(g, 11);
    auto clean = compile_and_run(g, in);
    std::vector<std::string> faults;
    for (const char* rel : {"1e-2", "1e-3", "1e-4", "1e-5"}) faults.push_back(b.op + ":accuracy=" + rel);
    for (const char* k : {"10", "1000", "100000"}) faults.push_back(b.op + ":accuracy_one=" + k);
    for (auto& f : faults) {
      auto bad = compile_and_run(g, in, f);
      auto c = clean[0].to_doubles(), w = bad[0].to_doubles();
      int64_t changed = 0;
      for (size_t i = 0; i < c.size(); ++i) changed += c[i] != w[i];
      if (changed == 0) {
        ++not_planted;
        fmt::print("| {:<44} | bug  | (the fault changed no element: not counted)\n", f);
        continue;
      }
      row(f, judge(g, in, bad), true, bugs, fmt::format("{} of {} elements changed", changed, c.size()));
    }
  }
  fmt::print("\nnoise-only cases: {}; false alarms: auto {}, fixed {}, torch {}\n", noise.cases, noise.auto_wrong, noise.fixed_wrong,
             noise.torch_wrong);
  fmt::print("bug cases: {} ({} more planted nothing); misses: auto {}, fixed {}, torch {}\n", bugs.cases, not_planted, bugs.auto_wrong,
             bugs.fixed_wrong, bugs.torch_wrong);
  return 0;
}
