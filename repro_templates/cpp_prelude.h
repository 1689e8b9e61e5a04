// reprokit generated code: prelude shared by every graph compiled by the cpp backend.
// (Embedded from repro_templates/cpp_prelude.h; a real, compilable header.)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <unistd.h>
#include <limits>
#include <vector>

namespace {

inline float rk_h2f(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, x;
  if (exp == 0x1f) x = sign | 0x7f800000u | (mant << 13);
  else if (exp == 0) {
    if (mant == 0) x = sign;
    else { int e = -1; do { ++e; mant <<= 1; } while (!(mant & 0x400u)); x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13); }
  } else x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  float f; std::memcpy(&f, &x, 4); return f;
}
inline uint16_t rk_f2h(float f) {
  uint32_t x; std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, exp = (x >> 23) & 0xffu, mant = x & 0x7fffffu;
  if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u));
  int e = (int)exp - 127 + 15;
  if (e >= 0x1f) return (uint16_t)(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return (uint16_t)sign;
    mant |= 0x800000u;
    uint32_t shift = (uint32_t)(14 - e), half = mant >> shift, rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return (uint16_t)(sign | half);
  }
  uint32_t half = sign | ((uint32_t)e << 10) | (mant >> 13), rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;
  return (uint16_t)half;
}
inline float rk_b2f(uint16_t b) { uint32_t x = (uint32_t)b << 16; float f; std::memcpy(&f, &x, 4); return f; }
inline uint16_t rk_f2b(float f) {
  uint32_t x; std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// NaN-propagating max/min, as PyTorch's maximum/minimum/amax/amin.
template <class T> inline T rk_max(T a, T b) { return (a != a || b != b) ? (a != a ? a : b) : (a > b ? a : b); }
template <class T> inline T rk_min(T a, T b) { return (a != a || b != b) ? (a != a ? a : b) : (a < b ? a : b); }
template <class T> inline T rk_relu(T a) { return a != a ? a : (a > T(0) ? a : T(0)); }
template <class T> inline T rk_abs(T a) { return a < T(0) ? -a : (a == T(0) ? T(0) : a); }
template <class T> inline T rk_inf() { return std::numeric_limits<T>::infinity(); }

// Fault injection helpers (only referenced when a test injects a fault).
volatile int* volatile rk_null_target = nullptr;
inline void rk_crash() { *rk_null_target = 1; }
inline void rk_spin_forever() { volatile int spin = 1; while (spin) {} }
inline bool rk_flaky() {
  static unsigned state = (unsigned)time(nullptr) ^ ((unsigned)getpid() << 16) ^ (unsigned)(uintptr_t)&state;
  state = state * 1103515245u + 12345u;
  return (state >> 16) & 1u;
}
template <class T> inline T rk_perturb(T v) { return (T)(v * (T)1.01 + (T)0.01); }

inline void rk_error(char* err, int errlen, const char* msg) { std::snprintf(err, (size_t)errlen, "%s", msg); }

}  // namespace
