// Private to src/process: starting a program from any thread of a multi-threaded process.
#pragma once
#include <sys/types.h>

namespace reprokit::process_detail {

struct SpawnRequest {
  const char* path = nullptr;         // the program, resolved (execve does not search PATH)
  const char* const* argv = nullptr;  // null-terminated
  const char* const* envp = nullptr;  // null-terminated
  int stdio[3] = {-1, -1, -1};        // what the child gets as fds 0, 1, 2; -1: ours
  const char* cwd = nullptr;          // null or empty: ours
  long memory_limit_mb = 0;           // RLIMIT_AS; 0: none
};

// Starts the program in a process group of its own (it leads it), with an empty signal mask,
// default handlers, fds 0-2 and nothing else, and PR_SET_PDEATHSIG set to SIGKILL. Returns its
// pid, or -1 with the reason in *error (errno of the step that failed: the fork, chdir or execve);
// a child that could not exec is reaped before this returns.
pid_t spawn_child(const SpawnRequest& request, int* error);

// fork() without the atfork handlers, for a copy of this process that makes system calls only
// (the reaper): OpenBLAS's handler stops its thread pool, and a GEMM another thread was running
// on it never finished. The copy must not allocate or lock: the C library's locks are as the
// other threads left them. Returns 0 in the copy, as fork().
pid_t fork_for_system_calls_only();

}  // namespace reprokit::process_detail
