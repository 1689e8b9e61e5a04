// spawn_child (see spawn.h): the child shares our memory until execve (clone with CLONE_VM and
// CLONE_VFORK, as posix_spawn does) and makes system calls only, so nothing another thread holds
// at that moment can stop it. A fork-based launcher (Boost.Process v2's default_launcher, which
// we used before) is exposed twice: in the child, Asio's notify_fork allocates and takes the
// io_context's locks before exec, and GCC 12's AddressSanitizer does not lock its allocator
// around fork, so a child forked while another thread was inside malloc could wait for ever, and
// its parent with it (boostorg/process#430 is the same class); and fork() runs the atfork
// handlers in the parent, where OpenBLAS's stops its thread pool, and a GEMM another thread was
// running on that pool then never finished (measured: a stand-alone check hung within seconds).
// posix_spawn itself cannot set PR_SET_PDEATHSIG, which ties a child's life to ours.
#include "spawn.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace reprokit::process_detail {

namespace {

struct ChildArgs {
  const SpawnRequest* request;
  pid_t parent;
  volatile int error;  // written by the child before it gives up (our memory is its memory)
};

[[noreturn]] __attribute__((no_sanitize("address", "undefined"))) void give_up(ChildArgs* a, int error) {
  a->error = error;
  syscall(SYS_exit_group, 127);  // not _exit: a sanitizer's _exit interceptor runs its exit hooks
  __builtin_unreachable();
}

// Runs in the child, on its own stack, in our address space until execve: system calls only (no
// allocation, no lock), and every signal blocked until our handlers are gone from it.
__attribute__((no_sanitize("address", "undefined"))) int child_main(void* arg) {
  auto* a = static_cast<ChildArgs*>(arg);
  const SpawnRequest& r = *a->request;
  // Our handlers would run here, on our memory: back to the defaults. SIGPIPE, SIGINT and SIGTERM
  // too, which we may ignore (exec keeps an ignored signal ignored).
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction sa {};
    if (sigaction(sig, nullptr, &sa) != 0) continue;  // SIGKILL, SIGSTOP, the C library's own
    const bool reset = sig == SIGPIPE || sig == SIGINT || sig == SIGTERM || sa.sa_handler != SIG_IGN;
    if (reset && sa.sa_handler != SIG_DFL) {
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      sigaction(sig, &dfl, nullptr);
    }
  }
  setpgid(0, 0);
  // Die with the parent, even by SIGKILL; if it is already gone, do not start at all.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != a->parent) give_up(a, ESRCH);
  if (r.memory_limit_mb > 0) {
    const rlim_t bytes = static_cast<rlim_t>(r.memory_limit_mb) << 20;
    rlimit rl{bytes, bytes};
    setrlimit(RLIMIT_AS, &rl);  // our address space is shared until execve, but maps nothing more
  }
  if (r.cwd && *r.cwd && chdir(r.cwd) != 0) give_up(a, errno);
  for (int fd = 0; fd < 3; ++fd)  // the request's fds are above 2 (spawn_child sees to it)
    if (r.stdio[fd] >= 0 && dup2(r.stdio[fd], fd) < 0) give_up(a, errno);
  // The child gets fds 0-2 and nothing else: a daemon it started (munged, a build server) held
  // our stdout pipe open through an inherited descriptor, and reading waited for ever.
  if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    const long limit = std::min(sysconf(_SC_OPEN_MAX), 65536L);  // kernels before 5.11
    for (int fd = 3; fd < limit; ++fd) fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  sigset_t none;  // the thread that started it may block SIGTERM; the program starts with no mask
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execve(r.path, const_cast<char* const*>(r.argv), const_cast<char* const*>(r.envp));
  give_up(a, errno);
}

// clone(CLONE_VM | CLONE_VFORK) of child_main on a stack of its own; returns once the child has
// exec'd or given up (reaped then), as spawn_child.
pid_t clone_child(const SpawnRequest& r, int* error) {
  constexpr size_t kStackBytes = 64 << 10;
  void* stack = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) {
    *error = errno;
    return -1;
  }
  ChildArgs a{&r, getpid(), 0};
  // Every signal blocked from here to exec: no handler of ours may run in the child.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = clone(child_main, static_cast<char*>(stack) + kStackBytes, CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
  const int clone_error = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  munmap(stack, kStackBytes);  // the child has exec'd or exited: CLONE_VFORK waited for that
  if (pid < 0) {
    *error = clone_error;
  } else if (a.error != 0) {
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {}
    *error = a.error;
    pid = -1;
  }
  return pid;
}

}  // namespace

pid_t spawn_child(const SpawnRequest& request, int* error) {
  // The child's fds must not be 0-2 already (dup2 onto itself would leave close-on-exec set,
  // and a later dup2 could overwrite one still to be used): copy any such above 2.
  SpawnRequest r = request;
  int copies[3] = {-1, -1, -1};
  bool copied = true;
  for (int k = 0; k < 3 && copied; ++k)
    if (r.stdio[k] >= 0 && r.stdio[k] < 3) {
      copies[k] = r.stdio[k] = fcntl(r.stdio[k], F_DUPFD_CLOEXEC, 3);
      if (copies[k] < 0) {
        *error = errno;
        copied = false;
      }
    }
  const pid_t pid = copied ? clone_child(r, error) : -1;
  for (int c : copies)
    if (c >= 0) close(c);
  return pid;
}

pid_t fork_for_system_calls_only() {
  // clone with no flags but the exit signal is fork (the argument order past flags differs
  // between architectures; all are zero here).
  return static_cast<pid_t>(syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0));
}

}  // namespace reprokit::process_detail
