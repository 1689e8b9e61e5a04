// The test processes' scratch directories (tests/scratch_dir.h) go when the process ends: a suite
// run that leaves its files in /tmp fills the disk of the machine that runs it again and again.
#include <gtest/gtest.h>

#include "cli_util.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

// This test binary, running only the child below, with `env`.
ProcessResult run_child(std::map<std::string, std::string> env) {
  ProcessSpec s;
  s.argv = {fs::read_symlink("/proc/self/exe").string(), "--gtest_filter=ScratchDirChild.WritesAFile"};
  env.emplace("RK_SCRATCH_CHILD", "1");
  s.env_set = std::move(env);
  s.env_unset = {"RK_KEEP_TEST_DIRS"};
  s.timeout_s = 60;
  return run_process(s);
}

// The directory the child printed ("scratch: PATH").
fs::path child_dir(const ProcessResult& r) {
  size_t at = r.out.find("scratch: ");
  if (at == std::string::npos) return {};
  size_t end = r.out.find('\n', at);
  return r.out.substr(at + 9, end - at - 9);
}

}  // namespace

// The child the tests below run: registered only in a process started with RK_SCRATCH_CHILD, so
// that it is not one of the suite's tests.
class WritesAFile : public ::testing::Test {
 public:
  void TestBody() override {
    fs::path d = fresh_dir("child");
    write_text(d / "sub" / "file.txt", "x");
    std::printf("scratch: %s\n", d.c_str());
    if (std::getenv("RK_SCRATCH_CHILD_FAILS")) ADD_FAILURE() << "failing on purpose";
  }
};
[[maybe_unused]] const bool kChildRegistered =
    std::getenv("RK_SCRATCH_CHILD") && ::testing::RegisterTest("ScratchDirChild", "WritesAFile", nullptr, nullptr, __FILE__, __LINE__,
                                                               []() -> ::testing::Test* { return new WritesAFile; });

TEST(ScratchDir, RemovedWhenTheTestProcessExits) {
  ProcessResult r = run_child({});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  fs::path d = child_dir(r);
  ASSERT_FALSE(d.empty()) << r.out;
  EXPECT_FALSE(fs::exists(d.parent_path())) << d.parent_path() << " was left behind";
}

TEST(ScratchDir, KeptWhenATestFailsOrWhenAsked) {
  for (const char* var : {"RK_SCRATCH_CHILD_FAILS", "RK_KEEP_TEST_DIRS"}) {
    SCOPED_TRACE(var);
    ProcessResult r = run_child({{var, "1"}});
    fs::path d = child_dir(r);
    ASSERT_FALSE(d.empty()) << r.out;
    EXPECT_TRUE(fs::exists(d / "sub" / "file.txt"));
    EXPECT_NE(r.err.find("kept the test's files in " + d.parent_path().string()), std::string::npos) << r.err;
    fs::remove_all(d.parent_path());
  }
}
