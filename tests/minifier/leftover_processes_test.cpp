// Nothing a check starts outlives the reduction: after `kill -9` of `reprokit reduce`, a check's
// grandchild in its process group is stopped by the reaper process, and so is a daemon it started
// out of every group (found by the mark in its environment); a daemon a check leaves (setsid) is
// adopted and stopped once the check is judged.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "../harness/cli_util.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

// Processes whose command line holds `marker` (a sleep of an unusual length).
int count_processes(const std::string& marker) {
  int n = 0;
  for (auto& e : fs::directory_iterator("/proc")) {
    std::ifstream in(e.path() / "cmdline");
    std::string cmd((std::istreambuf_iterator<char>(in)), {});
    for (char& c : cmd)
      if (c == '\0') c = ' ';
    if (cmd.find(marker) != std::string::npos && cmd.find("reprokit") == std::string::npos) ++n;
  }
  return n;
}

bool wait_for(const std::function<bool()>& done, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

void write_model(const fs::path& p) { std::ofstream(p) << "graph m(%x: f32[3]) {\n  %a = sin(%x)\n  %b = exp(%a)\n  return (%b)\n}\n"; }

}  // namespace

TEST(LeftoverProcesses, AKill9OfReduceStillStopsTheChecksGrandchildren) {
  const fs::path root = fresh_dir("leftover_kill9");
  write_model(root / "m.rk");
  const std::string marker = "sleep 7" + std::to_string(::getpid() % 1000 + 1000);
  ProcessSpec s;
  s.argv = {REPROKIT_EXE,           "reduce", (root / "m.rk").string(), "--check", "sh -c '" + marker + " & " + marker + "; exit 1'", "-o",
            (root / "out").string()};
  s.cwd = root.string();
  s.env_set = {{"REPRO_CACHE_DIR", std::string(REPROKIT_BINARY_DIR) + "/test-cache"}};
  LineChild reduce(s);
  ASSERT_TRUE(wait_for([&] { return count_processes(marker) >= 2; }, 30)) << "the check never started";  // sh and its sleeps
  reduce.kill();  // SIGKILL to reduce's whole group; the reaper is in a session of its own
  reduce.wait_result();
  EXPECT_TRUE(wait_for([&] { return count_processes(marker) == 0; }, 10)) << count_processes(marker) << " left running";
}

TEST(LeftoverProcesses, ADaemonACheckLeavesIsStopped) {
  const fs::path root = fresh_dir("leftover_daemon");
  write_model(root / "m.rk");
  const std::string marker = "sleep 8" + std::to_string(::getpid() % 1000 + 1000);
  auto r =
      reprokit_cli({"reduce", (root / "m.rk").string(), "--check", "sh -c 'setsid " + marker + " & exit 1'", "-o", (root / "out").string()}, root);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(wait_for([&] { return count_processes(marker) == 0; }, 5)) << count_processes(marker) << " daemons left running";
}

// A daemon (setsid: out of every process group) still running when reduce dies by kill -9 has init
// for a parent, but carries reduce's mark in its environment: the reaper stops it.
TEST(LeftoverProcesses, AKill9OfReduceStopsADaemonItsCheckStarted) {
  const fs::path root = fresh_dir("leftover_kill9_daemon");
  write_model(root / "m.rk");
  const std::string daemon = "sleep 6" + std::to_string(::getpid() % 1000 + 1000);
  const std::string busy = "sleep 5" + std::to_string(::getpid() % 1000 + 1000);
  ProcessSpec s;
  s.argv = {REPROKIT_EXE,           "reduce", (root / "m.rk").string(), "--check", "sh -c 'setsid " + daemon + " & " + busy + "; exit 1'", "-o",
            (root / "out").string()};
  s.cwd = root.string();
  s.env_set = {{"REPRO_CACHE_DIR", std::string(REPROKIT_BINARY_DIR) + "/test-cache"}};
  LineChild reduce(s);
  ASSERT_TRUE(wait_for([&] { return count_processes(daemon) >= 1 && count_processes(busy) >= 1; }, 30)) << "the check never started";
  reduce.kill();
  reduce.wait_result();
  EXPECT_TRUE(wait_for([&] { return count_processes(daemon) == 0; }, 10)) << count_processes(daemon) << " daemons left running";
  EXPECT_TRUE(wait_for([&] { return count_processes(busy) == 0; }, 10));
}
