// The cpp toolchain (see cpp_toolchain.h).
#include "cpp_toolchain.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "reprokit/codegen/compiler.h"
#include "reprokit/ir/errors.h"
#include "reprokit/process/subprocess.h"
#include "reprokit/support/files.h"

namespace reprokit {

namespace fs = std::filesystem;

namespace {

std::atomic<int> g_invocations{0};
std::string g_last_warnings;  // what the compiler printed on the last successful compile

// -fwrapv: integer arithmetic wraps, as PyTorch's does (and as the reference interpreter's).
// -march=native: the cache key includes this machine's CPU (cpu_identity), so a cache shared
// between machines never hands one a library built for another's instruction set.
// Warnings stay on: generated code is expected to compile cleanly (a test checks).
const std::vector<std::string> kFlags = {"-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-fwrapv", "-Wall", "-Wextra"};
const std::vector<std::string> kLibs = {"-lopenblas"};

// The CPU's model and feature flags (from /proc/cpuinfo): part of the cache key.
const std::string& cpu_identity() {
  static const std::string id = [] {
    std::string model, flags;
    try {
      std::string info = read_file("/proc/cpuinfo", 1 << 24);
      auto field = [&](const char* key) {
        auto p = info.find(key);
        return p == std::string::npos ? std::string() : info.substr(p, info.find('\n', p) - p);
      };
      model = field("model name");
      flags = field("flags");
    } catch (const std::exception&) {
    }
    return model + "|" + flags;
  }();
  return id;
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h;
}

std::string flags_text() {
  std::string s;
  for (auto& f : kFlags) s += " " + f;
  for (auto& f : kLibs) s += " " + f;
  s += " " + cpu_identity();
  return s;
}

// REPRO_TEST_COMPILE_DELAY=SECONDS: every compiler invocation takes that much longer. A testing
// knob: a loaded machine's slow compiles on demand, so the minifier's time limits are tested
// against them (a cache hit costs nothing, as on a real machine).
void simulate_slow_compiler() {
  const char* e = std::getenv("REPRO_TEST_COMPILE_DELAY");
  if (!e || !*e) return;
  char* end = nullptr;
  double s = std::strtod(e, &end);
  if (end == e || !(s > 0) || s > 3600) return;
  usleep(static_cast<useconds_t>(s * 1e6));
}

}  // namespace

int compiler_invocations() { return g_invocations.load(); }
std::string last_compiler_output() { return g_last_warnings; }

std::string default_cache_dir(const std::string& configured) {
  if (!configured.empty()) return configured;
  if (const char* e = std::getenv("REPRO_CACHE_DIR"); e && *e) return e;
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/reprokit";
  return (fs::temp_directory_path() / "reprokit-cache").string();
}

// libgomp's idle threads spin after every parallel loop (OMP_WAIT_POLICY=active by default) and take
// the cores OpenBLAS's own threads need for the GEMM that follows: on 2 cores the MLP benchmark ran
// at half speed (54 ms against 25 ms). Passive waiting costs a futex wake per parallel loop, and
// loops only go parallel from about a millisecond of work. libgomp reads the variable when the
// first generated library loads it, so it is set before that, unless the user chose a policy.
static void prefer_passive_openmp_threads() {
  static std::once_flag once;
  std::call_once(once, [] { setenv("OMP_WAIT_POLICY", "passive", 0); });
}

CompiledLibrary build_shared_object(const std::string& source, const std::string& cache_dir) {
  prefer_passive_openmp_threads();
  std::string compiler = REPROKIT_CXX_COMPILER;
  std::string key = fmt::format("{:016x}", fnv1a(source + "\n" + compiler + flags_text()));
  fs::path dir(cache_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw UserError(fmt::format("cannot create the compile cache directory '{}': {}", dir.string(), ec.message()));
  fs::path so = dir / ("rk_" + key + ".so"), failed = dir / ("rk_" + key + ".error");
  CompiledLibrary lib;
  lib.path = so.string();
  lib.cache_hit = fs::exists(so);
  // A source the compiler rejected before is rejected again: the minifier's probe, its final
  // verification and reruns of a compile-error bundle then cost no compile each.
  if (!lib.cache_hit && fs::is_regular_file(failed, ec)) throw CompileFailure(FailureKind::compile_error, read_file(failed.string(), kMaxTextFileBytes));
  if (!lib.cache_hit) {
    // Unique temporary names, renamed into place: concurrent compiles of one graph are safe.
    std::string tag = fmt::format("{}.{}", ::getpid(), g_invocations.load());
    fs::path src = dir / ("rk_" + key + "." + tag + ".cpp"), tmp = dir / ("rk_" + key + "." + tag + ".so.tmp");
    {
      std::ofstream out(src);
      out << source;
      if (!out) throw UserError(fmt::format("cannot write generated source to '{}'", src.string()));
    }
    ++g_invocations;
    simulate_slow_compiler();
    ProcessSpec ps;
    ps.argv = {compiler};
    ps.argv.insert(ps.argv.end(), kFlags.begin(), kFlags.end());
    ps.argv.insert(ps.argv.end(), {"-o", tmp.string(), src.string()});
    ps.argv.insert(ps.argv.end(), kLibs.begin(), kLibs.end());
    ProcessResult pr;
    try {
      pr = run_process(ps);
    } catch (const std::runtime_error& e) {
      throw UserError(fmt::format("cannot run the C++ compiler {}: {}", compiler, e.what()));
    }
    std::string log = pr.out + pr.err;
    if (pr.exit_code != 0) {
      fs::remove(tmp, ec);
      // First the diagnostic that says what is wrong, then the whole log.
      std::string first = log;
      if (auto e = log.find("error:"); e != std::string::npos) {
        first = log.substr(e, log.find('\n', e) - e);
      }
      fs::path kept = dir / ("rk_" + key + ".cpp");
      fs::rename(src, kept, ec);
      std::string message = fmt::format("C++ compiler rejected the generated code: {}\n{} log:\n{}", first, (ec ? src : kept).string(), log);
      // Only a plain rejection (status 1, diagnostics) is remembered; a killed or crashed
      // compiler may do better next time.
      if (pr.exit_code == 1 && pr.signal == 0 && !pr.timed_out) {
        fs::path err_tmp = dir / ("rk_" + key + "." + tag + ".error.tmp");
        std::ofstream(err_tmp) << message;
        fs::rename(err_tmp, failed, ec);
      }
      throw CompileFailure(FailureKind::compile_error, message);
    }
    g_last_warnings = log;
    fs::rename(tmp, so, ec);
    if (ec) throw UserError(fmt::format("cannot move the compiled library into the cache: {}", ec.message()));
    fs::rename(src, dir / ("rk_" + key + ".cpp"), ec);
  }
  lib.handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib.handle) throw CompileFailure(FailureKind::compile_error, fmt::format("cannot load '{}': {}", so.string(), dlerror()));
  lib.entry = dlsym(lib.handle, "rk_graph_run");
  if (!lib.entry) throw CompileFailure(FailureKind::compile_error, fmt::format("'{}' has no rk_graph_run", so.string()));
  return lib;
}

}  // namespace reprokit
