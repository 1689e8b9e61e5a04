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

// Appends "/proc/<name>/environ" to out (size 64); false when name is not a pid.
bool environ_path(const char* name, char* out, pid_t* pid) {
  long v = 0;
  if (!*name) return false;
  for (const char* c = name; *c; ++c) {
    if (*c < '0' || *c > '9' || v > 100000000) return false;
    v = v * 10 + (*c - '0');
  }
  *pid = static_cast<pid_t>(v);
  std::strcpy(out, "/proc/");
  std::strcat(out, name);
  std::strcat(out, "/environ");
  return true;
}

// The pids (up to max) of processes, the caller aside, whose environment carries the token.
int find_marked(const char* token, pid_t* found, int max) {
  int dir = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return 0;
  static char dents[32 * 1024];
  int count = 0;
  const pid_t self = ::getpid();
  for (;;) {
    long n = ::syscall(SYS_getdents64, dir, dents, sizeof dents);
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      auto* d = reinterpret_cast<LinuxDirent64*>(dents + off);
      off += d->d_reclen;
      char path[64];
      pid_t pid = 0;
      if (!environ_path(d->d_name, path, &pid) || pid == self || count >= max) continue;
      int fd = ::open(path, O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      if (environ_holds(fd, token)) found[count++] = pid;
      ::close(fd);
    }
  }
  ::close(dir);
  return count;
}

// Whether `pid` still runs: a zombie (ended, waiting for a parent that may be gone, or an init
// that does not reap) has nothing left to stop, and waiting on it would cost the whole grace period.
bool still_runs(pid_t pid) {
  char path[64];
  char num[16];
  int n = 0;
  for (pid_t v = pid; v > 0 && n < 15; v /= 10) num[n++] = static_cast<char>('0' + v % 10);
  std::strcpy(path, "/proc/");
  size_t at = std::strlen(path);
  while (n > 0) path[at++] = num[--n];
  path[at] = '\0';
  std::strcat(path, "/stat");
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  static char stat[512];
  const ssize_t got = ::read(fd, stat, sizeof stat - 1);
  ::close(fd);
  if (got <= 0) return false;
  stat[got] = '\0';
  const char* close = std::strrchr(stat, ')');  // the name may hold spaces and parentheses
  return close && close[1] == ' ' && close[2] != 'Z' && close[2] != 'X';
}

// Whether the /proc entry `name` is a process of group `pgid` that has not ended (a zombie has).
bool member_runs(const char* name, pid_t pgid) {
  char path[64] = "/proc/";
  size_t at = std::strlen(path);
  for (const char* c = name; *c; ++c) {
    if (*c < '0' || *c > '9' || at > 40) return false;
    path[at++] = *c;
  }
  if (at == 6) return false;
  path[at] = '\0';
  std::strcat(path, "/stat");
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char stat[512];
  const ssize_t got = ::read(fd, stat, sizeof stat - 1);
  ::close(fd);
  if (got <= 0) return false;
  stat[got] = '\0';
  // "pid (comm) S ppid pgrp ...": the name may hold spaces and parentheses.
  const char* p = std::strrchr(stat, ')');
  if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X' || p[2] == '\0') return false;
  p += 3;
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

}  // namespace reprokit::process_detail

namespace reprokit::process_detail {

bool group_runs(pid_t pgid) {
  const int dir = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return true;  // cannot tell: as kill(-pgid, 0) said
  alignas(8) char dents[8192];
  bool runs = false;
  while (!runs) {
    const long n = ::syscall(SYS_getdents64, dir, dents, sizeof dents);
    if (n <= 0) break;
    for (long off = 0; off < n && !runs;) {
      auto* d = reinterpret_cast<LinuxDirent64*>(dents + off);
      off += d->d_reclen;
      runs = member_runs(d->d_name, pgid);
    }
  }
  ::close(dir);
  return runs;
}

}  // namespace reprokit::process_detail
