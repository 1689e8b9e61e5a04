// How a child starts: from any thread of a busy process, with the limits and signal state it was
// promised, and a clear error (and no zombie) when it cannot.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "reprokit/process/subprocess.h"
#include "../scratch_dir.h"
#include "run_sh.h"

using namespace reprokit;
using reprokit::testing::run_sh;

namespace {

// A child of ours that exited and was never reaped.
bool a_zombie_is_left() {
  int status = 0;
  return waitpid(-1, &status, WNOHANG) > 0;
}

std::string start_error(const ProcessSpec& spec) {
  try {
    run_process(spec);
  } catch (const std::runtime_error& e) { return e.what(); }
  return "(started)";
}

}  // namespace

// fork() runs the atfork handlers, and OpenBLAS's stops its thread pool: a GEMM another thread
// was running on that pool then waited for ever (within seconds, here). A process that embeds
// reprokit (the capture API) may well run its own GEMMs while reprokit starts a compiler.
TEST(Spawn, AChildStartsWhileOtherThreadsRunOpenBlasGemms) {
  void* blas = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
  if (!blas) GTEST_SKIP() << "no libopenblas.so.0 here: " << dlerror();
  using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
  auto sgemm = reinterpret_cast<Sgemm>(dlsym(blas, "cblas_sgemm"));
  auto set_threads = reinterpret_cast<void (*)(int)>(dlsym(blas, "openblas_set_num_threads"));
  ASSERT_TRUE(sgemm && set_threads);
  set_threads(2);  // its pool, whatever OPENBLAS_NUM_THREADS says
  std::atomic<bool> stop{false};
  std::atomic<int> running{0};
  std::atomic<long> gemms{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 2; ++t)
    workers.emplace_back([&] {
      ++running;
      std::vector<float> a(192 * 192, 1.0f), b(192 * 192, 1.0f), c(192 * 192);
      while (!stop) {
        sgemm(101, 111, 111, 192, 192, 192, 1.0f, a.data(), 192, b.data(), 192, 0.0f, c.data(), 192);  // row-major, no transposes
        ++gemms;
      }
      --running;
    });
  int started = 0;
  for (int i = 0; i < 150; ++i) started += run_sh("exit 0", 30).exit_code == 0;
  stop = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (running > 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (running > 0) {
    // The GEMMs hang: neither joining their threads nor exiting normally (OpenBLAS's own exit
    // handler waits for its pool) would return.
    std::fprintf(stderr, "FAILED: %d GEMM threads never finished after %ld GEMMs and %d children\n", running.load(), gemms.load(), started);
    std::_Exit(1);
  }
  for (auto& w : workers) w.join();
  EXPECT_EQ(started, 150);
  EXPECT_GT(gemms.load(), 0);
}

TEST(Spawn, AProgramThatCannotStartIsNamedWithTheReasonAndLeavesNoZombie) {
  const auto text = reprokit::testing::scratch_dir("rk_spawn_", "not_executable") / "notes.txt";
  std::ofstream(text) << "not a program\n";
  std::filesystem::permissions(text, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  ProcessSpec not_executable;
  not_executable.argv = {text.string()};
  EXPECT_EQ(start_error(not_executable), "cannot start '" + text.string() + "': Permission denied");
  ProcessSpec missing;
  missing.argv = {"/nonexistent/program"};
  EXPECT_EQ(start_error(missing), "cannot start '/nonexistent/program': No such file or directory");
  ProcessSpec no_such_dir;
  no_such_dir.argv = {"true"};
  no_such_dir.cwd = "/nonexistent/dir";
  EXPECT_EQ(start_error(no_such_dir), "cannot start 'true': No such file or directory");
  ProcessSpec not_in_path;
  not_in_path.argv = {"reprokit-no-such-program"};
  EXPECT_EQ(start_error(not_in_path), "cannot start 'reprokit-no-such-program': not found in PATH");
  EXPECT_FALSE(a_zombie_is_left());
}

TEST(Spawn, AChildRunsUnderItsMemoryLimitInItsDirectory) {
  ProcessSpec s;
  s.argv = {"sh", "-c", "ulimit -v; pwd"};
  s.memory_limit_mb = 700;
  s.cwd = "/usr";
  ProcessResult r = run_process(s);
  EXPECT_EQ(r.out, "716800\n/usr\n");  // KiB
}

// Exec keeps an ignored signal ignored: a compiler or check that ignored SIGINT or SIGPIPE would
// outlive Ctrl-C or write on into a closed pipe. Ours are ignored here (run_process ignores
// SIGPIPE itself); the child's are not.
TEST(Spawn, AChildDoesNotInheritOurIgnoredSignals) {
  struct sigaction ignore {
  }, old_int{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int);
  ProcessResult r = run_sh("grep SigIgn /proc/self/status", 30);
  sigaction(SIGINT, &old_int, nullptr);
  ASSERT_EQ(r.out.rfind("SigIgn:\t", 0), 0u) << r.out;
  const unsigned long long ignored = std::strtoull(r.out.c_str() + 8, nullptr, 16);
  EXPECT_EQ(ignored & (1ULL << (SIGINT - 1)), 0u);
  EXPECT_EQ(ignored & (1ULL << (SIGPIPE - 1)), 0u);
}
