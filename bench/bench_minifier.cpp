// Minifier benchmark: reprokit's query counts on the chain benchmarks next to PyTorch's
// fx_minifier (bench/fx_minifier_bench.py, run in the same invocation when python3-torch is
// installed), and an end-to-end 10,000-node graph minified with the real cpp backend in
// subprocesses; and the chains again through `reprokit reduce` with a shell check (queries and
// reprokit's own time per query); with --real-models DIR (the models tests/models/export_models.py
// writes; the test build keeps them in build/real-models), the time from a planted bug in a real
// model to its one-op repro. Usage: bench_minifier [--skip-e2e] [--e2e-nodes N] [--real-models DIR]
#include "bench_options.h"
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "reprokit/harness/repro_file.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/minifier/compiler_decisions.h"
#include "reprokit/minifier/reducer.h"
#include "reprokit/process/subprocess.h"
#include "reprokit/support/files.h"

using namespace reprokit;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

class PredicateOracle : public Oracle {
 public:
  explicit PredicateOracle(std::function<bool(const Graph&)> p) : p_(std::move(p)) {}
  std::vector<Verdict> judge(const std::vector<Candidate>& cs) override {
    std::vector<Verdict> v;
    for (auto& c : cs) v.push_back({p_(c.graph), {}});
    return v;
  }

 private:
  std::function<bool(const Graph&)> p_;
};

std::string chain_text(int n, int culprit, const char* culprit_op) {
  static const char* ops[] = {"neg", "relu", "abs", "sin", "cos", "tanh"};
  std::string s = "graph chain(%x: f32[16]) {\n";
  for (int i = 0; i < n; ++i)
    s += fmt::format("  %n{} = {}(%{})\n", i, i == culprit && culprit_op ? culprit_op : ops[i % 6], i ? fmt::format("n{}", i - 1) : "x");
  return s + fmt::format("  return (%n{})\n}}\n", n - 1);
}

// The chain with its culprits as erf nodes; a candidate is interesting while every culprit is in
// it. The oracle looks at ops only, never at names, as a compiler does (the engine's memo knows
// candidates by structure).
void in_process(const char* label, int n, std::vector<int> culprits) {
  static const char* ops[] = {"neg", "relu", "abs", "sin", "cos", "tanh"};
  std::string text = "graph chain(%x: f32[16]) {\n";
  for (int i = 0; i < n; ++i) {
    const bool culprit = std::find(culprits.begin(), culprits.end(), i) != culprits.end();
    text += fmt::format("  %n{} = {}(%{})\n", i, culprit ? "erf" : ops[i % 6], i ? fmt::format("n{}", i - 1) : "x");
  }
  text += fmt::format("  return (%n{})\n}}\n", n - 1);
  Candidate c;
  c.graph = parse_graph(text);
  PredicateOracle o([&](const Graph& g) {
    size_t erfs = 0;
    for (const Node& node : g.nodes) erfs += node.op == Op::erf;
    return erfs == culprits.size();
  });
  auto t0 = Clock::now();
  std::vector<Strategy> strategies;  // those `reprokit reduce` runs (no compiler passes here)
  for (auto& st : strategy_table())
    if (!st.compiler_only) strategies.push_back(st);
  auto r = reduce(c, strategies, o, {});
  // The information bound: log2 of the number of ways to choose the culprits among N nodes.
  double bound = 0;
  for (size_t k = 0; k < culprits.size(); ++k) bound += std::log2(static_cast<double>(n - static_cast<int>(k)) / static_cast<double>(k + 1));
  fmt::print("reprokit   {:<22} queries={:<5} ops_left={:<4} seconds={:.2f}   (log2 of the candidate space {:.1f})\n", label, r.queries,
             r.best.graph.num_ops(), std::chrono::duration<double>(Clock::now() - t0).count(), bound);
  std::string spent;
  for (auto& [name, st] : r.per_strategy)
    if (st.queries) spent += fmt::format(" {}={}", name, st.queries);
  fmt::print("           queries by strategy:{}\n", spent);
}

// The same chain reduced by `reprokit reduce` with a shell check (interesting while every culprit
// is still an op), and the check alone timed on the original, to give reprokit's own cost per query.
void with_shell_check(const fs::path& tmp, const char* label, int n, const std::vector<std::string>& culprits) {
  fs::path dir = tmp / fmt::format("reduce_{}_{}", n, culprits.size());
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "chain.rk") << chain_text(n, -1, nullptr);
  std::string script;
  for (auto& c : culprits) script += fmt::format("grep -q '%{} = ' \"$1\" && ", c);
  script += "exit 1\nexit 0\n";
  std::ofstream(dir / "check.sh") << script;
  const std::string check_sh = (dir / "check.sh").string();
  ProcessSpec check;
  check.argv = {"sh", check_sh, (dir / "chain.rk").string()};
  const int reps = 50;
  auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i) run_process(check);
  double check_s = std::chrono::duration<double>(Clock::now() - t0).count() / reps;
  ProcessSpec red;
  red.argv = {REPROKIT_EXE, "reduce", (dir / "chain.rk").string(), "--check", "sh " + check_sh + " {}", "-o", (dir / "out").string()};
  red.timeout_s = 600;
  ProcessResult pr = run_process(red);
  if (pr.exit_code != 0) {
    fmt::print("reduce     {:<22} FAILED: {}{}\n", label, pr.out, pr.err);
    return;
  }
  std::ifstream in(dir / "out" / "report.json");
  auto report = nlohmann::json::parse(in);
  int q = report["queries"];
  double reduce_s = report["reduce_seconds"];
  fmt::print(
      "reduce     {:<22} queries={:<5} ops_left={:<4} seconds={:.2f}   check alone {:.2f} ms; reprokit's own time per query {:.2f} ms (goal < 5)\n",
      label, q, report["final_ops"].get<int>(), reduce_s, check_s * 1e3, (reduce_s / q - check_s) * 1e3);
}

// A bug planted in one op of an exported model: `reprokit run` leaves a bundle, `reprokit minify`
// brings it to a repro. One row: ops before and after, queries, the reduction's time and the
// whole minify's (probing the original, reducing, writing and verifying the repro).
struct RealCase {
  const char* model;
  const char* inject;  // OP:KIND
  const char* after;   // REPRO_AFTER
};

void real_model(const fs::path& tmp, const fs::path& models, const RealCase& c) {
  const std::string label = fmt::format("{} {} REPRO_AFTER={}", c.model, c.inject, c.after);
  fs::path dir = tmp / fmt::format("real_{}_{}", c.model, c.after);
  fs::create_directories(dir);
  const std::string cache = (tmp / "cache").string();
  ProcessSpec run;
  run.argv = {REPROKIT_EXE, "run",   (models / c.model / "model.onnx").string(), "--backend", "cpp", "--inputs", (models / c.model).string(),
              "--inject",   c.inject};
  run.cwd = dir.string();
  run.env_set = {{"REPRO_AFTER", c.after}, {"REPRO_LEVEL", "4"}, {"REPRO_DIR", "out"}, {"REPRO_CACHE_DIR", cache}};
  run.timeout_s = 600;
  ProcessResult rr = run_process(run);
  fs::path bundle;
  if (fs::is_directory(dir / "out"))
    for (auto& e : fs::directory_iterator(dir / "out")) bundle = e.path();
  if (rr.exit_code == 0 || bundle.empty()) {
    fmt::print("{:<52} not run: the planted bug left no bundle (exit {}): {}\n", label, rr.exit_code, rr.err.substr(0, rr.err.find('\n')));
    return;
  }
  ProcessSpec min;
  min.argv = {REPROKIT_EXE, "minify", bundle.string()};
  min.env_set = {{"REPRO_CACHE_DIR", cache}};
  min.timeout_s = 900;
  auto t0 = Clock::now();
  ProcessResult mr = run_process(min);
  const double min_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::ifstream rep(bundle / "report.json");
  auto report = nlohmann::json::parse(rep, nullptr, false);
  if (report.is_discarded()) {
    fmt::print("{:<52} minify wrote no report (exit {})\n", label, mr.exit_code);
    return;
  }
  fmt::print("{:<52} {:>4} -> {:<3} ops  queries={:<4} reduce {:6.1f}s  minify {:6.1f}s (goal <= 10)  {}\n", label, report.value("original_ops", -1),
             report.value("final_ops", -1), report.value("queries", -1), report.value("reduce_seconds", 0.0), min_s,
             report.value("verified", false) ? "verified in a fresh process" : "NOT verified");
}

}  // namespace

int main(int argc, char** argv) {
  const bench::BenchOptions options(argc, argv, "bench_minifier",
                                    {{"--skip-e2e", nullptr, "leave out the end-to-end runs of reprokit and PyTorch's minifier"},
                                     {"--e2e-nodes", "N", "nodes of the end-to-end chain; default 10000"},
                                     {"--real-models", "DIR", "time-to-repro on the exported real models in DIR"}});
  const bool e2e = !options.flag("--skip-e2e");
  const int e2e_nodes = options.number("--e2e-nodes", 10000, 2);
  const std::string real_models = options.text("--real-models", "");
  fmt::print("== chain benchmarks, in-process oracle (same cases for both tools)\n");
  in_process("one culprit, N=1000", 1000, {333});
  in_process("one culprit, N=5000", 5000, {1666});
  in_process("pair, N=1000", 1000, {300, 550});
  in_process("three, N=1000", 1000, {200, 500, 800});
  const ScratchDir scratch("rk_bench_min_");  // removed with everything the cases wrote in it
  const fs::path tmp = scratch.path();
  ProcessSpec py;
  py.argv = {"/usr/bin/python3", std::string(REPROKIT_SOURCE_DIR) + "/bench/fx_minifier_bench.py"};
  py.cwd = tmp.string();  // fx_minifier writes repro.py into its working directory
  py.timeout_s = 600;
  ProcessResult pr;
  try {
    pr = run_process(py);
  } catch (const std::exception& e) { pr.exit_code = 127; }
  if (pr.exit_code == 0) {
    std::string line;
    std::istringstream in(pr.out);
    while (std::getline(in, line))
      if (line.find("queries=") != std::string::npos) fmt::print("fx_minifier {}\n", line);
  } else {
    fmt::print("fx_minifier: not run (python3-torch is not installed)\n");
  }
  fmt::print("(fx_minifier is quoted at 93 / 116 queries for one culprit, and 1,442 queries leaving 251 ops for its pair case)\n");

  fmt::print("\n== the same chains through `reprokit reduce` with a shell check (a process per query)\n");
  with_shell_check(tmp, "one culprit, N=1000", 1000, {"n333"});
  with_shell_check(tmp, "one culprit, N=5000", 5000, {"n1666"});
  with_shell_check(tmp, "pair, N=1000", 1000, {"n300", "n550"});

  fmt::print("\n== real models: a bug planted in one op, from the bundle to a one-op repro (cpp backend, 1 worker)\n");
  if (real_models.empty() || !fs::is_directory(real_models)) {
    fmt::print("not run: pass --real-models DIR, the models tests/models/export_models.py writes (the test build's: build/real-models)\n");
  } else {
    for (const RealCase& c : {RealCase{"resnet18", "conv2d:accuracy", "dynamo"}, RealCase{"resnet18", "conv2d:accuracy", "aot"},
                              RealCase{"mobilenet_v2", "clamp:runtime_error", "dynamo"}, RealCase{"mobilenet_v2", "clamp:runtime_error", "aot"}})
      real_model(tmp, fs::absolute(real_models), c);
  }

  if (!e2e) return 0;
  fmt::print("\n== end to end: {}-node chain, one planted culprit (erf: runtime_error), cpp backend, subprocess workers\n", e2e_nodes);
  fs::path dir = tmp / "e2e";
  fs::create_directories(dir);
  std::ofstream(dir / "big.rk") << chain_text(e2e_nodes, e2e_nodes * 2 / 3, "erf");
  ProcessSpec run;
  run.argv = {REPROKIT_EXE, "run", "big.rk", "--inject", "erf:runtime_error"};
  run.cwd = dir.string();
  run.env_set = {{"REPRO_AFTER", "dynamo"}, {"REPRO_DIR", "out"}, {"REPRO_CACHE_DIR", (tmp / "cache").string()}};
  auto t0 = Clock::now();
  ProcessResult rr = run_process(run);
  double run_s = std::chrono::duration<double>(Clock::now() - t0).count();
  fs::path bundle;
  for (auto& e : fs::directory_iterator(dir / "out")) bundle = e.path();
  fmt::print("reprokit run (compile + fail + bundle): {:.1f}s, exit {}\n", run_s, rr.exit_code);
  ProcessSpec min;
  min.argv = {REPROKIT_EXE, "minify", bundle.string(), "--jobs", "2"};
  min.env_set = {{"REPRO_CACHE_DIR", (tmp / "cache").string()}};
  t0 = Clock::now();
  ProcessResult mr = run_process(min);
  double min_s = std::chrono::duration<double>(Clock::now() - t0).count();
  ReproFile repro = load_repro_file((bundle / "repro.rk").string());
  fmt::print("reprokit minify --jobs 2: {:.1f}s (goal < 30s on a quiet machine), {} -> {} ops, exit {}, {}\n", min_s, e2e_nodes,
             repro.graph.num_ops(), mr.exit_code,
             mr.out.find("verified: REPRODUCED") != std::string::npos ? "verified in a fresh process" : "NOT verified");
  std::ifstream rep(bundle / "report.json");
  auto report = nlohmann::json::parse(rep, nullptr, false);
  if (!report.is_discarded())
    fmt::print("report.json: queries {}, timeouts {}, unknown {}\n", report.value("queries", -1), report.value("timeouts", -1),
               report.value("unknown", -1));
  return 0;
}
