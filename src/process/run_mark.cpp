// Marking children and stopping what carries the mark (see run_mark.h).
#include "run_mark.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>

namespace reprokit::process_detail {

const std::string& run_token() {
  static const std::string token = [] {
    std::random_device rd;
    const unsigned long long r = (static_cast<unsigned long long>(rd()) << 32) ^ rd();
    char buf[64];
    std::snprintf(buf, sizeof buf, "rk%dx%016llx", static_cast<int>(::getpid()), r);
    return std::string(buf);
  }();
  return token;
}

std::string run_mark_entry() {
  const char* inherited = std::getenv(kRunMarkVariable);
  std::string value = inherited && *inherited ? std::string(inherited) + ":" + run_token() : run_token();
  return std::string(kRunMarkVariable) + "=" + value;
}

namespace {

constexpr int kMaxMarked = 4096;
constexpr size_t kChunk = 64 * 1024;

struct LinuxDirent64 {
  ino64_t d_ino;
  off64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

// Whether the bytes of `fd` (a /proc/<pid>/environ) hold "REPROKIT_RUN=" followed, within that
// entry, by `token`. Read in chunks, the end of each carried over so a match across two is found.
bool environ_holds(int fd, const char* token) {
  static char buf[kChunk + 4096];
  const char* var = kRunMarkVariable;
  const size_t var_len = std::strlen(var), token_len = std::strlen(token);
  const size_t carry_max = 4000;  // a REPROKIT_RUN entry longer than this is not ours
  size_t have = 0;
  for (;;) {
    ssize_t n = ::read(fd, buf + have, kChunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    have += static_cast<size_t>(n);
    // Entries are NUL-separated: look at each whole one; a partial last one waits for more bytes.
    size_t start = 0;
    for (size_t i = 0; i < have; ++i) {
      if (buf[i] != '\0') continue;
      const char* e = buf + start;
      const size_t len = i - start;
      if (len > var_len && std::strncmp(e, var, var_len) == 0 && e[var_len] == '=' && memmem(e, len, token, token_len)) return true;
      start = i + 1;
    }
    // Keep the partial entry (up to carry_max bytes of it) for the next read.
    size_t rest = have - start;
    if (rest > carry_max) rest = 0;
    std::memmove(buf, buf + start, rest);
    have = rest;
  }
  return false;
}

// The pid a /proc entry names; false when it is not a process's.
bool pid_of(const char* name, pid_t* pid) {
  long v = 0;
  if (!*name) return false;
  for (const char* c = name; *c; ++c) {
    if (*c < '0' || *c > '9' || v > 100000000) return false;
    v = v * 10 + (*c - '0');
  }
  *pid = static_cast<pid_t>(v);
  return true;
}

// "/proc/<pid>/<file>" into out (size 64).
void proc_path(pid_t pid, const char* file, char* out) {
  char num[16];
  int n = 0;
  for (pid_t v = pid; v > 0 && n < 15; v /= 10) num[n++] = static_cast<char>('0' + v % 10);
  std::strcpy(out, "/proc/");
  size_t at = std::strlen(out);
  while (n > 0) out[at++] = num[--n];
  out[at++] = '/';
  out[at] = '\0';
  std::strcat(out, file);
}

// Calls f(pid) for each process in /proc until it returns false, reading the directory through
// `dents` (the caller's buffer: no allocation). False when /proc cannot be read.
template <class F> bool each_process(char* dents, size_t size, F&& f) {
  const int dir = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return false;
  bool more = true;
  while (more) {
    const long n = ::syscall(SYS_getdents64, dir, dents, size);
    if (n <= 0) break;
    for (long off = 0; off < n && more;) {
      auto* d = reinterpret_cast<LinuxDirent64*>(dents + off);
      off += d->d_reclen;
      pid_t pid = 0;
      if (pid_of(d->d_name, &pid)) more = f(pid);
    }
  }
  ::close(dir);
  return true;
}

// The pids (up to max) of processes, the caller aside, whose environment carries the token.
int find_marked(const char* token, pid_t* found, int max) {
  alignas(8) static char dents[32 * 1024];
  int count = 0;
  const pid_t self = ::getpid();
  each_process(dents, sizeof dents, [&](pid_t pid) {
    if (pid == self || count >= max) return true;
    char path[64];
    proc_path(pid, "environ", path);
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return true;
    if (environ_holds(fd, token)) found[count++] = pid;
    ::close(fd);
    return true;
  });
  return count;
}

// The fields of /proc/<pid>/stat after the process's name (" S ppid pgrp ..."), read into `buf`;
// nullptr when the process is gone. The name may hold spaces and parentheses.
const char* stat_after_name(pid_t pid, char* buf, size_t size) {
  char path[64];
  proc_path(pid, "stat", path);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  const ssize_t got = ::read(fd, buf, size - 1);
  ::close(fd);
  if (got <= 0) return nullptr;
  buf[got] = '\0';
  const char* close = std::strrchr(buf, ')');
  return close && close[1] == ' ' ? close + 1 : nullptr;
}

// Whether `pid` still runs: a zombie (ended, waiting for a parent that may be gone, or an init
// that does not reap) has nothing left to stop, and waiting on it would cost the whole grace period.
bool still_runs(pid_t pid) {
  char stat[512];
  const char* f = stat_after_name(pid, stat, sizeof stat);
  return f && f[1] != 'Z' && f[1] != 'X';
}

// Whether `pid` is a process of group `pgid` that has not ended (a zombie has).
bool member_runs(pid_t pid, pid_t pgid) {
  char stat[512];
  const char* p = stat_after_name(pid, stat, sizeof stat);
  if (!p || p[1] == 'Z' || p[1] == 'X' || p[1] == '\0') return false;
  p += 2;
  while (*p == ' ') ++p;
  while (*p >= '0' && *p <= '9') ++p;  // ppid
  while (*p == ' ') ++p;
  long group = 0;
  for (; *p >= '0' && *p <= '9'; ++p) group = group * 10 + (*p - '0');
  return group == pgid;
}

}  // namespace

void stop_marked_processes(const char* token, double grace_s) {
  static pid_t marked[kMaxMarked];
  const int n = find_marked(token, marked, kMaxMarked);
  if (n == 0) return;
  for (int k = 0; k < n; ++k) ::kill(marked[k], SIGTERM);
  for (long step = 0; step < static_cast<long>(grace_s * 100); ++step) {
    bool any = false;
    for (int k = 0; k < n; ++k) any |= still_runs(marked[k]);
    if (!any) break;
    timespec ten_ms{0, 10'000'000};
    nanosleep(&ten_ms, nullptr);
  }
  for (int k = 0; k < n; ++k) ::kill(marked[k], SIGKILL);
  // What a marked process started while it was being stopped is marked too: one more sweep.
  const int again = find_marked(token, marked, kMaxMarked);
  for (int k = 0; k < again; ++k) ::kill(marked[k], SIGKILL);
}

bool group_runs(pid_t pgid) {
  alignas(8) char dents[8192];
  bool runs = false;
  const bool read = each_process(dents, sizeof dents, [&](pid_t pid) {
    runs = member_runs(pid, pgid);
    return !runs;  // one running member is enough
  });
  return read ? runs : true;  // /proc unreadable: cannot tell, as kill(-pgid, 0) said
}

}  // namespace reprokit::process_detail
