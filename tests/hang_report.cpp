// Linked into every test binary: a test still running after REPRO_TEST_HANG_REPORT_S seconds
// (default 400; ctest stops a test at 600, or 900 in the sanitized stage) prints where it waits,
// to stderr, which ctest shows with the failure: each of its threads' state, kernel wait channel
// and current system call, its child processes' too (with their command lines), and, where gdb
// is installed, every thread's stack. Then the test goes on: a slow test is not failed for it.
// A hang in CI once left nothing but "[ RUN ]" in the log, and it did not happen again here.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  std::string t = s.str();
  for (char& c : t)
    if (c == '\0') c = ' ';  // cmdline's separators
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

std::string status_field(const std::string& dir, const std::string& field) {
  std::ifstream in(dir + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field + ":", 0) == 0) return line.substr(field.size() + 2);
  return "?";
}

// One line per thread or process: who, its state, what it waits on in the kernel, and its system
// call (number and arguments, as /proc gives them: "202 0x7f..." is futex on that address).
void describe(const std::string& dir, const std::string& who) {
  std::fprintf(stderr, "  %s %s: state %s, wchan %s, syscall %s\n", who.c_str(), read_text(dir + "/comm").c_str(), status_field(dir, "State").c_str(),
               read_text(dir + "/wchan").c_str(), read_text(dir + "/syscall").c_str());
}

std::vector<long> numeric_entries(const std::string& dir) {
  std::vector<long> found;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      char* end = nullptr;
      long n = std::strtol(e->d_name, &end, 10);
      if (*end == '\0' && n > 0) found.push_back(n);
    }
    closedir(d);
  }
  return found;
}

void describe_children_of(long parent, int depth) {
  for (long pid : numeric_entries("/proc")) {
    const std::string dir = "/proc/" + std::to_string(pid);
    if (status_field(dir, "PPid") != std::to_string(parent)) continue;
    describe(dir, std::string(depth * 2, ' ') + "child " + std::to_string(pid));
    std::fprintf(stderr, "  %s  command: %s\n", std::string(depth * 2, ' ').c_str(), read_text(dir + "/cmdline").c_str());
    if (depth < 4) describe_children_of(pid, depth + 1);
  }
}

void print_stacks_with_gdb() {
  // Started by posix_spawn (no fork of this busy process), allowed to attach to its parent.
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
  const std::string pid = std::to_string(getpid());
  const char* argv[] = {"gdb", "-p", pid.c_str(), "-batch", "-nx", "-ex", "thread apply all bt 30", nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, 2, 1);  // its report goes where ours does
  pid_t gdb = -1;
  if (posix_spawnp(&gdb, "gdb", &actions, nullptr, const_cast<char* const*>(argv), environ) == 0) {
    while (waitpid(gdb, nullptr, 0) < 0 && errno == EINTR) {
    }
  } else {
    std::fprintf(stderr, "  (no gdb here: no stacks)\n");
  }
  posix_spawn_file_actions_destroy(&actions);
}

void report(const std::string& test, long seconds) {
  std::fprintf(stderr, "\n==== hang report: %s has run for %ld s (pid %d) ====\n", test.c_str(), seconds, getpid());
  for (long tid : numeric_entries("/proc/self/task")) describe("/proc/self/task/" + std::to_string(tid), "thread " + std::to_string(tid));
  describe_children_of(getpid(), 0);
  print_stacks_with_gdb();
  std::fprintf(stderr, "==== end of hang report ====\n");
  std::fflush(stderr);
}

// The deadline of the running test, and the one thread that waits for it. Never destroyed: the
// thread waits on it until the process ends (gtest deletes its listeners at exit).
class Watch {
 public:
  explicit Watch(double seconds) : limit_(seconds) {}
  void start(const std::string& test) {
    std::lock_guard<std::mutex> lock(mutex_);
    test_ = test;
    started_ = std::chrono::steady_clock::now();
    ++generation_;
    if (!watcher_started_) {
      watcher_started_ = true;
      std::thread([this] { watch(); }).detach();
    }
    wake_.notify_all();
  }
  void end() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++generation_;
    test_.clear();
    wake_.notify_all();
  }

 private:
  void watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return !test_.empty(); });
      const long generation = generation_;
      const auto deadline = started_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(limit_));
      if (wake_.wait_until(lock, deadline, [&] { return generation_ != generation; })) continue;
      const std::string test = test_;
      const long seconds = static_cast<long>(std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
      lock.unlock();
      report(test, seconds);
      lock.lock();
      wake_.wait(lock, [&] { return generation_ != generation; });  // once per test
    }
  }

  const double limit_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string test_;
  std::chrono::steady_clock::time_point started_;
  long generation_ = 0;
  bool watcher_started_ = false;
};

class HangReporter : public ::testing::EmptyTestEventListener {
 public:
  explicit HangReporter(Watch* watch) : watch_(watch) {}
  void OnTestStart(const ::testing::TestInfo& info) override { watch_->start(std::string(info.test_suite_name()) + "." + info.name()); }
  void OnTestEnd(const ::testing::TestInfo&) override { watch_->end(); }

 private:
  Watch* watch_;
};

double report_after_seconds() {
  const char* e = std::getenv("REPRO_TEST_HANG_REPORT_S");
  if (e && *e) {
    char* end = nullptr;
    double s = std::strtod(e, &end);
    if (end != e && s > 0) return s;
  }
  return 400;
}

// Registered before main (gtest_main's) runs the tests; gtest owns the listener.
Watch* const watch = new Watch(report_after_seconds());
const bool registered = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new HangReporter(watch));
  return true;
}();

}  // namespace
