// Run-time and compile-time benchmark on the example models, side by side in one run: the cpp
// backend vs the reference interpreter vs PyTorch eager (CPU, Debian's python3-torch, same .npy
// inputs), and cpp compile time cold (fresh cache) and warm (cache hit).
// Usage: bench_models [--iters N]
#include <fmt/core.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "reprokit/codegen/compiler.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/process/subprocess.h"
#include "reprokit/runtime/input_gen.h"
#include "reprokit/runtime/interpreter.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/runtime/torch_emitter.h"

using namespace reprokit;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

template <class F>
double time_us(F f, int iters) {
  f();  // warm up
  auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) f();
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iters;
}

// PyTorch eager: the emitted program's function timed in a loop inside one python process.
double torch_us(const Graph& g, const fs::path& dir, int iters) {
  std::ofstream(dir / "prog.py") << emit_torch_program(g);
  std::ofstream(dir / "timeit.py") << fmt::format(R"(
import importlib.util, os, sys, time, torch
spec = importlib.util.spec_from_file_location('prog', '{}')
prog = importlib.util.module_from_spec(spec); sys.argv = ['prog']; spec.loader.exec_module(prog)
args = []
for name, dtype, shape, strides in prog.INPUTS:
    t = prog.load(os.path.join('{}', name + '.npy'), dtype)
    if strides is not None:
        t = torch.empty_strided(shape, strides, dtype=dtype).copy_(t)
    args.append(t)
fn = getattr(prog, '{}')
with torch.no_grad():
    for _ in range(10): fn(*args)
    t0 = time.perf_counter()
    for _ in range({}): fn(*args)
    print((time.perf_counter() - t0) / {} * 1e6)
)", (dir / "prog.py").string(), (dir / "in").string(), g.name, iters, iters);
  ProcessSpec ps;
  ps.argv = {"/usr/bin/python3", (dir / "timeit.py").string()};
  ps.timeout_s = 300;
  try {
    ProcessResult r = run_process(ps);
    if (r.exit_code != 0) return -1;
    return std::stod(r.out);
  } catch (...) {
    return -1;
  }
}

int main(int argc, char** argv) {
  int iters = 200;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--iters") iters = std::atoi(argv[i + 1]);
  fs::path tmp = fs::temp_directory_path() / fmt::format("rk_bench_models_{}", ::getpid());
  fmt::print("{:<22} {:>12} {:>12} {:>12} {:>10} {:>10} | {:>12} {:>12}\n", "model", "cpp us", "interp us", "torch us", "torch/cpp",
             "interp/cpp", "cold compile", "warm compile");
  for (auto name : {"mlp", "attention", "embedding_classifier", "mixed_precision"}) {
    Graph g = load_module_file(std::string(REPROKIT_SOURCE_DIR) + "/examples/" + name + ".rk").entry();
    fs::path dir = tmp / name;
    fs::create_directories(dir / "in");
    auto inputs = generate_inputs(g, 0);
    for (int i = 0; i < g.num_inputs(); ++i) write_npy((dir / "in" / (g.node(i).name + ".npy")).string(), inputs[static_cast<size_t>(i)]);
    CompileOptions o;
    o.backend = "cpp";
    o.cache_dir = (dir / "cache").string();  // fresh: the first compile is cold
    auto t0 = Clock::now();
    auto compiled = compile_graph(g, o);
    double cold_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    t0 = Clock::now();
    auto again = compile_graph(g, o);
    double warm_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    double cpp = time_us([&] { compiled->run(inputs); }, iters);
    double interp = time_us([&] { interpret(g, inputs); }, std::max(10, iters / 10));
    double torch = torch_us(g, dir, iters);
    fmt::print("{:<22} {:>12.1f} {:>12.1f} {:>12} {:>10} {:>10.1f} | {:>9.0f} ms {:>9.1f} ms\n", name, cpp, interp,
               torch < 0 ? "n/a" : fmt::format("{:.1f}", torch), torch < 0 ? "n/a" : fmt::format("{:.2f}", torch / cpp), interp / cpp, cold_ms,
               warm_ms);
  }
  fmt::print("(torch/cpp > 1: the cpp backend is faster than PyTorch eager; warm compile = cache hit, no compiler run)\n");
  fs::remove_all(tmp);
  return 0;
}
