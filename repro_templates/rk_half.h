// reprokit f16 / bf16 conversions, round to nearest even: the one source shared by the runtime
// (src/runtime/tensor.cpp), the cpp prelude and the CUDA prelude. An includer may define RK_HD
// (function qualifiers: `__device__` on CUDA), rk_bits_of(float) -> uint32_t and
// rk_float_of(uint32_t) -> float first; without RK_HD, host versions are defined here.
#ifndef RK_HALF_H
#define RK_HALF_H
#ifndef RK_HD
#include <cstdint>
#include <cstring>
#define RK_HD
inline uint32_t rk_bits_of(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}
inline float rk_float_of(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
#endif
RK_HD inline float rk_h2f(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, x;
  if (exp == 0x1f) {
    x = sign | 0x7f800000u | (mant << 13);  // inf / nan
  } else if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while (!(mant & 0x400u));
      x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else {
    x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return rk_float_of(x);
}

RK_HD inline uint16_t rk_f2h(float f) {
  uint32_t x = rk_bits_of(f);
  uint32_t sign = (x >> 16) & 0x8000u, exp = (x >> 23) & 0xffu, mant = x & 0x7fffffu;
  if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u));  // inf / nan
  int e = (int)exp - 127 + 15;
  if (e >= 0x1f) return (uint16_t)(sign | 0x7c00u);  // overflow to inf
  if (e <= 0) {                                      // subnormal half (or zero)
    if (e < -10) return (uint16_t)sign;
    mant |= 0x800000u;
    uint32_t shift = (uint32_t)(14 - e), half = mant >> shift, rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return (uint16_t)(sign | half);
  }
  uint32_t half = sign | ((uint32_t)e << 10) | (mant >> 13), rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // may carry into the exponent: correct
  return (uint16_t)half;
}

RK_HD inline float rk_b2f(uint16_t b) { return rk_float_of((uint32_t)b << 16); }

RK_HD inline uint16_t rk_f2b(float f) {
  uint32_t x = rk_bits_of(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);  // quiet nan
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
#endif  // RK_HALF_H
