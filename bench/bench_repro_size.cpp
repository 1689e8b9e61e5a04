// Repro sizes before and after the shape, value, attribute and compiler strategies, side by side
// in one run: every example model with an injected bug (exp:accuracy, relu:runtime_error,
// matmul:crash, softmax:accuracy, where the op exists) at REPRO_AFTER=dynamo and aot, minified
// once with the graph strategies only (the strategy set before them) and once with all of them.
// Prints ops, input elements, compiler passes and queries of each.
// Usage: bench_repro_size [--only MODEL]
#include "bench_options.h"
#include <fmt/core.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "reprokit/process/subprocess.h"

namespace fs = std::filesystem;
using reprokit::ProcessResult;
using reprokit::ProcessSpec;
using reprokit::run_process;

namespace {

const char* kGraphStrategies = "truncate,cut-front,bypass,cut,remove-outputs,zero-inputs,one-inputs";

struct Row {
  int ops = 0, passes = 0, queries = 0;
  int64_t elements = 0;
  double seconds = 0;
  bool verified = false;
};

Row minify(const fs::path& bundle, const std::string& only, const fs::path& cache) {
  ProcessSpec s;
  s.argv = {REPROKIT_EXE, "minify", bundle.string()};
  if (!only.empty()) s.argv.insert(s.argv.end(), {"--only", only});
  s.env_set = {{"REPRO_CACHE_DIR", cache.string()}};
  s.timeout_s = 900;
  auto t0 = std::chrono::steady_clock::now();
  ProcessResult r = run_process(s);
  Row row;
  row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::ifstream in(bundle / "report.json");
  auto j = nlohmann::json::parse(in);
  row.ops = j["final_ops"];
  row.elements = j["final_elements"];
  row.passes = j["final_passes"];
  row.queries = j["queries"];
  row.verified = r.exit_code == 0;
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  const reprokit::bench::BenchOptions options(argc, argv, "bench_repro_size", {{"--only", "MODEL", "only this example model"}});
  const std::string only_model = options.text("--only", "");
  fs::path tmp = fs::temp_directory_path() / fmt::format("rk_bench_repro_size_{}", ::getpid());
  fs::create_directories(tmp);
  fmt::print("{:<22} {:<20} {:<7} | {:>4} {:>8} {:>6} {:>7} | {:>4} {:>8} {:>6} {:>7} {:>6} | {}\n", "model", "injected", "after", "ops", "elements",
             "passes", "queries", "ops", "elements", "passes", "queries", "q x", "verified");
  fmt::print("{:<51} | {:^29} | {:^36} |\n", "", "graph strategies (before)", "all strategies (after)");
  int before_q = 0, after_q = 0;
  for (auto model : {"mlp", "attention", "embedding_classifier", "mixed_precision"}) {
    if (!only_model.empty() && only_model != model) continue;
    for (auto inject : {"exp:accuracy", "relu:runtime_error", "matmul:crash", "softmax:accuracy"})
      for (auto after : {"dynamo", "aot"}) {
        std::string label = fmt::format("{}_{}_{}", model, std::string(inject).substr(0, std::string(inject).find(':')), after);
        fs::path dir = tmp / label;
        fs::create_directories(dir);
        ProcessSpec run;
        run.argv = {REPROKIT_EXE, "run", std::string(REPROKIT_SOURCE_DIR) + "/examples/" + model + ".rk", "--inject", inject};
        run.cwd = dir.string();
        run.env_set = {{"REPRO_AFTER", after}, {"REPRO_LEVEL", "4"}, {"REPRO_DIR", "out"}, {"REPRO_CACHE_DIR", (tmp / "cache").string()}};
        ProcessResult rr = run_process(run);
        if (rr.exit_code == 2 || rr.exit_code == 0) continue;  // the op is not in this model (or nothing failed)
        fs::path bundle;
        for (auto& e : fs::directory_iterator(dir / "out")) bundle = e.path();
        fs::path copy = dir / "before";
        fs::copy(bundle, copy, fs::copy_options::recursive);
        Row b = minify(copy, kGraphStrategies, tmp / "cache"), a = minify(bundle, "", tmp / "cache");
        before_q += b.queries;
        after_q += a.queries;
        fmt::print("{:<22} {:<20} {:<7} | {:>4} {:>8} {:>6} {:>7} | {:>4} {:>8} {:>6} {:>7} {:>6.2f} | {}\n", model, inject, after, b.ops, b.elements,
                   b.passes, b.queries, a.ops, a.elements, a.passes, a.queries, static_cast<double>(a.queries) / std::max(b.queries, 1),
                   a.verified && b.verified ? "both"
                   : a.verified             ? "after only"
                   : b.verified             ? "before only"
                                            : "neither");
      }
  }
  fmt::print("total queries: before {}, after {} ({:.2f}x)\n", before_q, after_q, static_cast<double>(after_q) / std::max(before_q, 1));
  fs::remove_all(tmp);
  return 0;
}
