// self_executable (see self_executable.h).
#include "reprokit/process/self_executable.h"

#include <cstdlib>
#include <filesystem>

namespace reprokit {

std::string self_executable() {
  if (const char* e = std::getenv("REPROKIT_EXE"); e && *e) return e;
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && p.filename() == "reprokit") return p.string();
  return "reprokit";
}

}  // namespace reprokit
