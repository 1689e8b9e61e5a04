// Compile time of the cpp backend against graph size, cold (a fresh cache each time): graphs
// with many outputs and long chains, and the BERT layer. Compile time should grow linearly.
// Then what a minifier candidate costs after its parent was compiled: 5,000-op pieces of a
// 10,000-op chain (its front half, its back half with the cut value as an input, its middle),
// each compiled after the whole chain, next to the same piece compiled cold.
// Usage: bench_compile
#include "bench_options.h"
#include <fmt/core.h>

#include <chrono>
#include <filesystem>

#include "reprokit/codegen/compiler.h"
#include "reprokit/ir/text_format.h"

using namespace reprokit;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// n outputs, each its own small expression of the input.
Graph many_outputs(int n) {
  std::string src = "graph wide(%x: f32[16]) {\n";
  std::string ret;
  for (int i = 0; i < n; ++i) {
    src += fmt::format("  %o{} = mul(%x, {}.5)\n", i, i);
    ret += (i ? ", %o" : "%o") + std::to_string(i);
  }
  return parse_graph(src + "  return (" + ret + ")\n}\n");
}

// A chain of n pointwise ops of alternating kinds.
Graph chain(int n) {
  std::string src = "graph chain(%x: f32[64]) {\n  %v0 = add(%x, 1.0)\n";
  const char* ops[] = {"add(%v{}, 0.5)", "mul(%v{}, 0.999)", "tanh(%v{})", "sub(%v{}, 0.25)"};
  for (int i = 1; i < n; ++i) src += fmt::format("  %v{} = {}\n", i, fmt::format(fmt::runtime(ops[i % 4]), i - 1));
  return parse_graph(src + fmt::format("  return (%v{})\n}}\n", n - 1));
}

// Ops [first, last) of chain(10000), the value before `first` an input of the same name.
Graph chain_piece(int first, int last) {
  const char* ops[] = {"add(%v{}, 0.5)", "mul(%v{}, 0.999)", "tanh(%v{})", "sub(%v{}, 0.25)"};
  std::string src = first == 0 ? "graph chain(%x: f32[64]) {\n  %v0 = add(%x, 1.0)\n" : fmt::format("graph chain(%v{}: f32[64]) {{\n", first - 1);
  for (int i = std::max(first, 1); i < last; ++i) src += fmt::format("  %v{} = ", i) + fmt::format(fmt::runtime(ops[i % 4]), i - 1) + "\n";
  return parse_graph(src + fmt::format("  return (%v{})\n}}\n", last - 1));
}

int main(int argc, char** argv) {
  const bench::BenchOptions options(argc, argv, "bench_compile", {});
  fs::path cache = fs::temp_directory_path() / fmt::format("rk_bench_compile_{}", ::getpid());
  CompileOptions o;
  o.backend = "cpp";
  auto time_compile = [&](const Graph& g) {
    fs::remove_all(cache);
    o.cache_dir = cache.string();
    auto t0 = Clock::now();
    compile_graph(g, o);
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  fmt::print("{:<36} {:>8} {:>12}\n", "graph", "nodes", "cold compile");
  for (int n : {300, 1000, 3000}) {
    Graph g = many_outputs(n);
    fmt::print("{:<36} {:>8} {:>10.2f} s\n", fmt::format("{} outputs", n), g.num_ops(), time_compile(g));
  }
  for (int n : {1000, 3000, 10000}) {
    Graph g = chain(n);
    fmt::print("{:<36} {:>8} {:>10.2f} s\n", fmt::format("chain of {} pointwise ops", n), g.num_ops(), time_compile(g));
  }
  Graph bert = load_module_file(std::string(REPROKIT_SOURCE_DIR) + "/bench/models/bert_layer.rk").entry();
  fmt::print("{:<36} {:>8} {:>10.2f} s\n", "bert_layer", bert.num_ops(), time_compile(bert));

  fmt::print("\n{:<36} {:>8} {:>12} {:>16}\n", "piece of a 10,000-op chain", "nodes", "cold compile", "after the chain");
  for (auto [label, first, last] :
       {std::tuple{"front half (a truncation)", 0, 5000}, std::tuple{"back half (a cut)", 5000, 10000}, std::tuple{"middle (both)", 2500, 7500}}) {
    Graph piece = chain_piece(first, last);
    double cold = time_compile(piece);
    fs::remove_all(cache);
    compile_graph(chain(10000), o);  // the parent, as the harness compiled it
    auto t0 = Clock::now();
    compile_graph(piece, o);
    double warm = std::chrono::duration<double>(Clock::now() - t0).count();
    fmt::print("{:<36} {:>8} {:>10.2f} s {:>14.2f} s\n", label, piece.num_ops(), cold, warm);
  }
  fs::remove_all(cache);
  return 0;
}
