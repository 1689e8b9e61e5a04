// How children are stopped: SIGTERM to the group first (a launcher such as srun cancels its job on
// it), SIGKILL after the grace period for what ignores it; a line child gets end-of-input first.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "reprokit/process/subprocess.h"

using namespace reprokit;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("rk_stop_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

bool process_exists(pid_t pid) { return ::kill(pid, 0) == 0; }

// `script` run by sh, within timeout_s (0: none).
ProcessResult run_sh(const std::string& script, double timeout_s) {
  ProcessSpec s;
  s.argv = {"sh", "-c", script};
  s.timeout_s = timeout_s;
  return run_process(s);
}

// Kills the daemon a test left behind (it wrote its pid to dir/daemon.pid).
void kill_daemon(const fs::path& dir) {
  std::string pid = slurp(dir / "daemon.pid");
  if (!pid.empty()) ::kill(std::stoi(pid), SIGKILL);
}

}  // namespace

TEST(Stop, ATimeoutSendsSigtermBeforeSigkill) {
  auto dir = fresh_dir("term");
  // The trap runs only if SIGTERM comes first (SIGKILL cannot be trapped).
  ProcessResult r = run_sh("trap 'echo terminated > " + (dir / "said").string() + "; exit 0' TERM; sleep 100 & wait", 0.5);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(slurp(dir / "said"), "terminated\n");
  EXPECT_LT(r.seconds, 3.0) << "a child that obeys SIGTERM must not wait out the grace period";
}

TEST(Stop, WhatIgnoresSigtermIsKilledAfterTheGracePeriod) {
  ProcessResult r = run_sh("trap '' TERM; while :; do sleep 0.1; done", 0.3);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_GT(r.seconds, 2.0);
  EXPECT_LT(r.seconds, 10.0);
}

TEST(Stop, ReadingEndsAfterTheTimeoutEvenIfADaemonHoldsThePipes) {
  auto dir = fresh_dir("daemon");
  // setsid: a grandchild in a group of its own keeps stdout open, out of reach of the group kill.
  ProcessResult r = run_sh("setsid sh -c 'echo $$ > " + (dir / "daemon.pid").string() + "; trap \"\" TERM; sleep 30' & sleep 100", 0.5);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.seconds, 10.0);
  kill_daemon(dir);
}

TEST(Stop, ALineChildGetsEndOfInputAndExitsByItself) {
  auto dir = fresh_dir("eof");
  ProcessSpec s;
  s.argv = {"sh", "-c", "while read line; do echo \"got $line\"; done; echo clean > " + (dir / "end").string()};
  pid_t pid;
  {
    LineChild c(s);
    pid = c.pid();
    ASSERT_TRUE(c.write_line("one"));
    EXPECT_EQ(c.read_line(5).value_or(""), "got one");
  }  // the destructor closes stdin and waits
  EXPECT_EQ(slurp(dir / "end"), "clean\n");
  EXPECT_FALSE(process_exists(pid));
}

TEST(Stop, ALineChildThatIgnoresEndOfInputIsStopped) {
  ProcessSpec s;
  s.argv = {"sh", "-c", "trap '' TERM; exec 0<&-; while :; do sleep 0.1; done"};
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid;
  {
    LineChild c(s);
    pid = c.pid();
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_FALSE(process_exists(pid));
  EXPECT_LT(seconds, 15.0);
}

TEST(Stop, AChildGetsOnlyStdinStdoutAndStderr) {
  ProcessResult r = run_sh("ls /proc/$$/fd", 10);
  EXPECT_EQ(r.out, "0\n1\n2\n") << "inherited descriptors keep our pipes open in daemons the child starts";
}

TEST(Stop, ReadingEndsWhenTheChildExitsEvenIfADaemonHoldsThePipes) {
  auto dir = fresh_dir("daemon_no_timeout");
  // No timeout at all: the daemon (its own session, out of the group's reach) keeps stdout open.
  ProcessResult r = run_sh("setsid sh -c 'echo $$ > " + (dir / "daemon.pid").string() + "; sleep 30' & echo done", 0);
  EXPECT_EQ(r.out, "done\n");
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_LT(r.seconds, 10.0);
  kill_daemon(dir);
}
