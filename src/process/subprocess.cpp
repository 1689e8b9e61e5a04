// Child processes (see subprocess.h). Implemented with fork/exec and poll: each child runs in its
// own process group (so a timeout kills grandchildren too), with optional RLIMIT_AS, and its
// output is drained concurrently so a chatty child never blocks on a full pipe.
#include "reprokit/process/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace reprokit {

namespace {

constexpr size_t kTailLimit = 1 << 20;

using Clock = std::chrono::steady_clock;

void append_tail(std::string& s, const char* buf, size_t n) {
  s.append(buf, n);
  if (s.size() > kTailLimit) s.erase(0, s.size() - kTailLimit);
}

std::vector<std::string> build_env(const ProcessSpec& spec) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    std::string key = kv.substr(0, kv.find('='));
    bool drop = spec.env_set.count(key) > 0;
    for (auto& u : spec.env_unset) drop |= (u == key);
    if (!drop) env.push_back(kv);
  }
  for (auto& [k, v] : spec.env_set) env.push_back(k + "=" + v);
  return env;
}

struct Spawned {
  pid_t pid = -1;
  int in = -1, out = -1, err = -1;
};

// Forks and execs spec.argv in a new process group with pipes on stdin/stdout/stderr.
Spawned spawn(const ProcessSpec& spec) {
  if (spec.argv.empty()) throw std::invalid_argument("run_process: empty argv");
  int pin[2], pout[2], perr[2], pexec[2];
  if (pipe(pin) || pipe(pout) || pipe(perr) || pipe2(pexec, O_CLOEXEC)) throw std::runtime_error(std::string("pipe: ") + strerror(errno));
  auto env = build_env(spec);
  std::vector<char*> argv, envp;
  for (auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    dup2(pin[0], 0);
    dup2(pout[1], 1);
    dup2(perr[1], 2);
    for (int fd : {pin[0], pin[1], pout[0], pout[1], perr[0], perr[1], pexec[0]}) close(fd);
    if (spec.memory_limit_mb > 0) {
      rlimit rl{static_cast<rlim_t>(spec.memory_limit_mb) << 20, static_cast<rlim_t>(spec.memory_limit_mb) << 20};
      setrlimit(RLIMIT_AS, &rl);
    }
    if (!spec.cwd.empty() && chdir(spec.cwd.c_str()) != 0) {
      int e = errno;
      (void)!write(pexec[1], &e, sizeof e);
      _exit(127);
    }
    environ = envp.data();
    execvp(argv[0], argv.data());
    int e = errno;
    (void)!write(pexec[1], &e, sizeof e);
    _exit(127);
  }
  setpgid(pid, pid);  // also from the parent, so a kill right after fork reaches the group
  close(pin[0]);
  close(pout[1]);
  close(perr[1]);
  close(pexec[1]);
  int child_errno = 0;
  ssize_t n = read(pexec[0], &child_errno, sizeof child_errno);
  close(pexec[0]);
  if (n == sizeof child_errno) {
    waitpid(pid, nullptr, 0);
    close(pin[1]);
    close(pout[0]);
    close(perr[0]);
    throw std::runtime_error("cannot start '" + spec.argv[0] + "': " + strerror(child_errno));
  }
  signal(SIGPIPE, SIG_IGN);
  return {pid, pin[1], pout[0], perr[0]};
}

void fill_status(ProcessResult& r, int status) {
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
}

}  // namespace

ProcessResult run_process(const ProcessSpec& spec) {
  auto t0 = Clock::now();
  Spawned s = spawn(spec);
  ProcessResult r;
  // Feed stdin without blocking, while draining stdout/stderr.
  size_t written = 0;
  if (spec.stdin_text.empty()) { close(s.in); s.in = -1; }
  else fcntl(s.in, F_SETFL, O_NONBLOCK);
  bool out_open = true, err_open = true;
  char buf[65536];
  while (out_open || err_open) {
    pollfd fds[3];
    int nf = 0;
    if (out_open) fds[nf++] = {s.out, POLLIN, 0};
    if (err_open) fds[nf++] = {s.err, POLLIN, 0};
    if (s.in >= 0) fds[nf++] = {s.in, POLLOUT, 0};
    int wait_ms = 100;
    if (spec.timeout_s > 0) {
      double left = spec.timeout_s - std::chrono::duration<double>(Clock::now() - t0).count();
      if (left <= 0) {
        r.timed_out = true;
        kill(-s.pid, SIGKILL);
        break;
      }
      wait_ms = std::min(100, static_cast<int>(left * 1000) + 1);
    }
    if (poll(fds, static_cast<nfds_t>(nf), wait_ms) < 0 && errno != EINTR) break;
    for (int i = 0; i < nf; ++i) {
      if (fds[i].fd == s.in && (fds[i].revents & (POLLOUT | POLLERR | POLLHUP))) {
        ssize_t w = write(s.in, spec.stdin_text.data() + written, spec.stdin_text.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if (w < 0 || written == spec.stdin_text.size()) { close(s.in); s.in = -1; }
        continue;
      }
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      bool is_out = fds[i].fd == s.out;
      if (n <= 0) (is_out ? out_open : err_open) = false;
      else append_tail(is_out ? r.out : r.err, buf, static_cast<size_t>(n));
    }
  }
  if (s.in >= 0) close(s.in);
  close(s.out);
  close(s.err);
  int status = 0;
  if (r.timed_out) kill(-s.pid, SIGKILL);
  waitpid(s.pid, &status, 0);
  if (!r.timed_out) kill(-s.pid, SIGKILL);  // grandchildren left behind by the child
  fill_status(r, status);
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

struct LineChild::Impl {
  Spawned s;
  std::string out_buf, err_tail;
  bool eof = false, timed_out = false, reaped = false;
  int status = 0;
};

LineChild::LineChild(const ProcessSpec& spec) : impl_(std::make_unique<Impl>()) {
  impl_->s = spawn(spec);
  fcntl(impl_->s.err, F_SETFL, O_NONBLOCK);
}

LineChild::~LineChild() {
  kill();
  wait_result();
}

bool LineChild::write_line(const std::string& line) {
  std::string data = line + "\n";
  size_t off = 0;
  while (off < data.size()) {
    ssize_t w = write(impl_->s.in, data.data() + off, data.size() - off);
    if (w <= 0) return false;
    off += static_cast<size_t>(w);
  }
  return true;
}

std::optional<std::string> LineChild::read_line(double timeout_s) {
  impl_->timed_out = false;
  auto t0 = Clock::now();
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
    pollfd fds[2] = {{impl_->s.out, POLLIN, 0}, {impl_->s.err, POLLIN, 0}};
    int wait_ms = timeout_s > 0 ? std::max(1, static_cast<int>(left * 1000)) : 1000;
    if (poll(fds, 2, std::min(wait_ms, 1000)) < 0 && errno != EINTR) return std::nullopt;
    if (fds[1].revents & (POLLIN | POLLHUP)) {
      ssize_t n = read(impl_->s.err, buf, sizeof buf);
      if (n > 0) append_tail(impl_->err_tail, buf, static_cast<size_t>(n));
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = read(impl_->s.out, buf, sizeof buf);
      if (n <= 0) impl_->eof = true;
      else impl_->out_buf.append(buf, static_cast<size_t>(n));
    }
  }
}

bool LineChild::timed_out() const { return impl_->timed_out; }

bool LineChild::alive() {
  if (impl_->reaped) return false;
  int status = 0;
  pid_t r = waitpid(impl_->s.pid, &status, WNOHANG);
  if (r == impl_->s.pid) {
    impl_->reaped = true;
    impl_->status = status;
    return false;
  }
  return true;
}

void LineChild::kill() {
  if (!impl_->reaped) ::kill(-impl_->s.pid, SIGKILL);
}

ProcessResult LineChild::wait_result() {
  ProcessResult r;
  if (!impl_->reaped) {
    waitpid(impl_->s.pid, &impl_->status, 0);
    impl_->reaped = true;
    ::kill(-impl_->s.pid, SIGKILL);
  }
  char buf[65536];
  ssize_t n;
  while ((n = read(impl_->s.err, buf, sizeof buf)) > 0) append_tail(impl_->err_tail, buf, static_cast<size_t>(n));
  for (int* fd : {&impl_->s.in, &impl_->s.out, &impl_->s.err})
    if (*fd >= 0) { close(*fd); *fd = -1; }
  fill_status(r, impl_->status);
  r.err = impl_->err_tail;
  return r;
}

int LineChild::pid() const { return impl_->s.pid; }

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
