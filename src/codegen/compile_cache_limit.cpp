// The compile cache's size limit (see compile_cache.h): objects and libraries would otherwise
// pile up for ever, one per graph and kernel ever compiled. Eviction goes by file time, which a
// cache hit refreshes, and only while no other process holds the cache: a shared lock for every
// use, an exclusive one, never waited for, to evict.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include "compile_cache.h"
#include "reprokit/support/errors.h"

namespace reprokit {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kDefaultLimit = uint64_t{2} << 30;

struct Suffix {
  char letter;
  uint64_t factor;
};
constexpr Suffix kSuffixes[] = {{'K', uint64_t{1} << 10}, {'M', uint64_t{1} << 20}, {'G', uint64_t{1} << 30}, {'T', uint64_t{1} << 40}};

// "2G", "500M", "123": bytes; nullopt for anything else (a sign, a fraction, an overflow).
std::optional<uint64_t> parse_size(std::string_view s) {
  uint64_t factor = 1;
  if (!s.empty())
    for (auto [letter, f] : kSuffixes)
      if (std::toupper(static_cast<unsigned char>(s.back())) == letter) {
        factor = f;
        s.remove_suffix(1);
        break;
      }
  if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  const uint64_t n = std::stoull(std::string(s));
  if (n > UINT64_MAX / factor) return std::nullopt;
  return n * factor;
}

struct CachedFile {
  fs::path path;
  uint64_t bytes;
  timespec used;
};

// The regular files of the cache and its units/, never following a link; the lock file stays.
std::vector<CachedFile> cached_files(const fs::path& cache_dir) {
  std::vector<CachedFile> files;
  for (const fs::path& d : {cache_dir, cache_dir / "units"}) {
    std::error_code ec;
    for (fs::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec)) {
      struct stat st {};
      if (it->path().filename() == "lock" || ::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      files.push_back({it->path(), static_cast<uint64_t>(st.st_size), st.st_mtim});
    }
  }
  return files;
}

bool older(const CachedFile& a, const CachedFile& b) {
  return a.used.tv_sec != b.used.tv_sec ? a.used.tv_sec < b.used.tv_sec : a.used.tv_nsec < b.used.tv_nsec;
}

int open_lock(const fs::path& cache_dir) {
  const fs::path lock = cache_dir / "lock";
  int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw UserError(fmt::format("cannot open the compile cache's lock '{}': {}", lock.string(), std::strerror(errno)));
  return fd;
}

}  // namespace

uint64_t cache_size_limit() {
  const char* e = std::getenv("REPRO_CACHE_MAX");
  if (!e || !*e) return kDefaultLimit;
  if (std::string_view(e) == "unlimited") return 0;
  auto n = parse_size(e);
  if (!n || *n == 0) throw UserError(fmt::format("REPRO_CACHE_MAX='{}': expected a size such as 2G, 500M or 800K, or 'unlimited'", e));
  return *n;
}

CacheInUse::CacheInUse(const fs::path& cache_dir) : fd_(open_lock(cache_dir)) {
  while (::flock(fd_, LOCK_SH) != 0 && errno == EINTR) {}
}

CacheInUse::~CacheInUse() { ::close(fd_); }

fs::path compiler_temporaries_dir(const fs::path& cache_dir) { return cache_dir / "tmp"; }

namespace {

// Removes the regular files in tmp/ (never following a link); called with the exclusive lock held,
// when no compile is running that could still need them.
uint64_t remove_compiler_temporaries(const fs::path& cache_dir) {
  uint64_t removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(compiler_temporaries_dir(cache_dir), ec), end; !ec && it != end; it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    std::error_code rm;
    if (fs::remove(it->path(), rm)) removed += static_cast<uint64_t>(st.st_size);
  }
  return removed;
}

uint64_t bytes_of(const std::vector<CachedFile>& files) {
  uint64_t total = 0;
  for (auto& f : files) total += f.bytes;
  return total;
}

}  // namespace

uint64_t evict_least_recently_used(const fs::path& cache_dir, uint64_t limit) {
  // Whether to evict is decided before the lock: the walk of the whole cache is not made while
  // other builds wait for it, only again once it is held and eviction is due.
  const bool over = limit != 0 && bytes_of(cached_files(cache_dir)) > limit;
  const int fd = open_lock(cache_dir);
  uint64_t removed = 0;
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
    removed += remove_compiler_temporaries(cache_dir);
    std::vector<CachedFile> files = over ? cached_files(cache_dir) : std::vector<CachedFile>{};  // as they are now that nobody else uses them
    std::sort(files.begin(), files.end(), older);
    uint64_t total = bytes_of(files);
    const uint64_t goal = limit / 10 * 9;
    for (size_t i = 0; i < files.size() && total > goal; ++i) {
      std::error_code ec;
      if (!fs::remove(files[i].path, ec)) continue;
      total -= files[i].bytes;
      removed += files[i].bytes;
    }
  }
  ::close(fd);
  return removed;
}

}  // namespace reprokit
