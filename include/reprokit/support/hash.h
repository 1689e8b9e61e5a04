// 64-bit FNV-1a of bytes: the content hash behind cache keys, unit names and checksums.
#pragma once
#include <cstdint>
#include <string_view>

namespace reprokit {

inline constexpr uint64_t kFnv1a64Start = 1469598103934665603ULL;

// `h` continues an earlier hash: fnv1a64(b, fnv1a64(a)) == fnv1a64(a + b), without the copy.
inline uint64_t fnv1a64(std::string_view bytes, uint64_t h = kFnv1a64Start) {
  for (char c : bytes) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h;
}

}  // namespace reprokit
