// The directory a test process writes its files under: <tmp>/<prefix><pid>, removed when the process
// exits. ctest runs each test in a process of its own, so without this every run of the suite left
// its bundles, installs and caches behind: a day of runs filled the disk with 35 GB under /tmp.
// Kept for a post-mortem when a test failed or RK_KEEP_TEST_DIRS is set; the kept path is printed.
#pragma once
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace reprokit::testing {

namespace scratch_detail {

struct Roots {
  pid_t owner = ::getpid();  // a forked child that exits must not remove its parent's files
  std::vector<std::filesystem::path> paths;
  ~Roots() {
    if (::getpid() != owner) return;
    const char* keep_env = std::getenv("RK_KEEP_TEST_DIRS");
    bool keep = (keep_env && *keep_env) || ::testing::UnitTest::GetInstance()->Failed();
    for (auto& p : paths) {
      std::error_code ec;
      if (keep) {
        if (std::filesystem::exists(p, ec)) std::fprintf(stderr, "kept the test's files in %s\n", p.c_str());
      } else {
        std::filesystem::remove_all(p, ec);
      }
    }
  }
};

inline Roots& roots() {
  static Roots r;
  return r;
}

}  // namespace scratch_detail

// <tmp>/<prefix><pid>, created; registered for removal at exit.
inline std::filesystem::path scratch_root(const std::string& prefix) {
  std::filesystem::path root = std::filesystem::temp_directory_path() / (prefix + std::to_string(::getpid()));
  auto& r = scratch_detail::roots();
  bool known = false;
  for (auto& p : r.paths) known = known || p == root;
  if (!known) r.paths.push_back(root);
  std::filesystem::create_directories(root);
  return root;
}

// An empty directory `name` under this process's scratch root.
inline std::filesystem::path scratch_dir(const std::string& prefix, const std::string& name) {
  std::filesystem::path p = scratch_root(prefix) / name;
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

}  // namespace reprokit::testing
