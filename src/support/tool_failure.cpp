// Tool failures inside checks (see tool_failure.h).
#include "reprokit/support/tool_failure.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string_view>

namespace reprokit {

namespace {

int g_log_fd = -1;
char g_command[64] = "reprokit";

void write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n <= 0) return;
    text.remove_prefix(static_cast<size_t>(n));
  }
}

// Async-signal-safe: the record, then the default action, so the caller still sees the signal.
void on_fatal_signal(int sig) {
  if (g_log_fd >= 0) {
    char digits[12];
    int n = 0, v = sig;
    do digits[n++] = static_cast<char>('0' + v % 10);
    while ((v /= 10) > 0 && n < 11);
    write_all(g_log_fd, "reprokit ");
    write_all(g_log_fd, g_command);
    write_all(g_log_fd, " died of signal ");
    while (n > 0) write_all(g_log_fd, std::string_view(&digits[--n], 1));
    write_all(g_log_fd, "\n");
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

void report_own_failures_to_caller(const std::string& command) {
  const char* path = std::getenv(kToolFailureLogVariable);
  if (!path || !*path || g_log_fd >= 0) return;
  g_log_fd = ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (g_log_fd < 0) return;  // nobody to tell: the exit status is all the caller gets
  std::strncpy(g_command, command.c_str(), sizeof g_command - 1);
  struct sigaction sa {};
  sa.sa_handler = on_fatal_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND | SA_NODEFER;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::sigaction(sig, &sa, nullptr);
}

void record_own_failure(const std::string& message) {
  if (g_log_fd < 0) return;
  write_all(g_log_fd, "reprokit " + std::string(g_command) + ": " + message + "\n");
}

std::map<std::string, std::string> tool_failure_environment(const std::string& log_path, const std::string& reprokit_exe) {
  std::map<std::string, std::string> env = {{kToolFailureLogVariable, log_path}};
  if (!reprokit_exe.empty()) env.emplace("REPROKIT_EXE", reprokit_exe);
  return env;
}

std::string recorded_tool_failures(const std::string& log_path) {
  std::ifstream in(log_path, std::ios::binary);  // no file: nothing recorded
  std::string text(4096, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

}  // namespace reprokit
