// The cpp toolchain (see cpp_toolchain.h).
#include "cpp_toolchain.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <set>

#include "reprokit/codegen/compiled_graph.h"
#include "reprokit/support/errors.h"
#include "reprokit/support/parallel_for.h"
#include "reprokit/process/subprocess.h"
#include "reprokit/support/files.h"
#include "compile_cache.h"
#include "reprokit/support/hash.h"

namespace reprokit {

namespace fs = std::filesystem;

namespace {

std::atomic<int> g_invocations{0};
std::string g_last_warnings;  // what the compiler printed on the last successful compile

// -fwrapv: integer arithmetic wraps, as PyTorch's does (and as the reference interpreter's).
// -march=native: the cache key includes this machine's CPU (cpu_identity), so a cache shared
// between machines never hands one a library built for another's instruction set.
// -fno-trapping-math: no float operation raises a trap a program could see (none does: the flags
// are never read), so a loop whose selects feed arithmetic (rk_expf's range checks; sigmoid,
// SiLU, tanh, gelu) may be vectorised where the CPU has no mask registers. Without it, on AVX2,
// GCC kept those loops scalar: a SiLU over 1.2M floats took 6 ms. Values are unchanged: no
// rounding, contraction or reassociation depends on it.
// Warnings stay on: generated code is expected to compile cleanly (a test checks).
const std::vector<std::string> kFlags = {"-O3", "-march=native", "-fno-trapping-math", "-fopenmp", "-shared", "-fPIC", "-fwrapv", "-Wall", "-Wextra"};
const std::vector<std::string> kUnitFlags = {"-O3", "-march=native", "-fno-trapping-math", "-fopenmp", "-c", "-fPIC", "-fwrapv", "-Wall", "-Wextra"};
// The prelude's kernels units (the conv, GEMM, depthwise, grouped and pooling kernels): the units'
// flags without -fwrapv, as their float code and index arithmetic never overflow, and under it
// GCC could no longer assume their int loop counters do not wrap (the depthwise kernels ran
// 1.2-1.7x as long); with functions and loops on 64-byte boundaries, so that a kernel's hot loops
// keep their place in the cache lines whatever else its unit holds. No gain from the alignment was
// measured: it came in while looking for a slowdown whose cause was elsewhere.
const std::vector<std::string> kLibraryUnitFlags = [] {
  std::vector<std::string> flags;
  for (const std::string& f : kUnitFlags)
    if (f != "-fwrapv") flags.push_back(f);
  flags.insert(flags.end(), {"-falign-functions=64", "-falign-loops=64"});
  return flags;
}();
// Units whose kernels are all pointwise loops (long fused chains of elementwise ops): without
// partial redundancy elimination (GCC's tree PRE and RTL GCSE), which finds nothing to share in
// straight-line loops and took half of their compile (a unit of 1,172 fused ops of a 10,000-node
// chain 2.7 -> 1.15 s). Units with windows keep it: the generated direct depthwise conv ran
// 10-15% longer without it.
const std::vector<std::string> kPointwiseUnitFlags = [] {
  std::vector<std::string> flags = kUnitFlags;
  flags.insert(flags.end(), {"-fno-tree-pre", "-fno-gcse"});
  return flags;
}();
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
    } catch (const std::exception&) {}
    return model + "|" + flags;
  }();
  return id;
}

// Part of every cache key: bumped when how sources become libraries changes without the sources
// changing (a remembered rejection from a toolchain bug must not outlive the fix).
constexpr const char* kToolchainRevision = "units-3";

std::string flags_text() {
  std::string s = kToolchainRevision;
  for (auto& f : kFlags) s += " " + f;
  for (auto& f : kUnitFlags) s += " " + f;
  for (auto& f : kLibraryUnitFlags) s += " " + f;
  for (auto& f : kPointwiseUnitFlags) s += " " + f;
  for (auto& f : kLibs) s += " " + f;
  s += " " + cpu_identity();
  return s;
}

// What the compiler says it is (`--version`), once per process: part of every cache key, so an
// upgraded compiler at the same path never reuses objects another version built.
const std::string& compiler_identity(const std::string& compiler) {
  static const std::string id = [&] {
    try {
      ProcessSpec ps;
      ps.argv = {compiler, "--version"};
      ps.timeout_s = 30;
      ProcessResult r = run_process(ps);
      return r.out + r.err;
    } catch (const std::exception& e) { return std::string("unknown: ") + e.what(); }
  }();
  return id;
}

// What every cache key hashes after the text: the compiler, what it says it is, the flags and the CPU.
std::string key_salt(const std::string& compiler) { return "\n" + compiler + compiler_identity(compiler) + flags_text(); }

// The cache key of `text`: the hash of it and the salt, as every entry's name holds it.
std::string content_key(const std::string& text, const std::string& salt) { return fmt::format("{:016x}", fnv1a64(text + salt)); }

// A unit's file in a units/ directory (the cache's or the kernels library's): u_<key><ext>.
fs::path unit_file(const fs::path& units_dir, const std::string& ukey, const char* ext) { return units_dir / ("u_" + ukey + ext); }

// A new file for this process alone: never an existing file, nor a symlink planted at the name
// (Dir::write_new creates it with O_EXCL | O_NOFOLLOW). UserError when it cannot be made.
void write_new_private_file(const fs::path& path, const std::string& text) {
  if (!Dir::open(path.parent_path().string()).write_new(path.filename().string(), text))
    throw UserError(fmt::format("cannot create '{}': something already has that name", path.string()));
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

namespace {

// `tmp` becomes the cache entry `entry`, its digest recorded first: an entry never lies in the
// cache without one.
void publish_entry(const fs::path& tmp, const fs::path& entry) {
  record_digest(tmp, entry);
  std::error_code ec;
  fs::rename(tmp, entry, ec);
  if (ec) throw UserError(fmt::format("cannot move '{}' into the compile cache: {}", entry.string(), ec.message()));
}

// One compiler run over `src` (written to `dir` under a unique name first) producing `out`, or,
// with no kept_src, a link of extra_inputs alone; throws CompileFailure with the compiler's first
// error and log when it fails, and remembers a plain rejection in `remembered`, unless that is
// empty (a killed or crashed compiler may do better next time).
// A cache entry (`cached`) gets its digest recorded before it takes its name.
// The compiler's temporary files (g++'s cc*.s, cc*.o, cc*.res) go to the cache's tmp/, not the
// shared temporary directory: a compile killed with its process group (a minifier's time limit, a
// stopped test) leaves them behind, and there the cache removes them (compile_cache.h).
void run_compiler(const fs::path& cache_dir, const std::string& compiler, const std::vector<std::string>& flags, const std::string& src_text,
                  const fs::path& kept_src, const fs::path& out, const std::vector<std::string>& extra_inputs, const fs::path& remembered,
                  std::string& log_out, bool cached = true) {
  std::error_code ec;
  std::string tag = fmt::format("{}.{}", ::getpid(), g_invocations.fetch_add(1));
  const bool has_source = !kept_src.empty();
  fs::path src = has_source ? kept_src.parent_path() / (kept_src.stem().string() + "." + tag + ".cpp") : fs::path();
  fs::path tmp = out.parent_path() / (out.filename().string() + "." + tag + ".tmp");
  if (has_source) write_new_private_file(src, src_text);
  ProcessSpec ps;
  ps.env_set["TMPDIR"] = compiler_temporaries_dir(cache_dir).string();
  ps.argv = {compiler};
  ps.argv.insert(ps.argv.end(), flags.begin(), flags.end());
  ps.argv.insert(ps.argv.end(), {"-o", tmp.string()});
  if (has_source) ps.argv.push_back(src.string());
  ps.argv.insert(ps.argv.end(), extra_inputs.begin(), extra_inputs.end());
  ProcessResult pr;
  try {
    pr = run_process(ps);
  } catch (const std::runtime_error& e) {
    fs::remove(src, ec);
    throw UserError(fmt::format("cannot run the C++ compiler {}: {}", compiler, e.what()));
  }
  std::string log = pr.out + pr.err;
  if (has_source) fs::rename(src, kept_src, ec);
  if (pr.exit_code != 0) {
    fs::remove(tmp, ec);
    // First the diagnostic that says what is wrong, then the whole log.
    std::string first = log;
    if (auto e = log.find("error:"); e != std::string::npos) first = log.substr(e, log.find('\n', e) - e);
    std::string message =
        fmt::format("C++ compiler rejected the generated code: {}\n{} log:\n{}", first, (has_source ? (ec ? src : kept_src) : out).string(), log);
    if (pr.exit_code == 1 && pr.signal == 0 && !pr.timed_out && !remembered.empty()) {
      fs::path err_tmp = remembered.parent_path() / (remembered.filename().string() + "." + tag + ".tmp");
      try {
        write_new_private_file(err_tmp, message);
        fs::rename(err_tmp, remembered, ec);
      } catch (const UserError&) {
        // Not remembered: the next run compiles it again.
      }
    }
    throw CompileFailure(FailureKind::compile_error, message);
  }
  log_out = log;
  if (cached) publish_entry(tmp, out);
  else if (fs::rename(tmp, out, ec); ec) throw UserError(fmt::format("cannot move '{}' into the compile cache: {}", out.string(), ec.message()));
}

// Runs `jobs` side by side on up to as many threads as the machine has cores; rethrows the first
// failure in list order once all have ended.
void run_side_by_side(const std::vector<std::function<void()>>& jobs) {
  std::vector<std::exception_ptr> failed(jobs.size());
  parallel_for(static_cast<int64_t>(jobs.size()), true, [&](int64_t i) {
    try {
      jobs[static_cast<size_t>(i)]();
    } catch (...) {
      failed[static_cast<size_t>(i)] = std::current_exception();  // every job runs; the first failure in list order wins
    }
  });
  for (auto& f : failed)
    if (f) std::rethrow_exception(f);
}

// A new cache entry holding `text`.
void write_entry(const fs::path& entry, const std::string& text) {
  const fs::path tmp = entry.parent_path() / fmt::format("{}.{}.{}.tmp", entry.filename().string(), ::getpid(), g_invocations.fetch_add(1));
  write_new_private_file(tmp, text);
  publish_entry(tmp, entry);
}

// Every unit and the entry point begin with the prelude (cpp_prelude.h: about 120 KB of headers),
// and reading it was most of a unit's compile (0.26 of 0.33 s for a unit of one kernel). It is
// compiled once into a precompiled header kept in units/ (p_<key>.h and p_<key>.h.gch, about
// 25 MB; entries with digests, evicted like any other), and each translation unit is then the
// text after the prelude, compiled with `-include p_<key>.h`: 0.08 s for that unit. Where the
// .gch is missing or g++ finds it unusable, g++ reads the header's text instead: the same code.
// Building it takes about 0.7 s, which a build of fewer translation units after the prelude than
// this does not repay at once on two cores (about 0.23 s saved a unit); those use it once a larger
// build has made it (a model's first compile, before its minifier candidates), or from the
// kernels library, which has it built.
constexpr size_t kPrecompileFrom = 6;

// The prelude's header when it and its precompiled form are intact entries, in the cache or
// else in the kernels library's units (`library_units`, empty for none), or built now in the cache
// when `build`; "" when there is none: the units are then compiled whole, prelude included.
std::string prelude_header(const fs::path& units_dir, const fs::path& library_units, const std::string& prelude, const std::string& salt,
                           const std::string& compiler, bool build) {
  const std::string key = content_key(prelude, salt);
  const fs::path header = units_dir / ("p_" + key + ".h"), pch = units_dir / ("p_" + key + ".h.gch"), failed = units_dir / ("p_" + key + ".error");
  std::error_code ec;
  if (entry_intact(header) && entry_intact(pch)) return header.string();
  if (!library_units.empty()) {
    const fs::path built = library_units / header.filename();
    if (entry_intact(built) && entry_intact(library_units / pch.filename())) return built.string();
  }
  if (!build || fs::exists(failed, ec)) return "";  // a compiler that cannot precompile it is not asked again
  try {
    if (!entry_intact(header)) write_entry(header, prelude);
    std::vector<std::string> flags;
    for (auto& f : kUnitFlags)
      if (f != "-c") flags.push_back(f);
    flags.insert(flags.end(), {"-x", "c++-header"});
    std::string log;
    run_compiler(units_dir.parent_path(), compiler, flags, "", {}, pch, {header.string()}, failed, log);
    return header.string();
  } catch (const std::exception&) {
    return "";  // compiled whole, as before
  }
}

// Builds what the cache lacks (or holds damaged) and loads the library, all under the cache's shared lock.
CompiledLibrary build_and_load(const CppSource& source, const fs::path& dir, const std::string& key, const std::string& salt,
                               const std::string& compiler) {
  const fs::path units_dir = dir / "units";
  const fs::path library = kernels_library_dir();
  std::error_code ec;
  CacheInUse in_use(dir);  // nothing this build checks is evicted before it is linked or loaded
  fs::path so = dir / ("rk_" + key + ".so");
  CompiledLibrary lib;
  lib.path = so.string();
  lib.cache_hit = entry_intact(so);
  const fs::path rejected_whole = dir / ("rk_" + key + ".error");
  if (!lib.cache_hit && fs::is_regular_file(rejected_whole, ec))
    throw CompileFailure(FailureKind::compile_error, read_file(rejected_whole.string(), kMaxTextFileBytes));
  if (!lib.cache_hit) {
    // Each unit compiles to an object of its own, kept by the hash of its text; a unit the
    // compiler rejected before is rejected again at once (the minifier's probe, its final
    // verification and reruns of a compile-error bundle then cost no compile each).
    std::vector<fs::path> objects;
    bool from_library = false;                            // an object linked from the kernels library (see the link below)
    std::vector<std::pair<size_t, std::string>> missing;  // the units to compile: index, key
    std::set<std::string> seen;                           // a unit can occur twice in one graph (copies of like outputs)
    for (size_t i = 0; i < source.units.size(); ++i) {
      const std::string ukey = content_key(source.units[i], salt);
      if (!seen.insert(ukey).second) continue;
      const fs::path obj = unit_file(units_dir, ukey, ".o"), rejected = unit_file(units_dir, ukey, ".error");
      if (entry_intact(obj)) {
        objects.push_back(obj);
        continue;
      }
      if (i < source.library_units && !library.empty()) {
        const fs::path built = unit_file(library / "units", ukey, ".o");
        if (entry_intact(built)) {
          objects.push_back(built);
          from_library = true;
          continue;
        }
      }
      objects.push_back(obj);
      if (fs::is_regular_file(rejected, ec)) throw CompileFailure(FailureKind::compile_error, read_file(rejected.string(), kMaxTextFileBytes));
      missing.emplace_back(i, ukey);
    }
    // Each translation unit beginning with the prelude is compiled as the rest of its text with
    // the precompiled prelude (its key stays the hash of the whole text).
    const auto after_prelude = [&](const std::string& text) {
      return !source.prelude.empty() && text.compare(0, source.prelude.size(), source.prelude) == 0;
    };
    size_t would_use = after_prelude(source.entry) ? 1 : 0;
    for (auto& [i, ukey] : missing) would_use += after_prelude(source.units[i]) ? 1 : 0;
    // The precompiled prelude is the first job: it builds beside the kernels units, which do not
    // include it (cpp_codegen.cpp puts them first), and the units after the prelude wait for it
    // as they start. Built before every unit, it was 0.4 s of one core's work with the other idle.
    std::promise<std::string> header_built;
    const std::shared_future<std::string> header_ready = header_built.get_future().share();
    std::vector<std::function<void()>> compiles;
    compiles.push_back([&] {
      std::string header;
      try {
        header =
            prelude_header(units_dir, library.empty() ? fs::path() : library / "units", source.prelude, salt, compiler, would_use >= kPrecompileFrom);
      } catch (...) {
        // compiled whole; whatever was thrown, the units waiting for the header must be told
      }
      header_built.set_value(header);
    });
    const auto flags_of = [&](size_t i) -> const std::vector<std::string>& {
      if (i < source.library_units) return kLibraryUnitFlags;
      return i < source.pointwise_units.size() && source.pointwise_units[i] ? kPointwiseUnitFlags : kUnitFlags;
    };
    const auto compiled_as = [&](const std::string& text, std::vector<std::string> flags) {
      const std::string header = after_prelude(text) ? header_ready.get() : std::string();
      if (header.empty()) return std::make_pair(text, flags);
      flags.insert(flags.end(), {"-include", header});
      return std::make_pair(fmt::format("// (after the prelude: compiled with -include {})\n{}", header, text.substr(source.prelude.size())), flags);
    };
    std::vector<std::string> logs(source.units.size());
    for (auto& [i, ukey] : missing)
      compiles.push_back([&, i = i, ukey = ukey] {
        auto [text, flags] = compiled_as(source.units[i], flags_of(i));
        run_compiler(dir, compiler, flags, text, unit_file(units_dir, ukey, ".cpp"), unit_file(units_dir, ukey, ".o"), {},
                     unit_file(units_dir, ukey, ".error"), logs[i]);
      });
    // The entry point compiles beside the units (last: the list is longest first), then all
    // are linked into the library. Compiled after them, as it was, it added its 0.15-0.2 s to
    // every cold compile, and to every minifier query whose units were all cache hits.
    // Its object is this compile's own: another process or thread compiling the same graph at
    // the same time must not link, or remove, it (a shared name failed the other's link).
    static std::atomic<int> entry_objects{0};
    const fs::path entry_object = dir / fmt::format("rk_{}.{}.{}.o", key, ::getpid(), entry_objects.fetch_add(1));
    std::string entry_log, link_log;
    compiles.push_back([&] {
      auto [text, flags] = compiled_as(source.entry, kUnitFlags);
      run_compiler(dir, compiler, flags, text, dir / ("rk_" + key + ".cpp"), entry_object, {}, rejected_whole, entry_log, false);
    });
    simulate_slow_compiler();
    try {
      run_side_by_side(compiles);
    } catch (...) {
      fs::remove(entry_object, ec);  // a unit was rejected: the entry's object is of no use
      throw;
    }
    std::vector<std::string> inputs = {entry_object.string()};
    for (auto& o : objects) inputs.push_back(o.string());
    inputs.insert(inputs.end(), kLibs.begin(), kLibs.end());
    // A link of the kernels library's objects is not remembered as the graph's rejection when it
    // fails: the library is outside the cache (a rebuild of reprokit may replace it between this
    // build's check and its link), and the next build, which checks again, may do better.
    run_compiler(dir, compiler, kFlags, "", {}, so, inputs, from_library ? fs::path() : rejected_whole, link_log);
    fs::remove(entry_object, ec);  // only the link needed it
    std::string all;
    for (auto& l : logs) all += l;
    g_last_warnings = all + entry_log + link_log;
  }
  lib.handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib.handle) throw CompileFailure(FailureKind::compile_error, fmt::format("cannot load '{}': {}", so.string(), dlerror()));
  lib.entry = dlsym(lib.handle, "rk_graph_run");
  auto workspace = reinterpret_cast<int64_t (*)()>(dlsym(lib.handle, "rk_graph_workspace_bytes"));
  if (!lib.entry || !workspace)
    throw CompileFailure(FailureKind::compile_error, fmt::format("'{}' has no rk_graph_run or rk_graph_workspace_bytes", so.string()));
  lib.workspace_bytes = workspace();
  // The kept region (a library from the cache may come from before there was one: it keeps nothing).
  auto kept = reinterpret_cast<int64_t (*)()>(dlsym(lib.handle, "rk_graph_kept_bytes"));
  lib.kept_bytes = kept ? kept() : 0;
  // The kernel timer (a library from the cache may come from before there was one).
  lib.profile = dlsym(lib.handle, "rk_graph_profile");
  auto kernels = reinterpret_cast<int64_t (*)()>(dlsym(lib.handle, "rk_graph_kernel_count"));
  lib.kernels = kernels ? kernels() : 0;
  if (!kernels) lib.profile = nullptr;
  // Runs side by side (a library from the cache may come from before they could be).
  lib.threads = reinterpret_cast<int (*)()>(dlsym(lib.handle, "rk_graph_threads"));
  lib.one_thread = reinterpret_cast<void (*)()>(dlsym(lib.handle, "rk_graph_one_thread"));
  return lib;
}

}  // namespace

CompiledLibrary build_shared_object(const CppSource& source, const std::string& cache_dir) {
  const std::string compiler = REPROKIT_CXX_COMPILER;
  const std::string salt = key_salt(compiler);
  std::string whole = source.entry;
  for (auto& u : source.units) whole += u;
  const std::string key = content_key(whole, salt);
  const fs::path dir(cache_dir);
  open_cache_dir(cache_dir);
  const uint64_t size_limit = cache_size_limit();
  CompiledLibrary lib = build_and_load(source, dir, key, salt, compiler);
  if (!lib.cache_hit) evict_least_recently_used(dir, size_limit);  // the cache only grows when something was built
  return lib;
}

int build_kernels_library(const std::string& dir) {
  const std::string compiler = REPROKIT_CXX_COMPILER;
  const std::string salt = key_salt(compiler);
  open_cache_dir(dir);
  const fs::path units = fs::path(dir) / "units";
  std::set<std::string> names;  // what the library holds once built
  std::vector<std::function<void()>> compiles;
  std::vector<std::string> logs(cpp_kernels_units().size());
  for (size_t i = 0; i < cpp_kernels_units().size(); ++i) {
    const std::string& text = cpp_kernels_units()[i].text;
    const std::string ukey = content_key(text, salt);
    const fs::path obj = unit_file(units, ukey, ".o");
    for (const char* ext : {".o", ".o.digest", ".cpp"}) names.insert(unit_file(units, ukey, ext).filename().string());
    if (entry_intact(obj)) continue;
    compiles.push_back([&, i, ukey, obj] {
      run_compiler(dir, compiler, kLibraryUnitFlags, cpp_kernels_units()[i].text, unit_file(units, ukey, ".cpp"), obj, {},
                   unit_file(units, ukey, ".error"), logs[i]);
    });
  }
  const int units_compiled = static_cast<int>(compiles.size());
  // The precompiled prelude, which every generated unit of every graph can use.
  compiles.insert(compiles.begin(), [&] {
    const std::string header = prelude_header(units, {}, cpp_prelude(), salt, compiler, true);
    if (header.empty()) return;  // a compiler that cannot precompile it: the units read the prelude
    const std::string name = fs::path(header).filename().string();
    for (const char* ext : {"", ".digest", ".gch", ".gch.digest"}) names.insert(name + ext);
  });
  run_side_by_side(compiles);
  // What an older build left (other texts, flags or compiler): no key reaches it any more.
  std::error_code ec;
  std::vector<fs::path> stale;  // listed first: a directory is not changed while it is read
  for (const auto& e : fs::directory_iterator(units, ec))
    if (!names.count(e.path().filename().string())) stale.push_back(e.path());
  for (const fs::path& f : stale) fs::remove(f, ec);
  std::string all;
  for (auto& l : logs) all += l;
  g_last_warnings = all;
  return units_compiled;
}

}  // namespace reprokit
