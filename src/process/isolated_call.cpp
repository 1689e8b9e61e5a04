// run_isolated (see isolated_call.h): fork, limits in the child, the value back over a pipe.
#include "reprokit/process/isolated_call.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>

#include "child_registry.h"

namespace reprokit {

namespace {

bool write_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

long mapped_pages() {
  long pages = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  return pages;
}

}  // namespace

IsolatedResult run_isolated(const std::function<std::string()>& work, const IsolatedLimits& limits) {
  IsolatedResult r;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {IsolatedResult::End::returned, work(), 0};
  const long pages = mapped_pages();
  pid_t pid;
  {
    auto spawning = process_detail::lock_spawning();  // until registered (see subprocess.cpp)
    process_detail::wait_for_the_end_if_terminating();
    pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (pages > 0) {
        rlim_t limit = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) + static_cast<rlim_t>(limits.extra_memory_bytes);
        rlimit rl{limit, limit};
        ::setrlimit(RLIMIT_AS, &rl);
      }
      try {
        write_all(fds[1], work());
      } catch (...) {  // nothing written: no result
      }
      ::_exit(0);
    }
    if (pid > 0) {
      ::setpgid(pid, pid);  // also from here, so a stop right after the fork reaches the group
      process_detail::register_started(pid);
    }
  }
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return {IsolatedResult::End::returned, work(), 0};
  }
  ::close(fds[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limits.timeout_s);
  bool timed_out = false, ended = false;
  char buf[65536];
  while (!ended) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int n_ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (n_ready <= 0) continue;  // EINTR or nothing yet
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ended = true;
    else r.value.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(-pid, SIGKILL);  // our own code, not a launcher: nothing to let finish
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  process_detail::unregister_started(pid);
  if (timed_out) r.end = IsolatedResult::End::timed_out;
  else if (WIFSIGNALED(status)) r.end = IsolatedResult::End::crashed, r.signal = WTERMSIG(status);
  else r.end = r.value.empty() ? IsolatedResult::End::no_result : IsolatedResult::End::returned;
  return r;
}

}  // namespace reprokit
