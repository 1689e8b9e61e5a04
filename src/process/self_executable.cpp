// self_executable (see self_executable.h).
#include "reprokit/process/self_executable.h"

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

namespace reprokit {

namespace {
std::atomic<bool> g_is_reprokit{false};
}  // namespace

void this_process_is_reprokit() { g_is_reprokit = true; }

std::string self_executable() {
  if (const char* e = std::getenv("REPROKIT_EXE"); e && *e) return e;
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "reprokit";
  const std::string file = p.filename().string();
  constexpr std::string_view kDeleted = " (deleted)";
  const bool deleted = file.size() > kDeleted.size() && file.ends_with(kDeleted);
  const std::string name = deleted ? file.substr(0, file.size() - kDeleted.size()) : file;
  if (name != "reprokit" && !g_is_reprokit) return "reprokit";
  // Rebuilt while running (the link reads ".../reprokit (deleted)"): this process's own image stays
  // reachable through /proc while it lives, which is while it starts children; "reprokit" on PATH
  // could be another build, or none (a fuzz campaign stopped at its next graph).
  return deleted ? "/proc/" + std::to_string(::getpid()) + "/exe" : p.string();
}

}  // namespace reprokit
