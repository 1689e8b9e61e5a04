// How children are stopped: SIGTERM to the group first (a launcher such as srun cancels its job on
// it), SIGKILL after the grace period for what ignores it; a line child gets end-of-input first.
#include <gtest/gtest.h>
#include <unistd.h>

#include <sys/prctl.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "reprokit/process/subprocess.h"
#include "../../src/process/run_mark.h"
#include "../scratch_dir.h"
#include "run_sh.h"

using namespace reprokit;
using reprokit::testing::run_sh;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) { return reprokit::testing::scratch_dir("rk_stop_", name); }

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

bool process_exists(pid_t pid) { return ::kill(pid, 0) == 0; }

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

// Signal masks pass through fork and exec: a child of a thread that blocks SIGTERM ignored the
// SIGTERM meant to stop it and was only killed after the grace period.
TEST(Stop, AChildStartsWithNoSignalBlocked) {
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, &old);
  ProcessResult r = run_sh("grep SigBlk /proc/self/status", 10);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  EXPECT_EQ(r.out, "SigBlk:\t0000000000000000\n");
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

// A launcher such as srun keeps a second process in its group that cancels the job when srun
// dies; SIGKILL to the whole group at once killed that one too and the job ran on. Here the second
// process writes "cleaned" once its leader (which ignores SIGTERM) is gone.
TEST(Stop, AfterTheGracePeriodTheChildIsKilledAloneBeforeItsGroup) {
  auto dir = fresh_dir("leader_first");
  const std::string said = (dir / "said").string();
  ProcessResult r = run_sh("trap '' TERM; leader=$$; (trap '' TERM; while kill -0 $leader 2>/dev/null; do sleep 0.05; done; echo cleaned > " + said +
                               ") & while :; do sleep 0.1; done",
                           0.3);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_EQ(slurp(dir / "said"), "cleaned\n");
}

namespace {

// Lines in `p` (0 when it does not exist).
int count_lines(const fs::path& p) {
  std::string s = slurp(p);
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

}  // namespace

// The termination handler runs on whichever thread the signal reaches; the other threads go on.
// The minifier's thread saw its worker die of the handler's SIGTERM and started a new one (through
// srun: a job the handler then left running). Here the main thread restarts its child whenever it
// ends, and the signal is taken by a second thread: no child may start after it.
TEST(Stop, NoChildStartsOnceATerminationSignalArrived) {
  auto dir = fresh_dir("no_restart");
  const fs::path started = dir / "started";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    on_termination_signal("");
    std::thread taker([] {
      for (;;) pause();
    });  // the only thread that takes SIGTERM (created before the main thread blocks it)
    taker.detach();
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &term, nullptr);
    for (int k = 0; k < 20; ++k) run_sh("echo started >> " + started.string() + "; exec sleep 30", 0);
    _exit(0);
  }
  for (int k = 0; k < 100 && count_lines(started) == 0; ++k) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(count_lines(started), 1);
  ::kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM) << status;
  EXPECT_EQ(count_lines(started), 1) << "a child started after the termination signal";
}

// A stopped group whose last member is a zombie has ended. The zombie here is what a worker's
// forked child becomes when the worker dies first: adopted by a subreaper above (minify is one),
// which reaps it only later. kill(-group, 0) still finds it, and the stop used to wait out both
// grace periods on it.
TEST(Stop, AGroupOfOnlyAZombieHasEnded) {
  pid_t outer = fork();
  ASSERT_GE(outer, 0);
  if (outer == 0) {
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    pid_t leader = fork();
    if (leader == 0) {
      setpgid(0, 0);
      pid_t member = fork();  // in the leader's group
      if (member == 0) _exit(0);
      siginfo_t info{};
      waitid(P_PID, static_cast<id_t>(member), &info, WEXITED | WNOWAIT);  // ended, not reaped
      _exit(0);
    }
    setpgid(leader, leader);
    waitpid(leader, nullptr, 0);  // the member, a zombie, is now this process's
    const bool listed = ::kill(-leader, 0) == 0;
    const bool runs = process_detail::group_runs(leader);
    _exit((listed ? 1 : 0) | (runs ? 2 : 0));
  }
  int status = 0;
  waitpid(outer, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status) & 1, 1) << "kill(-group, 0) no longer finds a zombie member: the case this test is for is gone";
  EXPECT_EQ(WEXITSTATUS(status) & 2, 0) << "a group of only a zombie is said to run";
}

TEST(Stop, AGroupWithARunningMemberRuns) {
  pid_t leader = fork();
  ASSERT_GE(leader, 0);
  if (leader == 0) {
    setpgid(0, 0);
    pause();
    _exit(0);
  }
  setpgid(leader, leader);
  EXPECT_TRUE(process_detail::group_runs(leader));
  ::kill(leader, SIGKILL);
  waitpid(leader, nullptr, 0);
  EXPECT_FALSE(process_detail::group_runs(leader));
}
