// Files (see files.h): open-then-fstat so a FIFO never blocks and a swapped file is caught,
// openat with O_NOFOLLOW component by component, temporary files made with O_EXCL.
#include "reprokit/support/files.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>
#include <set>

#include "reprokit/support/errors.h"
#include "reprokit/support/escape_controls.h"

namespace reprokit {

namespace {

// The paths these messages quote may hold a name read from a file (a model's input names name
// its .npy files): escaped.
[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw UserError(fmt::format("cannot read '{}': {}", escape_controls(path), why));
}
[[noreturn]] void fail_write(const std::string& path, const std::string& why) {
  throw UserError(fmt::format("cannot write '{}': {}", escape_controls(path), why));
}

std::string errno_text(int e) {
  if (e == ELOOP) return "a symlink (or a symlink loop), which reprokit does not follow here";
  if (e == ENOENT) return "no such file or directory";
  if (e == EACCES) return "permission denied";
  if (e == ENOTDIR) return "a path component is not a directory";
  return strerror(e);
}

// Reads an open descriptor that must be a regular file of at most max_bytes; closes it.
std::string read_fd(int fd, const std::string& path, size_t max_bytes) {
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    fail(path, errno_text(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    fail(path, S_ISDIR(st.st_mode)    ? "it is a directory, not a file"
               : S_ISFIFO(st.st_mode) ? "it is a FIFO, not a regular file"
                                      : "it is not a regular file (a device?)");
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    close(fd);
    fail(path, fmt::format("it is {} bytes, more than the limit of {} bytes", st.st_size, max_bytes));
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::string data;
  data.resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < data.size()) {
    ssize_t n = ::read(fd, data.data() + got, data.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      close(fd);
      fail(path, errno_text(e));
    }
    if (n == 0) break;  // it shrank while we read
    got += static_cast<size_t>(n);
  }
  data.resize(got);
  close(fd);
  return data;
}

std::string unique_suffix() {
  static std::mt19937_64 rng{std::random_device{}() ^ static_cast<uint64_t>(getpid())};
  return fmt::format("{:016x}", rng());
}

}  // namespace

std::string write_unique(const Dir& dir, const std::string& stem, const std::string& ext, std::string_view data) {
  for (int k = 1;; ++k) {
    std::string name = k == 1 ? stem + "." + ext : fmt::format("{}-{}.{}", stem, k, ext);
    if (dir.write_new(name, data)) return name;
  }
}

namespace {
[[noreturn]] void fail_exists(const std::string& path, std::string_view what) {
  throw UserError(fmt::format("'{}' already exists: {} never overwrites a file (remove it or write elsewhere)", escape_controls(path), what));
}
}  // namespace

void refuse_existing(const Dir& dir, const std::vector<std::string>& rels, std::string_view what) {
  for (const auto& rel : rels)
    if (dir.exists(rel)) fail_exists(dir.path(rel), what);
}

void write_new_file(const Dir& dir, const std::string& name, std::string_view data, std::string_view what) {
  if (!dir.write_new(name, data)) fail_exists(dir.path(name), what);
}

std::vector<std::string> relative_components(const std::string& rel, std::string_view what) {
  if (rel.empty()) throw UserError(fmt::format("{}: empty path", what));
  if (rel[0] == '/') throw UserError(fmt::format("{}: '{}' is an absolute path; it must stay inside the directory", what, rel));
  std::vector<std::string> parts;
  size_t pos = 0;
  while (pos <= rel.size()) {
    size_t slash = rel.find('/', pos);
    std::string c = rel.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
    if (c == "..") throw UserError(fmt::format("{}: '{}' leaves the directory (\"..\")", what, rel));
    if (!c.empty() && c != ".") parts.push_back(c);
    if (slash == std::string::npos) break;
    pos = slash + 1;
  }
  if (parts.empty()) throw UserError(fmt::format("{}: '{}' names no file", what, rel));
  return parts;
}

std::string read_file(const std::string& path, size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail(path, errno_text(errno));
  return read_fd(fd, path, max_bytes);
}

Dir Dir::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail(path, errno == ENOTDIR ? "is not a directory" : errno_text(errno));
  return Dir(fd, path);
}

Dir Dir::create(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec && !std::filesystem::is_directory(path)) fail_write(path, "cannot create the directory: " + ec.message());
  return open(path);
}

Dir::Dir(Dir&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)) { o.fd_ = -1; }

Dir& Dir::operator=(Dir&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) close(fd_);
    fd_ = o.fd_;
    path_ = std::move(o.path_);
    o.fd_ = -1;
  }
  return *this;
}

Dir::~Dir() {
  if (fd_ >= 0) close(fd_);
}

Dir Dir::sub(const std::string& rel, bool create) const {
  int fd = dup(fd_);
  std::string p = path_;
  for (auto& c : relative_components(rel, path_)) {
    p += "/" + c;
    if (create && mkdirat(fd, c.c_str(), 0755) != 0 && errno != EEXIST) {
      int e = errno;
      close(fd);
      fail_write(p, "cannot create the directory: " + errno_text(e));
    }
    int next = openat(fd, c.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    close(fd);
    if (next < 0) fail(p, e == ENOTDIR ? "is not a directory (or is a symlink, which reprokit does not follow here)" : errno_text(e));
    fd = next;
  }
  return Dir(fd, p);
}

std::string Dir::read(const std::string& rel, size_t max_bytes) const {
  auto parts = relative_components(rel, path_);
  std::string name = parts.back();
  parts.pop_back();
  std::string dir_rel;
  for (auto& c : parts) dir_rel += (dir_rel.empty() ? "" : "/") + c;
  const Dir* d = this;
  Dir holder(-1, "");
  if (!dir_rel.empty()) {
    holder = sub(dir_rel);
    d = &holder;
  }
  int fd = openat(d->fd_, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail(d->path(name), errno_text(errno));
  return read_fd(fd, d->path(name), max_bytes);
}

bool Dir::exists(const std::string& rel) const {
  struct stat st {};
  return fstatat(fd_, rel.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

bool Dir::is_dir(const std::string& rel) const {
  struct stat st {};
  return fstatat(fd_, rel.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

// Writes all of data to fd (retrying short writes and EINTR); 0, or the errno of the failure.
static int write_all(int fd, std::string_view data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    done += static_cast<size_t>(n);
  }
  return 0;
}

void Dir::write(const std::string& name, std::string_view data, bool executable) const {
  if (name.find('/') != std::string::npos || name == ".." || name == "." || name.empty())
    throw InternalError(fmt::format("Dir::write: '{}' is not a plain file name", name));
  std::string tmp = "." + name + ".tmp." + unique_suffix();
  int fd = openat(fd_, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, executable ? 0755 : 0644);
  if (fd < 0) fail_write(path(name), errno_text(errno));
  if (int e = write_all(fd, data); e != 0) {
    close(fd);
    unlinkat(fd_, tmp.c_str(), 0);
    fail_write(path(name), errno_text(e));
  }
  if (close(fd) != 0 || renameat(fd_, tmp.c_str(), fd_, name.c_str()) != 0) {
    int e = errno;
    unlinkat(fd_, tmp.c_str(), 0);
    fail_write(path(name), errno_text(e));
  }
}

bool Dir::write_new(const std::string& name, std::string_view data) const {
  int fd = openat(fd_, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EEXIST) return false;
  if (fd < 0) fail_write(path(name), errno_text(errno));
  if (int e = write_all(fd, data); e != 0) {
    close(fd);
    fail_write(path(name), errno_text(e));
  }
  close(fd);
  return true;
}

bool Dir::link_if_same(const std::string& name, std::string_view data, const Dir& store, const std::string& store_name) const {
  int fd = openat(store.fd_, store_name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  bool same = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) == data.size();
  std::string held(same ? data.size() : 0, '\0');
  size_t got = 0;
  while (same && got < held.size()) {
    ssize_t n = pread(fd, held.data() + got, held.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) same = false;
    else got += static_cast<size_t>(n);
  }
  same = same && std::string_view(held) == data;
  // Through /proc/self/fd, the link is to the inode just compared, not to whatever the name
  // holds by now.
  const std::string via = "/proc/self/fd/" + std::to_string(fd);
  // Read-only, so a program that writes the file in place (numpy's save does) fails instead of
  // changing every name of it; reprokit itself only ever replaces files by renaming.
  same = same && fchmod(fd, st.st_mode & 0444) == 0;
  const bool linked = same && linkat(AT_FDCWD, via.c_str(), fd_, name.c_str(), AT_SYMLINK_FOLLOW) == 0;
  close(fd);
  return linked;
}

bool Dir::make_new_dir(const std::string& name) const {
  if (mkdirat(fd_, name.c_str(), 0755) == 0) return true;
  if (errno == EEXIST) return false;
  fail_write(path(name), "cannot create the directory: " + errno_text(errno));
}

void Dir::rename(const std::string& from, const std::string& to) const {
  if (renameat(fd_, from.c_str(), fd_, to.c_str()) != 0) fail_write(path(to), "cannot rename " + from + " to it: " + errno_text(errno));
}

void Dir::remove_file(const std::string& name) const {
  if (unlinkat(fd_, name.c_str(), 0) != 0 && errno != ENOENT) fail_write(path(name), "cannot remove it: " + errno_text(errno));
}

void Dir::remove_tree(const std::string& name) const {
  struct stat st {};
  if (fstatat(fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    remove_file(name);
    return;
  }
  {
    Dir d = sub(name);
    for (auto& e : d.list()) d.remove_tree(e);
  }
  if (unlinkat(fd_, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) fail_write(path(name), "cannot remove it: " + errno_text(errno));
}

std::vector<std::string> Dir::list() const {
  std::vector<std::string> out;
  int fd = dup(fd_);
  DIR* d = fdopendir(fd);
  if (!d) {
    close(fd);
    fail(path_, "cannot list: " + errno_text(errno));
  }
  rewinddir(d);
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

int64_t next_number_after(const std::vector<std::string>& names, std::string_view prefix, std::string_view suffix) {
  int64_t last = 0;
  for (const std::string& name : names) {
    if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string_view digits = std::string_view(name).substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string_view::npos) continue;
    last = std::max<int64_t>(last, std::stoll(std::string(digits)));
  }
  return last + 1;
}

namespace {

std::string make_scratch_dir(std::string_view prefix, std::string_view what) {
  const std::filesystem::path tmp = std::filesystem::temp_directory_path();
  std::string pattern = (tmp / (std::string(prefix) + "XXXXXX")).string();
  if (!mkdtemp(pattern.data()))
    throw UserError(fmt::format("{}cannot create a directory under {}", what.empty() ? "" : std::string(what) + ": ", tmp.string()));
  return pattern;
}

// The paths of the ScratchDirs alive in this process (remove_scratch_dirs_in_use).
std::mutex g_scratch_mutex;
std::set<std::string>& scratch_dirs_in_use() {
  static auto* paths = new std::set<std::string>;  // never destroyed: an _exit may read it
  return *paths;
}

}  // namespace

ScratchDir::ScratchDir(std::string_view prefix, std::string_view what) : path_(make_scratch_dir(prefix, what)), dir_(Dir::open(path_)) {
  std::lock_guard<std::mutex> lock(g_scratch_mutex);
  scratch_dirs_in_use().insert(path_);
}

ScratchDir::~ScratchDir() {
  {
    std::lock_guard<std::mutex> lock(g_scratch_mutex);
    scratch_dirs_in_use().erase(path_);
  }
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void remove_scratch_dirs_in_use() {
  std::lock_guard<std::mutex> lock(g_scratch_mutex);
  for (const std::string& path : scratch_dirs_in_use()) {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  scratch_dirs_in_use().clear();
}

}  // namespace reprokit
