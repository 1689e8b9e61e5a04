// Child processes (see subprocess.h). spawn_child (spawn.cpp) starts each in its own process
// group, tied to our life with PR_SET_PDEATHSIG and under its memory limit; Boost.Process v2
// finds the program in PATH; Asio drains stdout and stderr while the child runs and times it out.
#include "reprokit/process/subprocess.h"

#include "child_registry.h"
#include "run_mark.h"
#include "spawn.h"

#include <signal.h>
#include <sys/prctl.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <mutex>
#include <boost/asio/io_context.hpp>
#include <boost/asio/readable_pipe.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/asio/writable_pipe.hpp>
#include <boost/process/v2/environment.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>
#include <vector>

extern char** environ;

namespace reprokit {

namespace asio = boost::asio;
namespace bp = boost::process::v2;

namespace {

constexpr size_t kTailLimit = 1 << 20;
using Clock = std::chrono::steady_clock;

// How long a stopped child's group has between SIGTERM and SIGKILL. A launcher such as srun needs
// SIGTERM to cancel its job (SIGKILL to its whole group leaves the job running on the cluster);
// a local child dies of SIGTERM at once, so the grace costs nothing there.
double g_stop_grace_s = 3;

constexpr int kMaxChildren = 1024;

// Up to the grace period while any of `groups` (0: an empty entry) still has a member that has not
// ended (group_runs). With `reap`, leaders that are our children are reaped on the way;
// never for a leader already reaped, whose pid may be another child's by now. Async-signal-safe.
void wait_while_any_group_lives(const pid_t* groups, int n, bool reap) {
  for (long step = 0; step < static_cast<long>(g_stop_grace_s * 100); ++step) {
    bool any = false;
    for (int k = 0; k < n; ++k)
      if (groups[k] > 0) {
        if (reap) waitpid(groups[k], nullptr, WNOHANG);  // ECHILD where it is not ours: harmless
        any |= ::kill(-groups[k], 0) == 0 && process_detail::group_runs(groups[k]);
      }
    if (!any) return;
    timespec ten_ms{0, 10'000'000};
    nanosleep(&ten_ms, nullptr);
  }
}

// Stops process groups: SIGTERM to each group; the grace period; SIGKILL to each leader still
// alive, alone, and the grace period again for the rest of its group; SIGKILL to what is left.
// The leader goes first because srun's second process, in srun's group, is what cancels the job
// when srun dies: SIGKILL to the whole group at once left the job running. Async-signal-safe.
void stop_groups(const pid_t* groups, int n, bool reap) {
  for (int k = 0; k < n; ++k)
    if (groups[k] > 0) ::kill(-groups[k], SIGTERM);
  wait_while_any_group_lives(groups, n, reap);
  bool leader_killed = false;
  for (int k = 0; k < n; ++k)
    if (groups[k] > 0 && ::kill(groups[k], SIGKILL) == 0) leader_killed = true;
  if (leader_killed) wait_while_any_group_lives(groups, n, reap);
  for (int k = 0; k < n; ++k)
    if (groups[k] > 0) ::kill(-groups[k], SIGKILL);
}

// ---- the group reaper: a process of its own that stops our children's groups when we die.
// PR_SET_PDEATHSIG reaches a child but not its children: after `kill -9` of reprokit, a check's
// grandchild ran on with ppid 1. The reaper is forked at the first child; we tell it each group
// we start and reap over a pipe only we hold, and when that pipe ends (we exited or were killed,
// by any signal) it stops every group still listed: SIGTERM, the grace period, SIGKILL. It is in a
// session of its own, so neither the terminal's Ctrl-C nor a kill of our process group ends it first.
int g_reaper_fd = -1;
pid_t g_reaper_pid = -1;

// In a copy of a process that had threads (fork_for_system_calls_only): system calls only.
[[noreturn]] void reaper_main(int rd, const char* run_token) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) signal(sig, SIG_IGN);
  setsid();
  prctl(PR_SET_NAME, "rk-reaper");  // what `ps -o comm` shows
  int null_fd = open("/dev/null", O_RDWR);
  for (int fd = 0; fd < 3; ++fd)
    if (null_fd >= 0 && null_fd != fd) dup2(null_fd, fd);
  if (rd > 3) close_range(3, static_cast<unsigned>(rd) - 1, 0);
  close_range(static_cast<unsigned>(rd) + 1, ~0U, 0);
  static pid_t groups[kMaxChildren];
  char buf[4096];
  char op = 0;
  pid_t num = 0;
  for (;;) {
    ssize_t n = read(rd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t k = 0; k < n; ++k) {
      const char c = buf[k];
      if (c == '+' || c == '-') {
        op = c;
        num = 0;
      } else if (c >= '0' && c <= '9') {
        num = num * 10 + (c - '0');
      } else if (c == '\n' && num > 0) {
        for (pid_t& g : groups)
          if (op == '+' ? g == 0 : g == num) {
            g = op == '+' ? num : 0;
            break;
          }
      }
    }
  }
  stop_groups(groups, kMaxChildren, false);                          // not our children: init reaps them
  process_detail::stop_marked_processes(run_token, g_stop_grace_s);  // daemons out of every group, found by their mark
  _exit(0);
}

void start_reaper() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;                       // no reaper: children still die with us (PDEATHSIG)
  const char* run_token = process_detail::run_token().c_str();  // made before the fork: the reaper allocates nothing
  pid_t pid = process_detail::fork_for_system_calls_only();
  if (pid == 0) reaper_main(fds[0], run_token);
  close(fds[0]);
  if (pid < 0) {
    close(fds[1]);
    return;
  }
  g_reaper_pid = pid;
  g_reaper_fd = fds[1];
  // A normal exit ends the reaper first (it stops any group still listed, then exits), so it never
  // outlives us as a stray process; only a death by signal or _exit leaves it the work it is for.
  std::atexit([] {
    if (g_reaper_fd < 0 || getpid() == g_reaper_pid) return;
    // Children still running now (a compiler's worker kept for the life of the process) are
    // stopped and reaped here: the reaper cannot reap them, and their zombies would keep it
    // waiting out both grace periods.
    kill_all_children();
    close(g_reaper_fd);
    g_reaper_fd = -1;
    waitpid(g_reaper_pid, nullptr, 0);
  });
}

void tell_reaper(char op, pid_t pid) {
  static std::once_flag once;
  std::call_once(once, start_reaper);
  if (g_reaper_fd < 0) return;
  char line[32];
  int n = snprintf(line, sizeof line, "%c%d\n", op, static_cast<int>(pid));
  if (n > 0) (void)!write(g_reaper_fd, line, static_cast<size_t>(n));  // shorter than PIPE_BUF: one atomic write
}

// ---- the registry of live children, for kill_all_children (async-signal-safe: plain atomics)
std::atomic<pid_t> g_children[kMaxChildren];

void register_child(pid_t pid) {
  tell_reaper('+', pid);
  for (auto& slot : g_children) {
    pid_t empty = 0;
    if (slot.compare_exchange_strong(empty, pid)) return;
  }
}

// ---- orphans we adopted (adopt_orphans): daemons a child left when it exited
std::atomic<bool> g_subreaper{false};
// Held from a child's fork until it is registered, and while orphans are swept: a child just
// forked is ours but not yet in the registry, and a sweep must never take it for an orphan (it
// did, under `reduce --jobs 2`: a check killed as it started).
std::mutex g_spawn_mutex;

// Set by the termination handler before it lists the children to stop. The handler runs on
// whichever thread the signal reached (a heartbeat thread, say) while the others go on: the
// minifier saw its worker die of the handler's SIGTERM and started a new one through srun, which
// the handler's last SIGKILL left running on the cluster. So no child starts once it is set.
std::atomic<bool> g_terminating{false};

// The process is ending (the handler exits it within the grace periods): this thread waits for that.
[[noreturn]] void wait_for_the_end() {
  for (;;) pause();
}
int stop_adopted_orphans_locked();

bool any_child_running() {
  for (auto& slot : g_children)
    if (slot.load() > 0) return true;
  return false;
}

// Our children we did not start (the reaper aside): orphans reparented to us as subreaper.
std::vector<pid_t> adopted_orphans() {
  std::vector<pid_t> found;
  DIR* proc = opendir("/proc");
  if (!proc) return found;
  const pid_t self = getpid();
  while (dirent* e = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0 || pid == g_reaper_pid) continue;
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char stat[512];
    ssize_t n = read(fd, stat, sizeof stat - 1);
    close(fd);
    if (n <= 0) continue;
    stat[n] = '\0';
    // pid (comm) state ppid ...: comm may hold spaces and parentheses, so parse after the last ')'.
    const char* close_paren = strrchr(stat, ')');
    int ppid = 0;
    char state = 0;
    if (close_paren && sscanf(close_paren + 1, " %c %d", &state, &ppid) == 2 && ppid == self) found.push_back(static_cast<pid_t>(pid));
  }
  closedir(proc);
  return found;
}

void unregister_child(pid_t pid) {
  for (auto& slot : g_children) {
    pid_t p = pid;
    if (slot.compare_exchange_strong(p, 0)) break;
  }
  tell_reaper('-', pid);
  if (!g_subreaper) return;
  std::lock_guard<std::mutex> lock(g_spawn_mutex);
  if (!any_child_running()) stop_adopted_orphans_locked();
}

void append_tail(std::string& s, const char* buf, size_t n, size_t limit = kTailLimit) {
  s.append(buf, n);
  if (s.size() > limit) s.erase(0, s.size() - limit);
}

// The child's environment: ours with spec's changes, and this process's mark (run_mark.h).
std::vector<std::string> build_env(const ProcessSpec& spec) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    std::string key = kv.substr(0, kv.find('='));
    bool drop = spec.env_set.count(key) > 0 || key == process_detail::kRunMarkVariable;
    for (auto& u : spec.env_unset) drop |= (u == key);
    if (!drop) env.push_back(kv);
  }
  for (auto& [k, v] : spec.env_set)
    if (k != process_detail::kRunMarkVariable) env.push_back(k + "=" + v);
  env.push_back(process_detail::run_mark_entry());
  return env;
}

bp::filesystem::path resolve_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  auto p = bp::environment::find_executable(name);
  if (p.empty()) throw std::runtime_error("cannot start '" + name + "': not found in PATH");
  return p;
}

void fill_status(ProcessResult& r, int status) {
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
}

Clock::time_point deadline_after(double seconds) {
  if (seconds <= 0) return Clock::time_point{};
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// A descriptor closed when it goes out of scope.
struct Fd {
  int fd = -1;
  Fd() = default;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// A pipe between us and a child: the child's end goes to `child_end` (its stdin when
// `child_reads`), ours is returned. Both close-on-exec: another thread's child must never inherit
// one (it would hold the pipe open); the child's end becomes its fd 0, 1 or 2 by dup2, which
// clears the flag.
int open_pipe(Fd& child_end, bool child_reads) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw std::runtime_error(std::string("cannot create a pipe: ") + std::strerror(errno));
  child_end.fd = p[child_reads ? 0 : 1];
  return p[child_reads ? 1 : 0];
}

std::string cannot_start_message(const std::string& program, int error) { return "cannot start '" + program + "': " + std::strerror(error); }

// One started child with its pipes (stdin, stdout, stderr), registered until reaped.
struct Started {
  std::vector<std::string> env;
  std::vector<const char*> envp;
  asio::writable_pipe in;
  asio::readable_pipe out, err;
  pid_t pid = -1;
  bool reaped = false;
  bool leader_killed = false;  // by us, with SIGKILL: its group gets the grace period to end
  int status = 0;

  Started(asio::io_context& ctx, const ProcessSpec& spec, bool pipe_stdin) : env(build_env(spec)), in(ctx), out(ctx), err(ctx) {
    if (spec.argv.empty()) throw std::invalid_argument("run_process: empty argv");
    for (auto& e : env) envp.push_back(e.c_str());
    envp.push_back(nullptr);
    const std::string exe = resolve_program(spec.argv[0]).string();
    std::vector<const char*> argv = {exe.c_str()};
    for (size_t k = 1; k < spec.argv.size(); ++k) argv.push_back(spec.argv[k].c_str());
    argv.push_back(nullptr);
    // The child's stdin: a pipe we write, or /dev/null; its stdout and stderr: pipes we read, or
    // ours. Its ends are closed here once it has its copies.
    Fd child_in, child_out, child_err;
    if (pipe_stdin) in.assign(open_pipe(child_in, true));
    else if ((child_in.fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
      throw std::runtime_error(std::string("cannot open /dev/null: ") + std::strerror(errno));
    if (!spec.inherit_output) out.assign(open_pipe(child_out, false)), err.assign(open_pipe(child_err, false));
    process_detail::SpawnRequest request;
    request.path = exe.c_str();
    request.argv = argv.data();
    request.envp = envp.data();
    request.stdio[0] = child_in.fd;
    request.stdio[1] = child_out.fd;
    request.stdio[2] = child_err.fd;
    request.cwd = spec.cwd.c_str();
    request.memory_limit_mb = spec.memory_limit_mb;
    ::signal(SIGPIPE, SIG_IGN);                           // a child that exits early must not kill us when we write to it
    std::lock_guard<std::mutex> spawning(g_spawn_mutex);  // until registered (see g_spawn_mutex)
    if (g_terminating.load()) wait_for_the_end();
    int error = 0;
    pid = process_detail::spawn_child(request, &error);
    if (pid < 0) throw std::runtime_error(cannot_start_message(spec.argv[0], error));
    setpgid(pid, pid);  // also from here, so a kill right after the start reaches the group
    register_child(pid);
    // Registered before the flag is read, and the handler sets it before it reads the registry:
    // either the handler stops this child, or this thread sees the flag and stops it here.
    if (g_terminating.load()) {
      ::kill(-pid, SIGTERM);
      wait_for_the_end();
    }
  }
  ~Started() { stop(); }
  // Reaps the child, waiting at most until `deadline` (a zero time point: no limit) before
  // stopping it (SIGTERM to its group, then SIGKILL to it after the grace period). Returns false
  // when it had to be stopped for the deadline. Then kills what is left of the group
  // (grandchildren); after a SIGKILL of the child, only once the group had the grace period to end.
  bool wait(Clock::time_point deadline) {
    bool in_time = true;
    Clock::time_point kill_at{};  // after SIGTERM: when SIGKILL follows
    while (!reaped) {
      const bool limited = deadline != Clock::time_point{} || kill_at != Clock::time_point{};
      pid_t r = waitpid(pid, &status, limited ? WNOHANG : 0);
      if (r == pid) {
        reaped = true;
      } else if (r < 0 && errno != EINTR) {
        reaped = true;  // not ours any more (ECHILD): nothing to wait for
      } else if (r == 0 && kill_at != Clock::time_point{} && Clock::now() >= kill_at) {
        kill_leader();
        kill_at = Clock::time_point{};
      } else if (r == 0 && deadline != Clock::time_point{} && Clock::now() >= deadline) {
        in_time = false;
        ::kill(-pid, SIGTERM);
        kill_at = deadline_after(g_stop_grace_s);
        deadline = Clock::time_point{};
      } else if (r == 0) {
        usleep(1000);
      }
    }
    if (leader_killed) wait_while_any_group_lives(&pid, 1, false);
    ::kill(-pid, SIGKILL);
    unregister_child(pid);
    return in_time;
  }
  // SIGKILL to the child alone (see stop_groups: the rest of its group may have a job to cancel).
  void kill_leader() {
    ::kill(pid, SIGKILL);
    leader_killed = true;
  }
  // Stops the child now: SIGTERM to its group, SIGKILL after the grace period.
  void stop() {
    if (!reaped) wait(Clock::now());
  }
  // Reaps the child if it has exited (its group is left alone: output may still be draining).
  void reap_if_exited() {
    if (reaped) return;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) reaped = true;
  }
};

}  // namespace

ProcessResult run_process(const ProcessSpec& spec) {
  auto t0 = Clock::now();
  auto deadline = deadline_after(spec.timeout_s);
  asio::io_context ctx;
  Started s(ctx, spec, !spec.stdin_text.empty());
  ProcessResult r;
  std::array<char, 65536> obuf{}, ebuf{};
  int open = spec.inherit_output ? 0 : 2;
  asio::steady_timer timer(ctx), exit_watch(ctx);
  // Reads until EOF; output ends when every writer (the child, a grandchild holding the pipe) is
  // gone, and then nothing but the timer is left to wait for.
  std::function<void(asio::readable_pipe&, std::array<char, 65536>&, std::string&)> drain = [&](auto& pipe, auto& buf, std::string& to) {
    pipe.async_read_some(asio::buffer(buf), [&](boost::system::error_code ec, size_t n) {
      if (ec) {
        if (--open == 0) timer.cancel(), exit_watch.cancel();
        return;
      }
      append_tail(to, buf.data(), n, spec.max_output_bytes);
      drain(pipe, buf, to);
    });
  };
  if (!spec.inherit_output) {
    drain(s.out, obuf, r.out);
    drain(s.err, ebuf, r.err);
  }
  if (!spec.stdin_text.empty()) asio::async_write(s.in, asio::buffer(spec.stdin_text), [&](boost::system::error_code, size_t) { s.in.close(); });
  // At the deadline the child is stopped: SIGTERM to its group, SIGKILL to it after the grace
  // period (Started::wait then ends the group), and a moment later reading ends even if something
  // still holds the pipes.
  std::function<void(int)> stop_step = [&](int step) {
    timer.async_wait([&, step](boost::system::error_code ec) {
      if (ec) return;
      if (step == 0) r.timed_out = true;
      if (step == 2) return ctx.stop();
      if (step == 0) ::kill(-s.pid, SIGTERM);
      else s.kill_leader();
      timer.expires_after(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(step == 0 ? g_stop_grace_s : 1.0)));
      stop_step(step + 1);
    });
  };
  if (spec.timeout_s > 0 && open > 0) {
    timer.expires_at(deadline);
    stop_step(0);
  }
  // Reading ends a quarter second after the child itself exits, not at end-of-file: a daemon it left
  // behind (a build server) may hold the pipes for ever.
  std::function<void()> watch_exit = [&] {
    exit_watch.expires_after(std::chrono::milliseconds(s.reaped ? 250 : 20));
    exit_watch.async_wait([&](boost::system::error_code ec) {
      if (ec || open == 0) return;
      if (s.reaped) return ctx.stop();  // what it wrote before exiting had a quarter second to arrive
      s.reap_if_exited();
      watch_exit();
    });
  };
  if (open > 0) watch_exit();
  ctx.run();
  if (!s.wait(deadline)) r.timed_out = true;
  fill_status(r, s.status);
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

struct LineChild::Impl {
  asio::io_context ctx;
  std::optional<Started> s;
  std::string out_buf, err_tail;
  bool eof = false, timed_out = false;
};

LineChild::LineChild(const ProcessSpec& spec) : impl_(std::make_unique<Impl>()) {
  impl_->s.emplace(impl_->ctx, spec, true);
  int efd = impl_->s->err.native_handle();
  fcntl(efd, F_SETFL, fcntl(efd, F_GETFL) | O_NONBLOCK);
}

LineChild::~LineChild() { finish(); }

void LineChild::finish() {
  Started& s = *impl_->s;
  if (s.in.is_open()) s.in.close();  // end of input: a worker's signal to finish
  if (!s.reaped) s.wait(deadline_after(g_stop_grace_s));
}

bool LineChild::write_line(const std::string& line) {
  std::string data = line + "\n";
  boost::system::error_code ec;
  asio::write(impl_->s->in, asio::buffer(data), ec);
  return !ec;
}

std::optional<std::string> LineChild::read_line(double timeout_s) {
  impl_->timed_out = false;
  auto t0 = Clock::now();
  int ofd = impl_->s->out.native_handle(), efd = impl_->s->err.native_handle();
  char buf[65536];
  for (;;) {
    auto nl = impl_->out_buf.find('\n');
    if (nl != std::string::npos) {
      std::string line = impl_->out_buf.substr(0, nl);
      impl_->out_buf.erase(0, nl + 1);
      return line;
    }
    if (impl_->eof) return std::nullopt;
    double left = timeout_s - std::chrono::duration<double>(Clock::now() - t0).count();
    if (timeout_s > 0 && left <= 0) {
      impl_->timed_out = true;
      return std::nullopt;
    }
    pollfd fds[2] = {{ofd, POLLIN, 0}, {efd, POLLIN, 0}};
    int wait_ms = timeout_s > 0 ? std::max(1, static_cast<int>(left * 1000)) : 1000;
    if (poll(fds, 2, std::min(wait_ms, 1000)) < 0 && errno != EINTR) return std::nullopt;
    if (fds[1].revents & (POLLIN | POLLHUP)) {
      ssize_t n = read(efd, buf, sizeof buf);
      if (n > 0) append_tail(impl_->err_tail, buf, static_cast<size_t>(n));
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = read(ofd, buf, sizeof buf);
      if (n <= 0) impl_->eof = true;
      else impl_->out_buf.append(buf, static_cast<size_t>(n));
    }
  }
}

bool LineChild::timed_out() const { return impl_->timed_out; }

bool LineChild::alive() {
  Started& s = *impl_->s;
  if (s.reaped) return false;
  pid_t r = waitpid(s.pid, &s.status, WNOHANG);
  if (r == s.pid || (r < 0 && errno == ECHILD)) {
    s.reaped = true;
    ::kill(-s.pid, SIGKILL);
    unregister_child(s.pid);
    return false;
  }
  return true;
}

void LineChild::kill() {
  if (!impl_->s->reaped) ::kill(-impl_->s->pid, SIGKILL);
}

void LineChild::stop() { impl_->s->stop(); }

ProcessResult LineChild::wait_result() {
  Started& s = *impl_->s;
  s.wait(Clock::time_point{});
  ProcessResult r;
  char buf[65536];
  ssize_t n;
  int efd = s.err.native_handle();
  while (s.err.is_open() && (n = read(efd, buf, sizeof buf)) > 0) append_tail(impl_->err_tail, buf, static_cast<size_t>(n));
  fill_status(r, s.status);
  r.err = impl_->err_tail;
  return r;
}

std::string LineChild::stderr_tail() {
  Started& s = *impl_->s;
  char buf[65536];
  ssize_t n;
  int efd = s.err.native_handle();  // non-blocking: what is there now
  while (s.err.is_open() && (n = read(efd, buf, sizeof buf)) > 0) append_tail(impl_->err_tail, buf, static_cast<size_t>(n));
  return impl_->err_tail;
}

int LineChild::pid() const { return impl_->s->pid; }

int reaper_pid() { return g_reaper_pid; }

void adopt_orphans() {
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) == 0) g_subreaper = true;
}

int stop_adopted_orphans() {
  std::lock_guard<std::mutex> lock(g_spawn_mutex);
  return stop_adopted_orphans_locked();
}

namespace {
int stop_adopted_orphans_locked() {
  int stopped = 0;
  for (pid_t pid : adopted_orphans()) {
    // Not ours to spare: a daemon a finished child left. Its own group too, where it leads one.
    if (getpgid(pid) == pid) ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    ++stopped;
  }
  return stopped;
}
}  // namespace

namespace process_detail {

std::unique_lock<std::mutex> lock_spawning() { return std::unique_lock<std::mutex>(g_spawn_mutex); }

void wait_for_the_end_if_terminating() {
  if (g_terminating.load()) wait_for_the_end();
}

void register_started(pid_t pid) {
  register_child(pid);
  // As in Started: either the handler saw this child, or this thread sees the flag.
  if (g_terminating.load()) {
    ::kill(-pid, SIGTERM);
    wait_for_the_end();
  }
}

void unregister_started(pid_t pid) { unregister_child(pid); }

}  // namespace process_detail

void kill_all_children() {
  pid_t groups[kMaxChildren];
  for (int k = 0; k < kMaxChildren; ++k) groups[k] = g_children[k].load();
  stop_groups(groups, kMaxChildren, true);  // the process ends: no other thread needs their status
}

namespace {
// The message on_termination_signal prints: set outside the handler, only read inside it.
std::atomic<const std::string*> g_termination_message{nullptr};

void on_signal(int sig) {
  g_terminating.store(true);  // before the children are listed: see Started
  kill_all_children();
  if (const std::string* m = g_termination_message.load()) (void)!write(2, m->data(), m->size());
  _exit(128 + sig);
}
}  // namespace

void on_termination_signal(const std::string& message) {
  // Every message stays alive to the end (a handler may be reading an earlier one right now);
  // they are kept here, reachable, rather than leaked.
  static std::mutex keep_mutex;
  static std::vector<std::unique_ptr<const std::string>> kept;
  std::lock_guard<std::mutex> lock(keep_mutex);
  kept.push_back(std::make_unique<const std::string>(message));
  g_termination_message.store(kept.back().get());
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

std::string shell_quote_command(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
  auto quote = [](const std::string& s) {
    if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,@%+") == std::string::npos) return s;
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  };
  std::string out;
  for (auto& [k, v] : env) out += k + "=" + quote(v) + " ";
  for (size_t i = 0; i < argv.size(); ++i) out += (i ? " " : "") + quote(argv[i]);
  return out;
}

}  // namespace reprokit
