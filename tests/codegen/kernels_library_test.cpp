// The kernels library (cpp_toolchain.h): the build compiles every kernels unit once, a fresh
// compile cache links them from there, and a library that is damaged, stale or writable by others
// is compiled around or refused, never linked.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "../../src/codegen/compile_cache.h"
#include "../../src/codegen/cpp_toolchain.h"
#include "../scratch_dir.h"
#include "backend_test_util.h"
#include "reprokit/codegen/compiler.h"
#include "reprokit/support/errors.h"
#include "reprokit/support/files.h"
#include "reprokit/support/hash.h"

using namespace reprokit;
using namespace reprokit::testing;
namespace fs = std::filesystem;

namespace {

// A depthwise conv, a 1x1 conv on the conv GEMM, a max pool and a matmul: four kernels units.
const char* kGraph =
    "graph g(%x: f32[1, 16, 14, 14], %w: f32[16, 1, 3, 3], %v: f32[24, 16, 1, 1], %a: f32[128, 192], %b: f32[192, 160]) {\n"
    "  %y = conv2d(%x, %w, padding=[1, 1], groups=16)\n  %z = conv2d(%y, %v)\n"
    "  %p = max_pool2d(%z, kernel=[3, 3], stride=[2, 2], padding=[1, 1])\n  %c = matmul(%a, %b)\n  return (%p, %c)\n}";

// REPRO_KERNELS_LIBRARY for one scope.
struct LibraryAt {
  explicit LibraryAt(const std::string& v) { ::setenv("REPRO_KERNELS_LIBRARY", v.c_str(), 1); }
  ~LibraryAt() { ::unsetenv("REPRO_KERNELS_LIBRARY"); }
};

fs::path fresh(const std::string& name) {
  const fs::path d = scratch_root("rk_kernels_library_test_") / name;
  fs::remove_all(d);
  return d;
}

// The build's library, or "" where this build has none (REPROKIT_KERNELS_LIBRARY off).
fs::path builds_library() {
  ::unsetenv("REPRO_KERNELS_LIBRARY");
  return kernels_library_dir();
}

// How many units the cache compiled itself that are kernels units (their kept source begins
// with a kernel family's #define).
int kernels_units_compiled_in(const fs::path& cache) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(cache / "units"))
    if (e.path().extension() == ".cpp" && read_file(e.path().string(), 1 << 26).rfind("#define RK_", 0) == 0) ++n;
  return n;
}

// kGraph compiled through a fresh cache `cache` and checked against the float64 interpreter.
void compile_and_check(const fs::path& cache) {
  CompileOptions opts = cpp_options();
  opts.cache_dir = cache.string();
  const Graph g = parse_graph(kGraph);
  EXPECT_LE(max_error_vs_f64(g, opts), tolerance_for(g));
}

// A private copy of the build's library (mode 0700, as the build makes it).
fs::path copy_of(const fs::path& library, const std::string& name) {
  const fs::path d = fresh(name);
  fs::create_directories(d.parent_path());
  fs::copy(library, d, fs::copy_options::recursive);
  fs::permissions(d, fs::perms::owner_all, fs::perm_options::replace);
  fs::permissions(d / "units", fs::perms::owner_all, fs::perm_options::replace);
  return d;
}

std::vector<fs::path> objects_in(const fs::path& library) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(library / "units"))
    if (e.path().extension() == ".o") out.push_back(e.path());
  return out;
}

}  // namespace

// Every kernels unit the code generator can ask for is in the build's library, intact, and
// compiled without a warning (generated code is expected to compile cleanly; a graph's own
// compile no longer compiles these units, so the build's compile is where that is seen).
TEST(KernelsLibrary, TheBuildHoldsEveryKernelsUnitCompiledCleanly) {
  const fs::path library = builds_library();
  if (library.empty()) GTEST_SKIP() << "this build has no kernels library (REPROKIT_KERNELS_LIBRARY=OFF)";
  const auto objects = objects_in(library);
  EXPECT_EQ(objects.size(), cpp_kernels_units().size());
  for (const fs::path& o : objects) EXPECT_TRUE(entry_intact(o)) << o;
  ASSERT_TRUE(fs::exists(library / "compiler_output.txt"));
  EXPECT_EQ(read_file((library / "compiler_output.txt").string(), 1 << 26), "") << "warnings in the kernels units";
}

// A fresh cache compiles none of the kernels units the graph calls: it links the library's; and
// its units after the prelude start from the library's precompiled prelude, which the cache
// does not build (a graph this small would otherwise compile the prelude whole in each unit).
TEST(KernelsLibrary, AFreshCacheLinksTheLibrarysKernelsUnitsAndUsesItsPrecompiledPrelude) {
  const fs::path library = builds_library();
  if (library.empty()) GTEST_SKIP() << "this build has no kernels library (REPROKIT_KERNELS_LIBRARY=OFF)";
  const fs::path cache = fresh("linked");
  compile_and_check(cache);
  EXPECT_EQ(kernels_units_compiled_in(cache), 0);
  int after_prelude = 0;
  for (const auto& e : fs::directory_iterator(cache / "units")) {
    const std::string name = e.path().filename().string();
    EXPECT_NE(name.rfind("p_", 0), 0u) << "the cache built its own precompiled prelude: " << name;
    if (e.path().extension() == ".cpp" &&
        read_file(e.path().string(), 1 << 26).find("compiled with -include " + (library / "units" / "p_").string()) != std::string::npos)
      ++after_prelude;
  }
  EXPECT_GT(after_prelude, 0) << "no unit was compiled after the library's precompiled prelude";
}

// REPRO_KERNELS_LIBRARY=off: the cache compiles the kernels units, as without a library.
TEST(KernelsLibrary, OffCompilesTheKernelsUnitsInTheCache) {
  LibraryAt off("off");
  EXPECT_TRUE(kernels_library_dir().empty());
  const fs::path cache = fresh("off");
  compile_and_check(cache);
  EXPECT_EQ(kernels_units_compiled_in(cache), 4);
}

// An object cut short or replaced (its digest no longer matches) is not linked: the cache
// compiles that unit itself; a damaged precompiled prelude is not used either.
TEST(KernelsLibrary, ADamagedObjectIsCompiledInTheCacheInstead) {
  const fs::path library = builds_library();
  if (library.empty()) GTEST_SKIP() << "this build has no kernels library (REPROKIT_KERNELS_LIBRARY=OFF)";
  const fs::path copy = copy_of(library, "damaged");
  for (const fs::path& o : objects_in(copy)) fs::resize_file(o, 16);
  for (const auto& e : fs::directory_iterator(copy / "units"))
    if (e.path().extension() == ".gch") fs::resize_file(e.path(), 16);  // nor is a damaged precompiled prelude given to g++
  LibraryAt at(copy.string());
  const fs::path cache = fresh("damaged-cache");
  compile_and_check(cache);
  EXPECT_EQ(kernels_units_compiled_in(cache), 4);
  for (const auto& e : fs::directory_iterator(cache / "units")) {
    if (e.path().extension() != ".cpp") continue;
    EXPECT_EQ(read_file(e.path().string(), 1 << 26).find("-include " + copy.string()), std::string::npos) << e.path();
  }
}

// reprokit links code from the library, so one that others could have written is refused with
// the reason and the way out, as is a link or a directory that is not there.
TEST(KernelsLibrary, OneNamedThatOthersCanWriteIsRefused) {
  const fs::path library = builds_library();
  if (library.empty()) GTEST_SKIP() << "this build has no kernels library (REPROKIT_KERNELS_LIBRARY=OFF)";
  const fs::path copy = copy_of(library, "writable");
  const auto refused = [&](const fs::path& dir, const std::string& why) {
    LibraryAt at(dir.string());
    try {
      kernels_library_dir();
      ADD_FAILURE() << dir << " was used";
    } catch (const UserError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(why), std::string::npos) << m;
      EXPECT_NE(m.find("REPRO_KERNELS_LIBRARY=off"), std::string::npos) << m;
    }
  };
  fs::permissions(copy / "units", fs::perms::group_write, fs::perm_options::add);
  refused(copy, "writable by its group");
  fs::permissions(copy / "units", fs::perms::group_write, fs::perm_options::remove);
  fs::permissions(copy, fs::perms::others_write, fs::perm_options::add);
  refused(copy, "writable by everyone");
  fs::permissions(copy, fs::perms::others_write, fs::perm_options::remove);
  const fs::path link = copy.parent_path() / "link";
  fs::create_directory_symlink(copy, link);
  refused(link, "symbolic link");
  refused(copy.parent_path() / "missing", "No such file");
  // The same directory, private again, is used.
  LibraryAt at(copy.string());
  EXPECT_EQ(kernels_library_dir(), copy);
  // A compile through a refused library fails with the message rather than compiling around it.
  fs::permissions(copy, fs::perms::others_write, fs::perm_options::add);
  try {
    compile_and_check(fresh("refused-cache"));
    ADD_FAILURE() << "compiled through a library others can write";
  } catch (const UserError& e) { EXPECT_NE(std::string(e.what()).find("cannot use the kernels library"), std::string::npos) << e.what(); }
}

// Building it again compiles only what is missing or damaged and removes what no key reaches.
TEST(KernelsLibrary, ABuildKeepsWhatIsIntactAndRemovesWhatIsStale) {
  const fs::path library = builds_library();
  if (library.empty()) GTEST_SKIP() << "this build has no kernels library (REPROKIT_KERNELS_LIBRARY=OFF)";
  const fs::path copy = copy_of(library, "rebuilt");
  auto objects = objects_in(copy);
  ASSERT_FALSE(objects.empty());
  // The smallest object: one unit compiled again, not the longest.
  std::sort(objects.begin(), objects.end(), [](const fs::path& a, const fs::path& b) { return fs::file_size(a) < fs::file_size(b); });
  fs::resize_file(objects[0], 16);
  std::ofstream(copy / "units" / "u_0123456789abcdef.o") << "an older build's";
  EXPECT_EQ(build_kernels_library(copy.string()), 1);
  EXPECT_FALSE(fs::exists(copy / "units" / "u_0123456789abcdef.o"));
  const auto after = objects_in(copy);
  EXPECT_EQ(after.size(), cpp_kernels_units().size());
  for (const fs::path& o : after) EXPECT_TRUE(entry_intact(o)) << o;
}

// A link that fails on the library's objects (here objects replaced with their digests to match,
// as a rebuild of reprokit replacing the library between a build's check and its link would
// look) is not remembered as the graph's rejection: the next build, without them, succeeds.
TEST(KernelsLibrary, ALinkThatFailsOnItsObjectsIsNotRememberedAsTheGraphsRejection) {
  const fs::path library = builds_library();
  if (library.empty()) GTEST_SKIP() << "this build has no kernels library (REPRO_KERNELS_LIBRARY=OFF)";
  const fs::path copy = copy_of(library, "unlinkable");
  for (const fs::path& o : objects_in(copy)) {
    const std::string junk = "not an object";
    std::ofstream(o, std::ios::trunc) << junk;
    std::ofstream(o.string() + ".digest", std::ios::trunc) << fmt::format("fnv1a64 {:016x}\n", fnv1a64(junk));
    ASSERT_TRUE(entry_intact(o)) << o;
  }
  const fs::path cache = fresh("unlinkable-cache");
  {
    LibraryAt at(copy.string());
    EXPECT_ANY_THROW(compile_and_check(cache));
  }
  for (const auto& e : fs::directory_iterator(cache)) EXPECT_NE(e.path().extension(), ".error") << e.path();
  LibraryAt off("off");
  compile_and_check(cache);
}
