// Where the compile cache lives, and whether it is safe to load code from it. The cache holds
// objects and libraries that reprokit links and dlopens: whoever can write the directory chooses
// the code this process runs. So the directory must belong to this user and be writable by no one
// else; one that is not is refused, naming the fix, before anything in it is read or written.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "cpp_toolchain.h"
#include "reprokit/support/errors.h"

namespace reprokit {

namespace fs = std::filesystem;

std::string default_cache_dir(const std::string& configured) {
  if (!configured.empty()) return configured;
  if (const char* e = std::getenv("REPRO_CACHE_DIR"); e && *e) return e;
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/reprokit";
  // Without a home, a directory of this user's own under the shared temporary directory.
  return (fs::temp_directory_path() / fmt::format("reprokit-cache-{}", ::geteuid())).string();
}

namespace {

// Refuses a cache directory that is not a real directory of this user's, writable by them alone.
void check_private_dir(const fs::path& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0)
    throw UserError(fmt::format("cannot use the compile cache directory '{}': {}", dir.string(), std::strerror(errno)));
  const std::string fix =
      "reprokit loads compiled code from it, so it must be a directory of yours that no one else can write "
      "(set REPRO_CACHE_DIR to another, or fix it: chown, chmod go-w)";
  if (S_ISLNK(st.st_mode)) throw UserError(fmt::format("the compile cache directory '{}' is a symbolic link: {}", dir.string(), fix));
  if (!S_ISDIR(st.st_mode)) throw UserError(fmt::format("the compile cache '{}' is not a directory: {}", dir.string(), fix));
  if (st.st_uid != ::geteuid())
    throw UserError(
        fmt::format("the compile cache directory '{}' belongs to user {}, not to you ({}): {}", dir.string(), st.st_uid, ::geteuid(), fix));
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    throw UserError(
        fmt::format("the compile cache directory '{}' is writable by {}: {}", dir.string(), (st.st_mode & S_IWOTH) ? "everyone" : "its group", fix));
}

// Makes `dir` (mode 0700) if it is missing, with its parents as create_directories makes them.
void make_private_dir(const fs::path& dir) {
  std::error_code ec;
  if (!dir.parent_path().empty()) fs::create_directories(dir.parent_path(), ec);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw UserError(fmt::format("cannot create the compile cache directory '{}': {}", dir.string(), std::strerror(errno)));
}

}  // namespace

void open_cache_dir(const std::string& cache_dir) {
  const fs::path dir(cache_dir);
  make_private_dir(dir);
  check_private_dir(dir);
  for (const char* sub : {"units", "tmp"}) {
    make_private_dir(dir / sub);
    check_private_dir(dir / sub);
  }
}

namespace {

// Why `dir` cannot hold code this process links ("" when it can): it must be a real directory,
// this user's or root's (an installed library), that neither its group nor others can write.
std::string untrusted_because(const fs::path& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return std::strerror(errno);
  if (S_ISLNK(st.st_mode)) return "it is a symbolic link";
  if (!S_ISDIR(st.st_mode)) return "it is not a directory";
  if (st.st_uid != ::geteuid() && st.st_uid != 0) return fmt::format("it belongs to user {}, neither you ({}) nor root", st.st_uid, ::geteuid());
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return fmt::format("it is writable by {}", (st.st_mode & S_IWOTH) ? "everyone" : "its group");
  return "";
}

}  // namespace

fs::path kernels_library_dir() {
  const char* e = std::getenv("REPRO_KERNELS_LIBRARY");
  const bool named = e && *e;
  if (named && std::string(e) == "off") return {};
  const fs::path dir = named ? fs::path(e) : fs::path(REPROKIT_KERNELS_DIR);
  if (dir.empty()) return {};
  for (const fs::path& d : {dir, dir / "units"}) {
    const std::string why = untrusted_because(d);
    if (why.empty()) continue;
    if (!named) return {};  // the build's own, moved or changed: units are compiled as before
    throw UserError(
        fmt::format("cannot use the kernels library '{}' (REPRO_KERNELS_LIBRARY): {}: reprokit links code from it "
                    "(set REPRO_KERNELS_LIBRARY=off, or to a directory of yours that no one else can write)",
                    d.string(), why));
  }
  return dir;
}

}  // namespace reprokit
