// Run-time and compile-time benchmark on the example models, side by side in one run: the cpp
// backend vs the reference interpreter vs PyTorch eager (CPU, Debian's python3-torch, same .npy
// inputs) vs ONNX Runtime (onnxruntime-node's CPU build through examples/ort_check/check.mjs
// --time, every graph optimisation, one intra-op thread per core) vs Inductor (torch.compile,
// default mode, of the same emitted PyTorch program, in the Python the Python backends use:
// $REPROKIT_PYTHON or .venv) vs OpenVINO (its CPU plugin on the .onnx file ONNX Runtime runs,
// INFERENCE_NUM_THREADS one per core, f32 precision); Inductor and OpenVINO through
// bench/peer_engines.py. Compile times: cpp cold (fresh cache), warm (cache hit) and bare (fresh
// cache, without the build's kernels library: REPRO_KERNELS_LIBRARY=off), Inductor cold
// (its first call, with an empty TORCHINDUCTOR_CACHE_DIR and no FX graph cache) and its ratio to
// cpp cold, OpenVINO's read_model + compile_model. Each time is the median of N timed runs after 3
// warm-up runs, for every engine alike: N = --iters, a tenth of it (at least 11) for models over
// 100 MFLOP. The engines are timed in turn, --rounds times (in reverse order every other round),
// and each engine's time is the median of its rounds: on a shared machine whose load comes and
// goes, a busy minute is not charged to whichever engine ran in it (one round on two threads put
// mobilenet_v2's cpp and ONNX Runtime times at twice what they were a minute later, and
// OpenVINO's, timed after them, at half theirs). Inductor's and OpenVINO's first outputs are
// checked against the cpp backend's (within a thousandth of each output's scale, looser for
// f16/bf16 graphs): "mismatch" instead of a time when they disagree.
// Models: the examples, bench/models/*.rk, and resnet18, mobilenet_v2, squeezenet1_0, a small ViT,
// densenet121, efficientnet_b0, convnext_tiny and regnet_y_400mf exported from torchvision by
// tests/models/export_models.py (random weights; skipped without python3-torch/torchvision). ONNX
// Runtime and OpenVINO run a real model's own .onnx (its weights are initializers they may prepack
// and fold), a .rk model as `reprokit export` writes it with its inputs after the first (the
// weights) as initializers; for the cpp backend, PyTorch and Inductor the weights are inputs (the
// cpp backend's frozen: CompileOptions::frozen_inputs).
// Usage: bench_models [--iters N] [--rounds R] [--fastest-round] [--only NAME]...
//                     [--skip interp|torch|ort|inductor|openvino|memory]... [--threads T] [--batch B] [--keep]
// --threads T: every engine runs on T threads (the cpp backend's OpenMP, ONNX Runtime's intra-op
// threads, torch.set_num_threads, OpenVINO's INFERENCE_NUM_THREADS); default one per core.
// --batch B: the real models are exported with batch B (the .rk models, whose shapes are fixed,
// are left out); the cpp us/sample column is the run divided by B.
// Peak memory (cpp MB, ort MB): what one run adds to its process's resident set, from before the
// model is loaded to the peak of its first run: the cpp backend in a child of this program
// (bench_models --peak-rss DIR: the compiled library loaded first, then the inputs and weights read
// and one run), ONNX Runtime in check.mjs (the session created, the inputs read, the timed runs).
// --keep leaves the work directory (exports, inputs, the compile caches) in place, so a profiler
// (`perf report`) can still resolve the generated libraries' symbols.
#include "bench_options.h"
#include <dlfcn.h>
#include <malloc.h>
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <thread>
#include <vector>

#include "reprokit/codegen/compiler.h"
#include "reprokit/harness/warm_runs.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/onnx/onnx_export.h"
#include "reprokit/onnx/onnx_import.h"
#include "reprokit/process/subprocess.h"
#include "reprokit/runtime/input_gen.h"
#include "reprokit/runtime/interpreter.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/runtime/torch_emitter.h"
#include "../src/codegen/cpp_toolchain.h"
#include "../src/codegen/python_worker.h"

using namespace reprokit;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Every engine is timed the same way: kWarmups runs, then the median of `runs` timed one by one.
// A mean over a few runs of a large model came out 14 or 21 ms for the same code (mlp_large):
// one slow run, or a warm-up too short, moved it by half.
constexpr int kWarmups = 3;

template <class F> double median_us(F f, int runs) {
  for (int i = 0; i < kWarmups; ++i) f();
  std::vector<double> t(static_cast<size_t>(std::max(1, runs)));
  for (double& v : t) {
    auto t0 = Clock::now();
    f();
    v = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  }
  std::nth_element(t.begin(), t.begin() + static_cast<long>(t.size() / 2), t.end());
  return t[t.size() / 2];
}

// A cold compile of `g` into the fresh cache `cache` without the build's kernels library
// (REPRO_KERNELS_LIBRARY=off: its kernels units compiled as well), in ms; -1 where there is no
// library to leave out. What a machine the library was not built for pays.
double cold_without_kernels_library_ms(const Graph& g, CompileOptions o, const fs::path& cache) {
  if (kernels_library_dir().empty()) return -1;
  const char* was = std::getenv("REPRO_KERNELS_LIBRARY");
  const std::string before = was ? was : "";
  ::setenv("REPRO_KERNELS_LIBRARY", "off", 1);
  o.cache_dir = cache.string();
  const auto t0 = Clock::now();
  compile_graph(g, o);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (was) ::setenv("REPRO_KERNELS_LIBRARY", before.c_str(), 1);
  else ::unsetenv("REPRO_KERNELS_LIBRARY");
  return ms;
}

// An engine's time over the rounds (-1: it did not run): the median of its rounds' times, or with
// --fastest-round the fastest. On a virtual machine whose host takes CPU time from it (`top`'s
// `st`) a round's median is only ever pushed up, each engine's by how much it ran in busy
// minutes: the fastest round is the closest to what each engine does undisturbed.
bool g_fastest_round = false;
double over_rounds(const std::vector<double>& times) {
  if (times.empty()) return -1;
  return g_fastest_round ? *std::min_element(times.begin(), times.end()) : median_of(times);
}

// One run, untimed warm-up included: the interpreter on a large model (seconds a run).
template <class F> double once_us(F f) {
  auto t0 = Clock::now();
  f();
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

// The threads every engine gets: --threads, or one per core.
unsigned g_threads = 0;
unsigned engine_threads() { return g_threads ? g_threads : std::max(1u, std::thread::hardware_concurrency()); }

// PyTorch eager: the emitted program (dir/prog.py)'s function timed in a loop inside one python
// process.
double torch_us(const Graph& g, const fs::path& dir, int iters) {
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
torch.set_num_threads({})
with torch.no_grad():
    for _ in range({}): fn(*args)
    runs = []
    for _ in range({}):
        t0 = time.perf_counter()
        fn(*args)
        runs.append(time.perf_counter() - t0)
    print(sorted(runs)[len(runs) // 2] * 1e6)
)",
                                                  (dir / "prog.py").string(), (dir / "in").string(), torch_function_name(g), engine_threads(),
                                                  kWarmups, iters);
  ProcessSpec ps;
  ps.argv = {"/usr/bin/python3", (dir / "timeit.py").string()};
  ps.timeout_s = 300;
  try {
    ProcessResult r = run_process(ps);
    if (r.exit_code != 0) {  // said, not hidden behind an "n/a"
      fmt::print(stderr, "bench_models: PyTorch timing of {} failed: {}\n", g.name, r.err.substr(r.err.size() > 600 ? r.err.size() - 600 : 0));
      return -1;
    }
    return std::stod(r.out);
  } catch (...) { return -1; }
}

// ONNX Runtime: the median run of `model` on the .npy files in `inputs` (named after its ONNX
// inputs), with engine_threads() intra-op threads, and the peak memory its runs added (MB, -1
// when not reported); us -1 (and why, on stderr) when it cannot run.
struct OrtTiming {
  double us = -1, peak_mb = -1;
};
OrtTiming ort_time(const fs::path& model, const fs::path& inputs, int iters) {
  OrtTiming t;
  ProcessSpec ps;
  unsigned threads = engine_threads();
  ps.argv = {"node",
             std::string(REPROKIT_SOURCE_DIR) + "/examples/ort_check/check.mjs",
             "--time",
             model.string(),
             inputs.string(),
             std::to_string(iters),
             std::to_string(threads)};
  ps.timeout_s = 600;
  try {
    ProcessResult r = run_process(ps);
    if (r.exit_code != 0) {
      fmt::print(stderr, "bench_models: ONNX Runtime timing of {} failed: {}\n", model.string(),
                 r.err.substr(r.err.size() > 600 ? r.err.size() - 600 : 0));
      return t;
    }
    // "MEDIAN_US PEAK_KB"; a model ORT has no kernel for is "ort_check: unsupported: ..." on
    // exit 0: said, not timed.
    char* end = nullptr;
    double us = std::strtod(r.out.c_str(), &end);
    if (end == r.out.c_str()) {
      fmt::print(stderr, "bench_models: ONNX Runtime cannot time {}: {}", model.string(), r.out + r.err);
      return t;
    }
    t.us = us;
    char* end_kb = nullptr;
    double kb = std::strtod(end, &end_kb);
    if (end_kb != end && kb >= 0) t.peak_mb = kb / 1024;
    return t;
  } catch (const std::exception& e) {
    fmt::print(stderr,
               "bench_models: ONNX Runtime timing needs node and onnxruntime-node (cd examples/ort_check && npm install --ignore-scripts): {}\n",
               e.what());
    return t;
  }
}

// A field of /proc/self/status in kB ("VmRSS", "VmHWM"), -1 when absent.
double status_kb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1));
  return -1;
}

// The cpp backend's options for a model's timed runs and its peak memory. The weights (the inputs
// after the first) are constants for every engine alike: the cpp backend keeps what it derives
// from them (a GEMM's packed panels) across runs, as ONNX Runtime prepacks them.
CompileOptions timed_cpp_options(const Graph& g, const fs::path& cache) {
  CompileOptions o;
  o.backend = "cpp";
  o.cache_dir = cache.string();
  for (int i = 1; i < g.num_inputs(); ++i) o.frozen_inputs.insert(g.node(i).name);
  return o;
}

// The child of --peak-rss: DIR holds model.rk, its inputs (in/NAME.npy) and the compile cache the
// timing filled (so the library is a cache hit). The library is loaded first; then the resident
// set is the baseline, its peak is reset (clear_refs 5), the inputs are read and the model runs
// once, with the timed runs' options. Prints the kB the peak rose above the baseline; exit 3 when
// the peak cannot be reset.
int peak_rss_child(const fs::path& dir) {
  Graph g = load_module_file((dir / "model.rk").string()).entry();
  CompileOptions o = timed_cpp_options(g, dir / "cache");
  auto compiled = compile_graph(g, o);
  malloc_trim(0);  // what the compile freed is not counted as the run's
  const double base = status_kb("VmRSS");
  if (!(std::ofstream("/proc/self/clear_refs") << "5")) return 3;
  std::vector<Tensor> inputs;
  for (int i = 0; i < g.num_inputs(); ++i) inputs.push_back(read_npy((dir / "in" / (g.node(i).name + ".npy")).string()));
  compiled->run(inputs);
  fmt::print("{:.0f}\n", status_kb("VmHWM") - base);
  return 0;
}

// The cpp backend's peak memory of one run (MB), from a child of this program; -1 (and why, on
// stderr) when it cannot be measured.
double cpp_peak_mb(const Graph& g, const fs::path& dir) {
  std::ofstream(dir / "model.rk") << print_graph(g);
  ProcessSpec ps;
  ps.argv = {fs::read_symlink("/proc/self/exe").string(), "--peak-rss", dir.string()};
  ps.timeout_s = 600;
  try {
    ProcessResult r = run_process(ps);
    if (r.exit_code == 0) return std::stod(r.out) / 1024;
    fmt::print(stderr, "bench_models: no peak memory of {}: {}\n", g.name,
               r.exit_code == 3 ? "the peak resident set cannot be reset here (/proc/self/clear_refs)"
                                : r.err.substr(r.err.size() > 600 ? r.err.size() - 600 : 0));
  } catch (const std::exception& e) { fmt::print(stderr, "bench_models: no peak memory of {}: {}\n", g.name, e.what()); }
  return -1;
}

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

// Why an engine's outputs (out_dir/out<k>.npy) disagree with the cpp backend's, or "" when they
// agree: the same shapes, NaN where cpp has NaN, and every element within `tolerance` times the
// output's largest finite magnitude.
std::string outputs_disagree(const fs::path& out_dir, const std::vector<Tensor>& expected, double tolerance) {
  for (size_t k = 0; k < expected.size(); ++k) {
    fs::path file = out_dir / fmt::format("out{}.npy", k);
    if (!fs::exists(file)) return fmt::format("no output {}", k);
    Tensor got = read_npy(file.string());
    if (got.shape() != expected[k].shape())
      return fmt::format("output {} has shape {}, cpp's {}", k, shape_str(got.shape()), shape_str(expected[k].shape()));
    std::vector<double> a = got.to_doubles(), b = expected[k].to_doubles();
    double scale = 0, worst = 0;
    for (double v : b)
      if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::isnan(a[i]) != std::isnan(b[i]) || (std::isinf(b[i]) && a[i] != b[i]))
        return fmt::format("output {} element {}: {} where cpp has {}", k, i, a[i], b[i]);
      if (std::isfinite(b[i])) worst = std::max(worst, std::isfinite(a[i]) ? std::abs(a[i] - b[i]) : INFINITY);
    }
    if (!(worst <= tolerance * scale)) return fmt::format("output {}: max |diff| {:.3g}, {:.3g} of its scale {:.3g}", k, worst, worst / scale, scale);
  }
  return "";
}

// How far a peer engine's outputs may stray from the cpp backend's, relative to their scale: a
// thousandth, or a few units of the narrowest float type the graph computes in (an engine may
// keep a bf16 or f16 intermediate in f32).
double peer_tolerance(const Graph& g) {
  double eps = 0;
  for (auto& n : g.nodes) {
    if (n.type.dtype == DType::bf16) eps = std::max(eps, 0x1p-7);
    if (n.type.dtype == DType::f16) eps = std::max(eps, 0x1p-10);
  }
  return std::max(1e-3, 4 * eps);
}

// Inductor or OpenVINO, through bench/peer_engines.py in the Python reprokit's Python backends
// use: the median run (after kWarmups) and the compile time, or -1 (and why, on stderr).
struct PeerTiming {
  double us = -1;
  double compile_ms = -1;
  bool mismatch = false;  // its first run's outputs disagree with cpp's: no time is reported
};

PeerTiming peer_time(const std::string& engine, const std::string& model, const fs::path& inputs, const fs::path& dir, int iters,
                     const std::vector<Tensor>& expected, double tolerance, const std::map<std::string, std::string>& env) {
  static std::set<std::string> unavailable;  // said once, not for every model
  PeerTiming t;
  if (unavailable.count(engine)) return t;
  fs::path out = dir / (engine + "_out");
  ProcessSpec ps;
  ps.argv = {python_interpreter(),
             std::string(REPROKIT_SOURCE_DIR) + "/bench/peer_engines.py",
             engine,
             model,
             inputs.string(),
             std::to_string(kWarmups),
             std::to_string(iters),
             std::to_string(engine_threads()),
             out.string()};
  ps.env_set = env;
  ps.timeout_s = 1200;  // Inductor's cold compile of a large model on few cores takes minutes
  ProcessResult r;
  try {
    r = run_process(ps);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_models: {} timing needs {}: {}\n", engine, ps.argv[0], e.what());
    unavailable.insert(engine);
    return t;
  }
  std::string line = r.out.substr(0, r.out.find_last_not_of('\n') + 1);
  line = line.substr(line.rfind('\n') == std::string::npos ? 0 : line.rfind('\n') + 1);
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (r.exit_code == 2 && j.is_object() && j.contains("unavailable")) {
    fmt::print(stderr, "bench_models: no {} column: {}\n", engine, j["unavailable"].get<std::string>());
    unavailable.insert(engine);
    return t;
  }
  if (r.exit_code != 0 || !j.is_object() || !j.contains("median_us")) {
    fmt::print(stderr, "bench_models: {} timing of {} failed{}: {}\n", engine, model, r.timed_out ? " (timed out)" : "",
               r.err.substr(r.err.size() > 600 ? r.err.size() - 600 : 0));
    return t;
  }
  t.compile_ms = j["compile_ms"].get<double>();
  if (std::string why = outputs_disagree(out, expected, tolerance); !why.empty()) {
    fmt::print(stderr, "bench_models: {} on {}: outputs disagree with the cpp backend's ({}): no time reported\n", engine, model, why);
    t.mismatch = true;
    return t;
  }
  t.us = j["median_us"].get<double>();
  return t;
}

// A peer's round: the first round's timing kept whole (its compile time, whether it disagreed),
// each round's time kept; a disagreement in a later round is reported too.
void keep_round(PeerTiming& first, std::vector<double>& times, int round, const PeerTiming& t) {
  if (round == 0) first = t;
  else first.mismatch |= t.mismatch;
  if (t.us >= 0) times.push_back(t.us);
}

// Floating-point operations of one run: the matmuls, linears and convolutions (2 per multiply-add).
double graph_flops(const Graph& g) {
  double f = 0;
  for (auto& n : g.nodes) {
    if (n.is_input()) continue;
    const Shape& out = n.type.shape;
    if (n.op == Op::matmul) f += 2.0 * static_cast<double>(numel(out)) * static_cast<double>(g.node(n.operands[0].value).type.shape.back());
    if (n.op == Op::linear) f += 2.0 * static_cast<double>(numel(out)) * static_cast<double>(g.node(n.operands[1].value).type.shape[1]);
    if (n.op == Op::conv2d) {
      const Shape& w = g.node(n.operands[1].value).type.shape;
      f += 2.0 * static_cast<double>(numel(out)) * static_cast<double>(w[1] * w[2] * w[3]);
    }
  }
  return f;
}

// FMAs one core retires: 12 independent chains of 16-float vectors (the FMA latency of 4
// cycles, times 2 units, plus room), 20 M steps: 7.7 GFLOP.
typedef float BenchF32x16 __attribute__((vector_size(64)));
__attribute__((target("avx512f,fma"))) double fma_chains_512(int64_t steps) {
  BenchF32x16 acc[12], x, y;
  for (int l = 0; l < 16; ++l) x[l] = 1.0f + 1e-7f * (float)l, y[l] = 1e-7f;
  for (auto& a : acc) a = y;
  for (int64_t i = 0; i < steps; ++i)
#pragma GCC unroll 12
    for (auto& a : acc) a = a * x + y;
  double sink = 0;
  for (auto& a : acc) sink += a[0];
  return sink;
}

// Peak single-precision GFLOP/s of this machine: /proc/cpuinfo's estimate (cores x its MHz x
// FLOPs per cycle: 32 with AVX2 FMA, two 8-wide units; 64 with AVX-512) and, with AVX-512, the
// rate measured on every core at once. cpuinfo's MHz is the base clock; under load these cores
// run faster (measured 480 against 333 GFLOP/s on two cores).
// Which kernels OpenBLAS runs (the cpp backend's matmuls and PyTorch's go through it; ONNX
// Runtime has its own): its own pick for this CPU, or OPENBLAS_CORETYPE's. A machine that pins
// an older core (AVX2 on an AVX-512 CPU) runs those GEMMs at half the rate, and the ratios
// against ONNX Runtime move with it. Asked of the copy the generated libraries loaded.
std::string openblas_core() {
  void* lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_NOLOAD);
  auto name = lib ? reinterpret_cast<char* (*)()>(dlsym(lib, "openblas_get_corename")) : nullptr;
  const char* pinned = std::getenv("OPENBLAS_CORETYPE");
  std::string s = name ? fmt::format("OpenBLAS kernels: {}", name()) : "OpenBLAS kernels: (not loaded)";
  s += pinned ? fmt::format(" (OPENBLAS_CORETYPE={} in the environment)", pinned) : " (its own pick for this CPU)";
  if (lib) dlclose(lib);
  return s;
}

std::string peak_estimate() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, flags, model;
  double mhz = 0;
  int cores = 0;
  while (std::getline(in, line)) {
    if (line.rfind("processor", 0) == 0) ++cores;
    if (line.rfind("cpu MHz", 0) == 0 && mhz == 0) mhz = std::stod(line.substr(line.find(':') + 1));
    if (line.rfind("flags", 0) == 0 && flags.empty()) flags = line;
    if (line.rfind("model name", 0) == 0 && model.empty()) model = line.substr(line.find(':') + 2);
  }
  int per_cycle = flags.find(" avx512f") != std::string::npos ? 64 : flags.find(" fma") != std::string::npos ? 32 : 16;
  double peak = cores * mhz / 1000 * per_cycle;
  std::string measured = "not measured (no AVX-512)";
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma")) {
    constexpr int64_t kSteps = 20'000'000;
    const int n = std::max(cores, 1);
    std::vector<std::thread> threads;
    std::vector<double> sinks((size_t)n);  // the chains' results, so they are computed
    auto t0 = std::chrono::steady_clock::now();
    for (int c = 0; c < n; ++c) threads.emplace_back([&sinks, c] { sinks[(size_t)c] = fma_chains_512(kSteps); });
    for (auto& t : threads) t.join();
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    measured = fmt::format("{:.0f} GFLOP/s measured (independent FMAs on every core)", n * kSteps * 12.0 * 16 * 2 / secs / 1e9);
  }
  return fmt::format("machine: {}, {} cores at {:.0f} MHz, {} FLOP/cycle/core -> peak about {:.0f} GFLOP/s (fp32) by cpuinfo, {}", model, cores, mhz,
                     per_cycle, peak, measured);
}

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--peak-rss") return peak_rss_child(argv[2]);
  const bench::BenchOptions options(argc, argv, "bench_models",
                                    {{"--iters", "N", "timed runs per engine and model (a tenth, at least 11, over 100 MFLOP); default 200"},
                                     {"--rounds", "R", "time the engines in turn R times, each engine's time the median of its rounds; default 3"},
                                     {"--fastest-round", nullptr, "each engine's time the fastest of its rounds, not their median"},
                                     {"--only", "NAME", "only this model (repeatable)"},
                                     {"--skip", "COLUMN", "leave out interp, torch, ort, inductor, openvino or memory (repeatable)"},
                                     {"--threads", "T", "threads for every engine; default one per core"},
                                     {"--batch", "B", "export the real models with batch B (the .rk models left out)"},
                                     {"--keep", nullptr, "keep the scratch directory"}});
  const int iters = options.number("--iters", 200, 1), batch = options.number("--batch", 1, 1), rounds = options.number("--rounds", 3, 1);
  g_threads = (unsigned)options.number("--threads", 0, 1);
  const std::vector<std::string> only = options.texts("--only"), skip = options.texts("--skip");
  const std::vector<std::string> columns = {"interp", "torch", "ort", "inductor", "openvino", "memory"};  // what --skip can leave out
  for (const std::string& column : skip)
    if (std::find(columns.begin(), columns.end(), column) == columns.end())
      options.refuse(fmt::format("--skip takes {}, not '{}'", fmt::join(columns, ", "), column));
  // Every model the table can hold, by name: --only names one of them (a comma list names none).
  const std::vector<std::string> rk_files = [] {
    std::vector<std::string> f;
    for (auto name : {"mlp", "attention", "embedding_classifier", "mixed_precision"})
      f.push_back(std::string(REPROKIT_SOURCE_DIR) + "/examples/" + name + ".rk");
    for (auto name : {"mlp_large", "bert_layer"}) f.push_back(std::string(REPROKIT_SOURCE_DIR) + "/bench/models/" + name + ".rk");
    return f;
  }();
  const std::vector<std::string> real_models = {"resnet18",    "mobilenet_v2",    "squeezenet1_0", "vit_small",
                                                "densenet121", "efficientnet_b0", "convnext_tiny", "regnet_y_400mf"};
  if (!only.empty()) {
    std::vector<std::string> known;
    for (auto& path : rk_files) known.push_back(load_module_file(path).entry().name);
    known.insert(known.end(), real_models.begin(), real_models.end());
    for (const std::string& name : only)
      if (std::find(known.begin(), known.end(), name) == known.end())
        options.refuse(fmt::format("--only names one model (give it again for another), one of {}; not '{}'", fmt::join(known, ", "), name));
  }
  const bool keep = options.flag("--keep");
  g_fastest_round = options.flag("--fastest-round");
  auto skipped = [&](const char* column) { return std::find(skip.begin(), skip.end(), column) != skip.end(); };
  fs::path tmp = fs::temp_directory_path() / fmt::format("rk_bench_models_{}", ::getpid());
  // Before any generated library loads libgomp, which reads it once.
  if (g_threads) ::setenv("OMP_NUM_THREADS", std::to_string(g_threads).c_str(), 1);
  fmt::print("{}\n", peak_estimate());
  fmt::print("batch {}, {} thread(s) per engine, {} round(s): each time the {} of its rounds\n", batch, engine_threads(), rounds,
             g_fastest_round ? "fastest" : "median");
  fmt::print(
      "{:<20} {:>9} {:>9} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7} {:>6} {:>10} {:>8} {:>10} {:>8} {:>8} {:>7} | {:>8} {:>8} {:>8} {:>9} "
      "{:>12} "
      "{:>8} | {:>7} {:>7}\n",
      "model", "cpp us", "cpp/smpl", "interp us", "torch us", "ort us", "ind us", "ov us", "torch/cpp", "ort/cpp", "ind/cpp", "ov/cpp", "interp/cpp",
      "cpp GF/s", "torch GF/s", "ort GF/s", "ind GF/s", "ov GF/s", "cpp cold", "cpp warm", "cpp bare", "ind cold", "ind/cpp cold", "ov comp",
      "cpp MB", "ort MB");
  struct Model {
    std::string label;
    Graph graph;
    std::vector<Tensor> inputs;
    std::string onnx;                      // a real model's own .onnx, empty for a .rk model
    std::vector<std::string> onnx_inputs;  // per graph input: its ONNX name (real models)
  };
  std::vector<Model> models;
  auto wanted = [&](const std::string& name) { return only.empty() || std::find(only.begin(), only.end(), name) != only.end(); };
  std::vector<std::string> files = rk_files;
  if (batch > 1) {
    files.clear();
    fmt::print("(the .rk models, whose shapes are fixed, are left out at batch {})\n", batch);
  }
  for (auto& path : files) {
    Graph g = load_module_file(path).entry();
    if (!wanted(g.name)) continue;
    auto inputs = generate_inputs(g, 0);
    models.push_back({g.name, std::move(g), std::move(inputs), "", {}});
  }
  // Real models through ONNX: their weights and input as exported.
  std::vector<std::string> real;
  for (const std::string& name : real_models)
    if (wanted(name)) real.push_back(name);
  if (!real.empty()) {
    ProcessSpec e;
    std::string list;
    for (auto& r : real) list += (list.empty() ? "" : ",") + r;
    e.argv = {
        "/usr/bin/python3",   std::string(REPROKIT_SOURCE_DIR) + "/tests/models/export_models.py", (tmp / "onnx").string(), "--only", list, "--batch",
        std::to_string(batch)};
    e.timeout_s = 600;
    ProcessResult r;
    try {
      r = run_process(e);
    } catch (const std::exception& ex) {
      r.exit_code = -1;
      r.err = ex.what();
    }
    if (r.exit_code != 0)
      fmt::print("(real models not exported skipped: export_models.py failed or python3-torch/torchvision are missing: {})\n",
                 r.err.substr(r.err.size() > 400 ? r.err.size() - 400 : 0));
    for (auto& name : real) {
      std::string dir = (tmp / "onnx" / name).string();
      if (!fs::exists(dir + "/model.onnx")) continue;  // its export failed (said above); the others stand
      try {
        ImportedModel m = import_onnx(dir + "/model.onnx");
        std::vector<Tensor> inputs;
        for (int i = 0; i < m.graph.num_inputs(); ++i) {
          auto v = m.values.find(m.graph.node(i).name);
          inputs.push_back(v != m.values.end() ? v->second : read_npy(dir + "/input.npy"));
        }
        models.push_back({name, std::move(m.graph), std::move(inputs), dir + "/model.onnx", m.input_sources});
      } catch (const std::exception& ex) { fmt::print("({} skipped: reprokit cannot import it: {})\n", name, ex.what()); }
    }
  }
  for (auto& [label, g, inputs, onnx, onnx_inputs] : models) {
    double flops = graph_flops(g);
    bool large = flops > 1e8;  // real-size workloads: fewer runs, one interpreter run
    int n_iters = large ? std::max(11, iters / 10) : iters;
    fs::path dir = tmp / label;
    fs::create_directories(dir / "in");
    for (int i = 0; i < g.num_inputs(); ++i) write_npy((dir / "in" / (g.node(i).name + ".npy")).string(), inputs[static_cast<size_t>(i)]);
    CompileOptions o = timed_cpp_options(g, dir / "cache");  // a fresh cache: the first compile is cold
    auto t0 = Clock::now();
    auto compiled = compile_graph(g, o);
    double cold_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    t0 = Clock::now();
    auto again = compile_graph(g, o);
    double warm_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    const double bare_ms = cold_without_kernels_library_ms(g, o, dir / "cache_bare");
    std::vector<Tensor> expected = compiled->run(inputs);  // what the peer engines' first runs must agree with
    double interp = skipped("interp") ? -1
                    : large           ? once_us([&] { interpret(g, inputs); })
                                      : median_us([&] { interpret(g, inputs); }, std::max(10, iters / 10));
    std::ofstream(dir / "prog.py") << emit_torch_program(g);
    // ONNX Runtime and OpenVINO run the same .onnx file on the same inputs, named after its inputs.
    fs::path model = onnx.empty() ? dir / "model.onnx" : fs::path(onnx);
    if (!skipped("ort") || !skipped("openvino")) {
      fs::create_directories(dir / "ort_in");
      std::map<std::string, Tensor> weights;  // a .rk model's inputs after the first: initializers ORT may prepack
      for (int i = 1; i < g.num_inputs() && onnx.empty(); ++i) weights[g.node(i).name] = inputs[static_cast<size_t>(i)];
      if (onnx.empty()) std::ofstream(model, std::ios::binary) << export_onnx(g, weights);
      for (int i = 0; i < g.num_inputs(); ++i) {
        std::string name = onnx.empty() ? g.node(i).name : onnx_inputs[static_cast<size_t>(i)];
        write_npy((dir / "ort_in" / (name + ".npy")).string(), inputs[static_cast<size_t>(i)]);
      }
    }
    const double cpp_mb = skipped("memory") ? -1 : cpp_peak_mb(g, dir);
    const double tolerance = peer_tolerance(g);
    // The engines in turn, each round's time kept. Compile times and memory are the first round's;
    // an engine that failed or disagreed there is not run again, one that disagrees in a later
    // round is reported as disagreeing.
    OrtTiming ort_t;
    PeerTiming ind, ov;
    std::vector<double> cpp_r, torch_r, ort_r, ind_r, ov_r;
    const std::vector<std::function<void(int)>> engines = {
        [&](int) { cpp_r.push_back(median_us([&] { compiled->run(inputs); }, n_iters)); },
        [&](int round) {
          if (skipped("torch") || (round > 0 && torch_r.empty())) return;
          if (const double t = torch_us(g, dir, n_iters); t >= 0) torch_r.push_back(t);
        },
        [&](int round) {
          if (skipped("ort") || (round > 0 && ort_r.empty())) return;
          const OrtTiming t = ort_time(model, dir / "ort_in", n_iters);
          if (round == 0) ort_t = t;
          if (t.us >= 0) ort_r.push_back(t.us);
        },
        [&](int round) {  // first cold: an empty cache of its own, and no FX graph or AOTAutograd cache; then its C++ builds kept
          if (skipped("inductor") || (round > 0 && ind_r.empty())) return;
          const PeerTiming t =
              peer_time("inductor", (dir / "prog.py").string() + ":" + torch_function_name(g), dir / "in", dir, n_iters, expected, tolerance,
                        {{"TORCHINDUCTOR_CACHE_DIR", (dir / "inductor_cache").string()},
                         {"TORCHINDUCTOR_FX_GRAPH_CACHE", "0"},
                         {"TORCHINDUCTOR_AUTOGRAD_CACHE", "0"}});
          keep_round(ind, ind_r, round, t);
        },
        [&](int round) {
          if (skipped("openvino") || (round > 0 && ov_r.empty())) return;
          const PeerTiming t = peer_time("openvino", model.string(), dir / "ort_in", dir, n_iters, expected, tolerance, {});
          keep_round(ov, ov_r, round, t);
        }};
    for (int round = 0; round < rounds; ++round)
      for (size_t k = 0; k < engines.size(); ++k) engines[round % 2 ? engines.size() - 1 - k : k](round);
    const double cpp = over_rounds(cpp_r), torch = over_rounds(torch_r), ort = over_rounds(ort_r);
    if (!ind.mismatch) ind.us = over_rounds(ind_r);
    if (!ov.mismatch) ov.us = over_rounds(ov_r);
    auto gflops = [&](double us) { return flops > 0 && us > 0 ? fmt::format("{:.1f}", flops / us / 1e3) : std::string("-"); };
    auto us = [](double v) { return v < 0 ? std::string("n/a") : fmt::format("{:.1f}", v); };
    auto ratio = [&](double v) { return v < 0 ? std::string("n/a") : fmt::format("{:.2f}", v / cpp); };
    auto peer_us = [&](const PeerTiming& p) { return p.mismatch ? std::string("mismatch") : us(p.us); };
    auto ms = [](double v) { return v < 0 ? std::string("n/a") : fmt::format("{:.0f} ms", v); };
    auto mb = [](double v) { return v < 0 ? std::string("n/a") : fmt::format("{:.1f}", v); };
    fmt::print(
        "{:<20} {:>9.1f} {:>9.1f} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7} {:>6} {:>10} {:>8} {:>10} {:>8} {:>8} {:>7} | {:>8} {:>8} {:>8} "
        "{:>9} {:>12} {:>8} | {:>7} {:>7}\n",
        label, cpp, cpp / batch, us(interp), us(torch), us(ort), peer_us(ind), peer_us(ov), ratio(torch), ratio(ort), ratio(ind.us), ratio(ov.us),
        interp < 0 ? std::string("n/a") : fmt::format("{:.1f}", interp / cpp), gflops(cpp), gflops(torch), gflops(ort), gflops(ind.us), gflops(ov.us),
        ms(cold_ms), fmt::format("{:.1f} ms", warm_ms), ms(bare_ms), ms(ind.compile_ms),
        ind.compile_ms < 0 ? std::string("n/a") : fmt::format("{:.1f}", ind.compile_ms / cold_ms), ms(ov.compile_ms), mb(cpp_mb), mb(ort_t.peak_mb));
  }
  fmt::print("{}\n", openblas_core());
  fmt::print(
      "(torch/cpp, ort/cpp, ind/cpp, ov/cpp > 1: the cpp backend is faster than PyTorch eager, ONNX Runtime, Inductor, OpenVINO;\n"
      " GF/s (cpp, torch, ort, ind, ov) counts each model's direct multiply-adds: engines that do fewer, as Winograd convolutions do,\n"
      " show an effective rate; cpp cold/warm = compile with a fresh cache / a cache hit (no compiler run); cpp bare = cold without the\n"
      " build's kernels library (REPRO_KERNELS_LIBRARY=off: the kernels units compiled too); ind cold = Inductor's first\n"
      " call with an empty cache (trace, codegen, C++ build, one run), ind/cpp its ratio to cpp cold; ov comp = OpenVINO's read_model +\n"
      " compile_model; \"mismatch\": that engine's outputs disagree with cpp's, so its time is not reported;\n"
      " cpp/smpl = cpp us / batch; cpp MB, ort MB = what one run adds to the resident set of the process that runs it)\n");
  if (keep) fmt::print("(kept {})\n", tmp.string());
  else fs::remove_all(tmp);
  return 0;
}
