// reprokit generated code: prelude shared by every graph compiled by the cuda backend (NVRTC).
// (Embedded from repro_templates/cuda_prelude.cuh.) NVRTC has no standard headers: the few types
// and constants the generated code uses are defined here.
typedef long long int64_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef unsigned short uint16_t;
typedef unsigned char uint8_t;
typedef unsigned long long uintptr_t;
#define NAN __int_as_float(0x7fffffff)
#define INFINITY __int_as_float(0x7f800000)

__device__ inline float rk_h2f(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, x;
  if (exp == 0x1f) x = sign | 0x7f800000u | (mant << 13);
  else if (exp == 0) {
    if (mant == 0) x = sign;
    else { int e = -1; do { ++e; mant <<= 1; } while (!(mant & 0x400u)); x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13); }
  } else x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  return __uint_as_float(x);
}
__device__ inline uint16_t rk_f2h(float f) {
  uint32_t x = __float_as_uint(f);
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
__device__ inline float rk_b2f(uint16_t b) { return __uint_as_float((uint32_t)b << 16); }
__device__ inline uint16_t rk_f2b(float f) {
  uint32_t x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

template <class T> __device__ inline T rk_max(T a, T b) { return (a != a || b != b) ? (a != a ? a : b) : (a > b ? a : b); }
template <class T> __device__ inline T rk_min(T a, T b) { return (a != a || b != b) ? (a != a ? a : b) : (a < b ? a : b); }
template <class T> __device__ inline T rk_relu(T a) { return a != a ? a : (a > T(0) ? a : T(0)); }
template <class T> __device__ inline T rk_abs(T a) { return a < T(0) ? -a : (a == T(0) ? T(0) : a); }
template <class T> __device__ inline T rk_inf() { return (T)INFINITY; }
template <class T> __device__ inline T rk_perturb(T v) { return (T)(v * (T)1.01 + (T)0.01); }

// Fault injection helpers (only referenced when a test injects a fault).
__device__ inline void rk_crash() { *(volatile int*)(uintptr_t)(clock64() & 0) = 1; }
__device__ inline void rk_spin_forever() { volatile int spin = 1; while (spin) {} }
__device__ inline bool rk_flaky() { return (clock64() >> 3) & 1; }
__device__ inline void rk_flag(int* err, int code) { atomicCAS(err, 0, code); }
