// The compile cache's directory holds code reprokit loads: one that someone else could write (a
// symlink, another user's, writable by group or others) is refused before anything in it is read.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "../scratch_dir.h"
#include "backend_test_util.h"
#include "reprokit/codegen/compiler.h"
#include "reprokit/support/errors.h"

using namespace reprokit;
using namespace reprokit::testing;
namespace fs = std::filesystem;

namespace {

const char* kGraph = "graph cache_guard(%x: f32[3]) {\n  %y = exp(%x)\n  return (%y)\n}";

// The UserError message of compiling into `dir`, or "" when it compiled.
std::string compile_into(const fs::path& dir) {
  auto opts = cpp_options();
  opts.cache_dir = dir.string();
  try {
    compile_graph(parse_graph(kGraph), opts);
  } catch (const UserError& e) { return e.what(); }
  return "";
}

}  // namespace

TEST(CompileCacheDir, ANewCacheIsTheUsersAlone) {
  const fs::path dir = scratch_root("rk_cache_dir_test_") / "fresh" / "cache";
  EXPECT_EQ(compile_into(dir), "");
  struct stat st {};
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(st.st_uid, ::geteuid());
}

TEST(CompileCacheDir, OneOthersCanWriteIsRefused) {
  const fs::path dir = scratch_root("rk_cache_dir_test_") / "shared";
  fs::create_directories(dir / "units");
  fs::permissions(dir, fs::perms::all);  // 0777, as a shared $TMPDIR cache would be
  std::string why = compile_into(dir);
  EXPECT_NE(why.find("is writable by everyone"), std::string::npos) << why;
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_all);
  why = compile_into(dir);
  EXPECT_NE(why.find("is writable by its group"), std::string::npos) << why;
  fs::permissions(dir, fs::perms::owner_all);
  fs::permissions(dir / "units", fs::perms::all);  // a planted object would go here
  why = compile_into(dir);
  EXPECT_NE(why.find("units' is writable by everyone"), std::string::npos) << why;
  fs::permissions(dir / "units", fs::perms::owner_all);
  EXPECT_EQ(compile_into(dir), "");
}

TEST(CompileCacheDir, ASymlinkIsRefused) {
  const fs::path root = scratch_root("rk_cache_dir_test_");
  fs::create_directories(root / "elsewhere");
  fs::create_directory_symlink(root / "elsewhere", root / "link");
  std::string why = compile_into(root / "link");
  EXPECT_NE(why.find("is a symbolic link"), std::string::npos) << why;
  EXPECT_TRUE(fs::is_empty(root / "elsewhere"));
}

TEST(CompileCacheDir, AnotherUsersIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root can give a directory to another user here";
  const fs::path dir = scratch_root("rk_cache_dir_test_") / "theirs";
  fs::create_directories(dir);
  ASSERT_EQ(::chown(dir.c_str(), 65534, 65534), 0);
  std::string why = compile_into(dir);
  EXPECT_NE(why.find("belongs to user 65534"), std::string::npos) << why;
  EXPECT_FALSE(fs::exists(dir / "units"));
}

TEST(CompileCacheDir, WithoutAHomeTheDefaultIsPerUser) {
  EXPECT_EQ(default_cache_dir("/x/y"), "/x/y");
  const char* cache = std::getenv("REPRO_CACHE_DIR");
  const char* home = std::getenv("HOME");
  const std::string saved_cache = cache ? cache : "", saved_home = home ? home : "";
  ::unsetenv("REPRO_CACHE_DIR");
  ::unsetenv("HOME");
  const std::string dir = default_cache_dir("");
  if (cache) ::setenv("REPRO_CACHE_DIR", saved_cache.c_str(), 1);
  if (home) ::setenv("HOME", saved_home.c_str(), 1);
  EXPECT_EQ(fs::path(dir).filename().string(), "reprokit-cache-" + std::to_string(::geteuid())) << dir;
}
