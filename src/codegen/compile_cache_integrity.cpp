// Digests of the compile cache's entries (see compile_cache.h). The cache directory is private to
// its user (compile_cache_dir.cpp), which keeps others from planting code; the digest catches what
// ownership cannot: an entry cut short by a full disk or a crash, bit rot, a file copied in by
// hand. A 64-bit FNV-1a of the bytes, the hash every content key here uses.
#include <fmt/format.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>

#include "compile_cache.h"
#include "reprokit/support/errors.h"
#include "reprokit/support/files.h"
#include "reprokit/support/hash.h"

namespace reprokit {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxEntryBytes = size_t{4} << 30;  // larger than any object or library the backend builds

std::string digest_of(const fs::path& file) { return fmt::format("fnv1a64 {:016x}\n", fnv1a64(read_file(file.string(), kMaxEntryBytes))); }

fs::path digest_path(const fs::path& entry) { return entry.parent_path() / (entry.filename().string() + ".digest"); }

}  // namespace

void record_digest(const fs::path& file, const fs::path& entry) {
  static std::atomic<int> n{0};
  const fs::path target = digest_path(entry);
  const std::string tmp = fmt::format("{}.{}.{}.tmp", target.filename().string(), ::getpid(), n.fetch_add(1));
  Dir dir = Dir::open(entry.parent_path().string());
  if (!dir.write_new(tmp, digest_of(file))) throw UserError(fmt::format("cannot create '{}': something already has that name", dir.path(tmp)));
  std::error_code ec;
  fs::rename(dir.path(tmp), target, ec);
  if (ec) throw UserError(fmt::format("cannot move '{}' into the compile cache: {}", target.string(), ec.message()));
}

bool entry_intact(const fs::path& entry) {
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(entry, ec))) return false;
  const fs::path recorded = digest_path(entry);
  if (!fs::is_regular_file(fs::symlink_status(recorded, ec))) return false;
  try {
    if (read_file(recorded.string(), 256) != digest_of(entry)) return false;
  } catch (const std::exception&) {
    return false;  // unreadable: built again
  }
  ::utimensat(AT_FDCWD, entry.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);  // least recently used goes first
  ::utimensat(AT_FDCWD, recorded.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
  return true;
}

}  // namespace reprokit
