// reprokit generated code: prelude shared by every graph compiled by the cuda backend (NVRTC).
// (Embedded from repro_templates/cuda_prelude.cuh.) NVRTC has no standard headers: the few types
// and constants the generated code uses are defined here.
typedef long long int64_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef unsigned short uint16_t;
typedef unsigned char uint8_t;
typedef signed char int8_t;
typedef short int16_t;
typedef unsigned long long uintptr_t;
#define NAN __int_as_float(0x7fffffff)
#define INFINITY __int_as_float(0x7f800000)

#define RK_HD __device__
__device__ inline uint32_t rk_bits_of(float f) { return __float_as_uint(f); }
__device__ inline float rk_float_of(uint32_t x) { return __uint_as_float(x); }
#include "rk_half.h"

template <class T> __device__ inline T rk_max(T a, T b) { return (a != a || b != b) ? (a != a ? a : b) : (a > b ? a : b); }
template <class T> __device__ inline T rk_min(T a, T b) { return (a != a || b != b) ? (a != a ? a : b) : (a < b ? a : b); }
template <class T> __device__ inline T rk_clamp_min(T a, T lo) { return a < lo ? lo : a; }
template <class T> __device__ inline T rk_clamp_max(T a, T hi) { return a > hi ? hi : a; }
template <class T> __device__ inline T rk_relu(T a) { return a != a ? a : (a > T(0) ? a : T(0)); }
template <class T> __device__ inline T rk_abs(T a) { return a < T(0) ? -a : (a == T(0) ? T(0) : a); }
// The identity of amax / amin: -inf / inf for floats, the extremes for integers.
template <class T> __device__ inline T rk_lowest() { return (T)(-INFINITY); }
template <class T> __device__ inline T rk_highest() { return (T)INFINITY; }
template <> __device__ inline int64_t rk_lowest<int64_t>() { return (int64_t)(-9223372036854775807LL - 1); }
template <> __device__ inline int64_t rk_highest<int64_t>() { return (int64_t)9223372036854775807LL; }
template <> __device__ inline bool rk_lowest<bool>() { return false; }
template <> __device__ inline bool rk_highest<bool>() { return true; }
__device__ inline int64_t rk_ipow(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  unsigned long long r = 1, x = (unsigned long long)a;  // unsigned: wrapping, as PyTorch
  for (; b; b >>= 1, x *= x)
    if (b & 1) r *= x;
  return (int64_t)r;
}
__device__ inline int64_t rk_f2i64(double x) { return (x >= -9223372036854775808.0 && x < 9223372036854775808.0) ? (int64_t)x : (int64_t)(-9223372036854775807LL - 1); }
__device__ inline int rk_f2i32(double x) { return (x > -2147483649.0 && x < 2147483648.0) ? (int)x : (int)(-2147483647 - 1); }
template <class T> __device__ inline T rk_perturb(T v) { return (T)(v * (T)1.01 + (T)0.01); }
template <class T> __device__ inline T rk_perturb_rel(double rel, T v) { return (T)((double)v * (1.0 + rel)); }
template <class T> __device__ inline T rk_perturb_one(long long k, T v) {
  double d = (double)v;
  unsigned long long b = (unsigned long long)__double_as_longlong(d);
  b += 0x9e3779b97f4a7c15ULL;  // so that 0.0 (bits 0, a fixed point of the mix) is not always chosen
  b ^= b >> 33; b *= 0xff51afd7ed558ccdULL; b ^= b >> 33; b *= 0xc4ceb9fe1a85ec53ULL; b ^= b >> 33;
  return b % (unsigned long long)k == 0 ? (T)(d * 1.01 + 0.01) : v;
}

// Fault injection helpers (only referenced when a test injects a fault).
__device__ inline void rk_crash() { *(volatile int*)(uintptr_t)(clock64() & 0) = 1; }
// A loop over a local volatile reached the driver's JIT as a register loop with no effect, and it
// dropped the loop: the planted hang ran through on a GPU. A volatile load from global memory is
// an effect it must keep, every turn.
__device__ volatile int rk_spinning = 1;  // never cleared
__device__ inline void rk_spin_forever() { while (rk_spinning) {} }
__device__ inline bool rk_flaky() { return (clock64() >> 3) & 1; }
__device__ inline void rk_flag(int* err, int code) { atomicCAS(err, 0, code); }
