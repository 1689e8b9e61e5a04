// The compile cache's entries: an object or library that is not what was built (damaged,
// replaced) is built again rather than linked or loaded, and the cache keeps under its size
// limit by removing the least recently used files, never while another process uses it; the
// compiler's temporary files stay inside it.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "../../src/codegen/compile_cache.h"
#include "../../src/codegen/cpp_toolchain.h"
#include "../harness/cli_util.h"
#include "../scratch_dir.h"
#include "backend_test_util.h"
#include "reprokit/codegen/compiler.h"
#include "reprokit/support/errors.h"

using namespace reprokit;
using namespace reprokit::testing;
namespace fs = std::filesystem;

namespace {

const char* kExp = "graph cache_entry(%x: f32[4]) {\n  %y = exp(%x)\n  return (%y)\n}";
const char* kNeg = "graph cache_entry(%x: f32[4]) {\n  %y = neg(%x)\n  return (%y)\n}";

fs::path fresh_cache(const std::string& name) {
  fs::path d = scratch_root("rk_cache_entries_test_") / name;
  fs::remove_all(d);
  return d;
}

// The graph compiled through `cache` and run on [0, 1, 2, 3]; the library is closed again after.
std::vector<double> run_through(const char* graph, const fs::path& cache) {
  auto opts = cpp_options();
  opts.cache_dir = cache.string();
  auto compiled = compile_graph(parse_graph(graph), opts);
  return compiled->run({Tensor::from_doubles(DType::f32, {4}, {0, 1, 2, 3})})[0].to_doubles();
}

std::vector<fs::path> files_like(const fs::path& dir, const std::string& prefix, const std::string& suffix) {
  std::vector<fs::path> out;
  for (auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.rfind(prefix, 0) == 0 && n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(e.path());
  }
  return out;
}

uint64_t bytes_in(const fs::path& dir) {
  uint64_t n = 0;
  for (auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) n += e.file_size();
  return n;
}

void expect_exp(const std::vector<double>& got) {
  ASSERT_EQ(got.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(got[static_cast<size_t>(i)], std::exp(i), 1e-4 * std::exp(i)) << i;
}

// REPRO_CACHE_MAX for one scope.
struct CacheMax {
  explicit CacheMax(const char* v) { ::setenv("REPRO_CACHE_MAX", v, 1); }
  ~CacheMax() { ::unsetenv("REPRO_CACHE_MAX"); }
};

}  // namespace

// `reprokit run --backend cpp` of a graph through `cache`, in a process of its own (a library
// loaded once stays loaded in a process): what it prints of the outputs, or its error.
std::string run_cli(const char* graph, const fs::path& cache) {
  const fs::path dir = cache.parent_path();
  const fs::path file = dir / (cache.filename().string() + ".rk");
  std::ofstream(file) << graph;
  auto r = reprokit_cli({"run", file.string(), "--backend", "cpp"}, dir, {{"REPRO_CACHE_DIR", cache.string()}});
  return r.exit_code == 0 ? r.out : "exit " + std::to_string(r.exit_code) + ": " + r.err;
}

// Another graph's library put in place of this one's ran and gave its outputs without a word.
TEST(CompileCacheEntries, ALibraryReplacedInTheCacheIsBuiltAgainNotLoaded) {
  const fs::path a = fresh_cache("replaced-a"), b = fresh_cache("replaced-b");
  const std::string expected = run_cli(kExp, a);
  ASSERT_NE(expected.find("%y"), std::string::npos) << expected;
  ASSERT_NE(run_cli(kNeg, b), expected);
  auto a_lib = files_like(a, "rk_", ".so"), b_lib = files_like(b, "rk_", ".so");
  ASSERT_EQ(a_lib.size(), 1u);
  ASSERT_EQ(b_lib.size(), 1u);
  fs::rename(b_lib[0], a_lib[0]);
  EXPECT_EQ(run_cli(kExp, a), expected) << "the replaced library was loaded";
}

// A unit object cut short (a full disk, a crash) failed every later link of a graph holding it.
TEST(CompileCacheEntries, ADamagedUnitObjectIsCompiledAgain) {
  const fs::path cache = fresh_cache("damaged-unit");
  const std::string expected = run_cli(kExp, cache);
  ASSERT_NE(expected.find("%y"), std::string::npos) << expected;
  for (auto& so : files_like(cache, "rk_", ".so")) fs::remove(so);  // the library is linked again from its units
  auto objects = files_like(cache / "units", "u_", ".o");
  ASSERT_FALSE(objects.empty());
  for (auto& o : objects) fs::resize_file(o, 16);
  EXPECT_EQ(run_cli(kExp, cache), expected);
  for (auto& o : files_like(cache / "units", "u_", ".o")) EXPECT_GT(fs::file_size(o), 16u) << o;
}

TEST(CompileCacheEntries, AnEntryWithoutItsDigestIsNoEntry) {
  const fs::path cache = fresh_cache("no-digest");
  run_through(kExp, cache);
  auto libs = files_like(cache, "rk_", ".so");
  ASSERT_EQ(libs.size(), 1u);
  EXPECT_TRUE(entry_intact(libs[0]));
  fs::remove(libs[0].string() + ".digest");
  EXPECT_FALSE(entry_intact(libs[0]));
  const int before = compiler_invocations();
  expect_exp(run_through(kExp, cache));
  EXPECT_GT(compiler_invocations(), before);
  EXPECT_TRUE(entry_intact(libs[0]));
}

TEST(CompileCacheEntries, TheLimitIsReadFromTheEnvironment) {
  {
    CacheMax m("500M");
    EXPECT_EQ(cache_size_limit(), uint64_t{500} << 20);
  }
  {
    CacheMax m("3g");
    EXPECT_EQ(cache_size_limit(), uint64_t{3} << 30);
  }
  {
    CacheMax m("unlimited");
    EXPECT_EQ(cache_size_limit(), 0u);
  }
  EXPECT_EQ(cache_size_limit(), uint64_t{2} << 30);  // the default
  for (const char* bad : {"-5", "1.5G", "0", "G", "99999999999999999999", "20000000000G", "lots"}) {
    CacheMax m(bad);
    EXPECT_THROW(cache_size_limit(), UserError) << bad;
  }
}

// Files by age: the oldest go first, down to 90% of the limit; the lock file stays.
TEST(CompileCacheEntries, EvictionRemovesTheLeastRecentlyUsedFirst) {
  const fs::path cache = fresh_cache("evict");
  fs::create_directories(cache / "units");
  auto plant = [&](const fs::path& p, size_t bytes, time_t age_s) {
    std::ofstream(p) << std::string(bytes, 'x');
    timespec t[2] = {{::time(nullptr) - age_s, 0}, {::time(nullptr) - age_s, 0}};
    ::utimensat(AT_FDCWD, p.c_str(), t, 0);
  };
  plant(cache / "rk_old.so", 400, 300);
  plant(cache / "units" / "u_old.o", 300, 200);
  plant(cache / "units" / "u_mid.o", 200, 100);
  plant(cache / "rk_new.so", 100, 0);
  EXPECT_EQ(evict_least_recently_used(cache, 2000), 0u) << "under the limit: nothing goes";
  EXPECT_EQ(evict_least_recently_used(cache, 0), 0u) << "no limit: nothing goes";
  {
    CacheInUse other(cache);  // another process compiling: eviction waits for a later build
    EXPECT_EQ(evict_least_recently_used(cache, 500), 0u);
    EXPECT_TRUE(fs::exists(cache / "rk_old.so"));
  }
  EXPECT_EQ(evict_least_recently_used(cache, 500), 700u);  // 1000 bytes down to at most 450
  EXPECT_FALSE(fs::exists(cache / "rk_old.so"));
  EXPECT_FALSE(fs::exists(cache / "units" / "u_old.o"));
  EXPECT_TRUE(fs::exists(cache / "units" / "u_mid.o"));
  EXPECT_TRUE(fs::exists(cache / "rk_new.so"));
  EXPECT_TRUE(fs::exists(cache / "lock"));
}

// Under a tiny limit every compile still works, and the cache stays small.
TEST(CompileCacheEntries, ACompileUnderATinyLimitWorksAndLeavesTheCacheSmall) {
  const fs::path cache = fresh_cache("tiny");
  CacheMax m("1K");  // the child inherits it
  const std::string first = run_cli(kExp, cache);
  ASSERT_NE(first.find("%y"), std::string::npos) << first;
  EXPECT_EQ(run_cli(kExp, cache), first);
  EXPECT_LE(bytes_in(cache), 1024u);
}

namespace {

// Many outputs, each its own kernel, so many units: enough translation units for a build to
// precompile the prelude. `salt` makes the kernels (and so the units) differ between calls.
// With `matmul`, a product on the panel GEMM too, whose kernels unit does not include the prelude.
std::string many_units(int salt, bool matmul = false) {
  const char* ops[] = {"erf", "neg", "sin", "cos", "tanh", "sigmoid", "abs", "relu"};
  std::string body, outs;
  for (int i = 0; i < 160; ++i) {
    body += fmt::format("  %s{0} = add(%x, {0}.5)\n  %y{0} = {1}(%s{0})\n", i, ops[(i + salt) % 8]);
    outs += fmt::format("{}%y{}", i ? ", " : "", i);
  }
  if (matmul) body += "  %m = matmul(%a, %b)\n", outs += ", %m";
  return fmt::format("graph cache_units(%x: f32[4]{}) {{\n", matmul ? ", %a: f32[128, 192], %b: f32[192, 160]" : "") + body + "  return (" + outs +
         ")\n}";
}

// The kept sources of the units compiled after the prelude (beginning with the note that says
// so), and of all units.
std::pair<size_t, size_t> units_after_prelude(const fs::path& cache) {
  size_t after = 0, all = 0;
  for (auto& src : files_like(cache / "units", "u_", ".cpp")) {
    ++all;
    std::string first;
    std::getline(std::ifstream(src) >> std::ws, first);
    if (first.rfind("// (after the prelude: compiled with -include ", 0) == 0) ++after;
  }
  return {after, all};
}

// The cache's own precompiled prelude is what these tests are about: without the kernels library,
// which has one built (tests/codegen/kernels_library_test.cpp).
struct NoKernelsLibrary {
  NoKernelsLibrary() { ::setenv("REPRO_KERNELS_LIBRARY", "off", 1); }
  ~NoKernelsLibrary() { ::unsetenv("REPRO_KERNELS_LIBRARY"); }
};

double many_units_error(const fs::path& cache, int salt = 0, bool matmul = false) {
  auto opts = cpp_options();
  opts.cache_dir = cache.string();
  return max_error_vs_f64(parse_graph(many_units(salt, matmul)), opts);
}

}  // namespace

// The prelude (most of what g++ read for a unit) is compiled once per cache into a precompiled
// header, and units compiled after it begin where the prelude ends; their results are the same.
TEST(CompileCacheEntries, ThePreludeIsPrecompiledOnceAndLaterUnitsStartAfterIt) {
  NoKernelsLibrary off;
  const fs::path cache = fresh_cache("prelude");
  EXPECT_LT(many_units_error(cache), 1e-5);
  auto headers = files_like(cache / "units", "p_", ".h"), compiled = files_like(cache / "units", "p_", ".h.gch");
  ASSERT_EQ(headers.size(), 1u);
  ASSERT_EQ(compiled.size(), 1u);
  EXPECT_TRUE(entry_intact(headers[0]));
  EXPECT_TRUE(entry_intact(compiled[0]));
  auto [after, all] = units_after_prelude(cache);
  EXPECT_EQ(after, all);
  EXPECT_GE(after, 5u);

  // A later build too small to precompile it uses it.
  expect_exp(run_through(kExp, cache));
  EXPECT_EQ(units_after_prelude(cache).first, after + 1);
  EXPECT_EQ(files_like(cache / "units", "p_", ".h.gch").size(), 1u);
}

// The kernels units compile whole while the prelude is precompiled beside them; every other unit
// of the same build starts after it.
TEST(CompileCacheEntries, KernelsUnitsCompileWhileThePreludeIsPrecompiled) {
  NoKernelsLibrary off;
  const fs::path cache = fresh_cache("prelude-kernels");
  EXPECT_LT(many_units_error(cache, 0, true), 1e-4);
  ASSERT_EQ(files_like(cache / "units", "p_", ".h.gch").size(), 1u);
  auto [after, all] = units_after_prelude(cache);
  EXPECT_GE(after, 5u);
  EXPECT_EQ(all, after + 1);
  size_t kernels = 0;
  for (auto& src : files_like(cache / "units", "u_", ".cpp")) {
    std::string first;
    std::getline(std::ifstream(src) >> std::ws, first);
    kernels += first == "#define RK_GEMM_KERNELS 1";
  }
  EXPECT_EQ(kernels, 1u);
}

// A build of one unit and the entry point does not pay for precompiling the prelude.
TEST(CompileCacheEntries, ASmallBuildInAFreshCacheDoesNotPrecompileThePrelude) {
  NoKernelsLibrary off;
  const fs::path cache = fresh_cache("prelude-small");
  expect_exp(run_through(kExp, cache));
  EXPECT_TRUE(files_like(cache / "units", "p_", ".gch").empty());
  auto [after, all] = units_after_prelude(cache);
  EXPECT_EQ(after, 0u);
  EXPECT_EQ(all, 1u);
}

// A damaged precompiled prelude is never given to the compiler: units compile whole until a build
// large enough makes it again.
TEST(CompileCacheEntries, ADamagedPrecompiledPreludeIsNotUsedAndIsBuiltAgain) {
  NoKernelsLibrary off;
  const fs::path cache = fresh_cache("prelude-damaged");
  EXPECT_LT(many_units_error(cache), 1e-5);
  auto compiled = files_like(cache / "units", "p_", ".h.gch");
  ASSERT_EQ(compiled.size(), 1u);
  fs::resize_file(compiled[0], 16);
  const size_t after = units_after_prelude(cache).first;
  expect_exp(run_through(kExp, cache));
  EXPECT_EQ(units_after_prelude(cache).first, after) << "compiled against a damaged precompiled prelude";

  EXPECT_LT(many_units_error(cache, 1), 1e-5);  // other kernels: a large build
  EXPECT_GT(fs::file_size(compiled[0]), 16u);
  EXPECT_TRUE(entry_intact(compiled[0]));
}

namespace {

std::vector<fs::path> regular_files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file()) out.push_back(it->path());
  return out;
}

}  // namespace

// g++ writes its assembly and objects to the temporary directory before they reach their names; a
// compile killed with its process group (a minifier's time limit, a stopped test) left them in
// the shared /tmp, where nothing ever removed them. They go to the cache's tmp/ instead.
TEST(CompileCacheEntries, TheCompilersTemporaryFilesGoToTheCacheNotTheSharedTemporaryDirectory) {
  const fs::path cache = fresh_cache("killed-compile"), shared_tmp = cache.parent_path() / "killed-compile-shared-tmp";
  fs::create_directories(shared_tmp);
  const fs::path model = cache.parent_path() / "killed-compile.rk";
  std::ofstream(model) << many_units(3);
  ProcessSpec s;
  s.argv = {REPROKIT_EXE, "run", model.string(), "--backend", "cpp"};
  s.env_set = {{"REPRO_CACHE_DIR", cache.string()}, {"TMPDIR", shared_tmp.string()}};
  LineChild run(s);
  std::vector<fs::path> seen;
  for (int i = 0; i < 60000 && seen.empty() && run.alive(); ++i) {
    seen = regular_files_in(compiler_temporaries_dir(cache));
    if (seen.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  run.kill();  // the whole group, compilers included, without a chance to clean up
  ASSERT_FALSE(seen.empty()) << "no compiler temporary file appeared in " << compiler_temporaries_dir(cache);
  EXPECT_EQ(seen[0].filename().string().rfind("cc", 0), 0u) << seen[0];
  for (auto& f : regular_files_in(shared_tmp)) EXPECT_NE(f.filename().string().rfind("cc", 0), 0u) << "left in the shared temporary directory: " << f;
}

// What a killed compile left in tmp/ is removed once nobody uses the cache, never under a build.
TEST(CompileCacheEntries, WhatAKilledCompileLeftIsRemovedWhenNobodyUsesTheCache) {
  const fs::path cache = fresh_cache("leftover-temporaries");
  expect_exp(run_through(kExp, cache));
  const fs::path leftover = compiler_temporaries_dir(cache) / "ccKILLED.s";
  std::ofstream(leftover) << "a killed compile's assembly";
  {
    CacheInUse other(cache);  // another process compiling: its temporaries may be in use
    EXPECT_EQ(evict_least_recently_used(cache, 0), 0u);
    EXPECT_TRUE(fs::exists(leftover));
  }
  EXPECT_EQ(run_through(kNeg, cache).size(), 4u);  // a build, then the cache tidied
  EXPECT_FALSE(fs::exists(leftover));
  EXPECT_TRUE(fs::is_directory(compiler_temporaries_dir(cache)));
}
