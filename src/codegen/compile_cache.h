// The compile cache's entries: each object and library carries a digest recorded when it was
// built and checked before it is linked or loaded, and the cache stays under a size limit by
// removing the least recently used files. The directory itself is checked in compile_cache_dir.cpp.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>

namespace reprokit {

// Writes `file`'s digest beside it (`<file>.digest`), for an entry about to be moved to `entry`:
// the digest goes first, so an entry never lies in the cache without one.
void record_digest(const std::filesystem::path& file, const std::filesystem::path& entry);

// Whether `entry` is there and its content matches its recorded digest. A missing or different
// digest (a truncated write, a disk error, a file put there by hand) is no entry: the caller
// builds it again. An intact entry has its time refreshed: it was just used.
bool entry_intact(const std::filesystem::path& entry);

// The most the cache may hold, in bytes: REPRO_CACHE_MAX ("2G", "500M", "800K", a byte count, or
// "unlimited"; default 2 GiB). 0 means no limit. UserError for anything else.
uint64_t cache_size_limit();

// Held (a shared lock on <cache>/lock) while a process builds, links or loads from the cache, so
// that eviction by another process never removes a file between its check and its use.
class CacheInUse {
 public:
  explicit CacheInUse(const std::filesystem::path& cache_dir);
  ~CacheInUse();
  CacheInUse(const CacheInUse&) = delete;
  CacheInUse& operator=(const CacheInUse&) = delete;

 private:
  int fd_ = -1;
};

// Where the compiler run for the cache writes its temporary files: <cache>/tmp. Only builds, under
// CacheInUse, write there; whatever is there when nobody uses the cache was left by a compile
// that was killed.
std::filesystem::path compiler_temporaries_dir(const std::filesystem::path& cache_dir);

// When no process is using the cache (an exclusive lock taken without waiting; otherwise a later
// build does it): removes what killed compiles left in tmp/ and, when the cache holds more than
// `limit` bytes (0: no limit), its least recently used files until it holds at most 90% of it.
// Returns the bytes removed.
uint64_t evict_least_recently_used(const std::filesystem::path& cache_dir, uint64_t limit);

}  // namespace reprokit
