// What starting a child costs as the parent grows (a harness holding a model's weights, a
// minifier holding its candidates): run_process (clone with CLONE_VM, spawn.cpp) against plain
// fork + execve + waitpid (how children started before: fork copies the parent's page tables),
// side by side in one run, from a parent of each size with its memory touched.
// Usage: bench_spawn [--launches N]
#include "bench_options.h"
#include <fmt/core.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "reprokit/process/subprocess.h"

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void fork_exec_true() {
  pid_t pid = fork();
  if (pid == 0) {
    char* const argv[] = {const_cast<char*>("/bin/true"), nullptr};
    execv("/bin/true", argv);
    _exit(127);
  }
  if (pid > 0)
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {}
}

}  // namespace

int main(int argc, char** argv) {
  const reprokit::bench::BenchOptions options(argc, argv, "bench_spawn", {{"--launches", "N", "children started; default 200"}});
  const int launches = options.number("--launches", 200, 1);
  reprokit::ProcessSpec spec;
  spec.argv = {"/bin/true"};
  fmt::print("{:>12} {:>16} {:>16} {:>8}\n", "parent MiB", "run_process ms", "fork+exec ms", "ratio");
  std::vector<char> ballast;
  for (size_t mib : {0, 256, 1024}) {
    ballast.assign(mib << 20, 1);  // touched: its pages are mapped, as a loaded model's are
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < launches; ++i) reprokit::run_process(spec);
    const double spawn_ms = ms_since(t0) / launches;
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < launches; ++i) fork_exec_true();
    const double fork_ms = ms_since(t0) / launches;
    fmt::print("{:>12} {:>16.3f} {:>16.3f} {:>8.1f}\n", mib, spawn_ms, fork_ms, fork_ms / spawn_ms);
  }
}
