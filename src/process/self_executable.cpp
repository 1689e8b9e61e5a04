// self_executable (see self_executable.h).
#include "reprokit/process/self_executable.h"

#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

namespace reprokit {

std::string self_executable() {
  if (const char* e = std::getenv("REPROKIT_EXE"); e && *e) return e;
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && p.filename() == "reprokit") return p.string();
  // Rebuilt while running (the link reads ".../reprokit (deleted)"): this process's own image stays
  // reachable through /proc while it lives, which is while it starts children; "reprokit" on PATH
  // could be another build, or none (a fuzz campaign stopped at its next graph).
  if (!ec && p.filename() == "reprokit (deleted)") return "/proc/" + std::to_string(::getpid()) + "/exe";
  return "reprokit";
}

}  // namespace reprokit
