// reprokit generated code: the lane masks and permute indices that the AVX-512 kernels share (part
// of cpp_prelude.h, compiled only into the kernels units of convolutions and pooling).
#ifndef RK_CPP_AVX512_H
#define RK_CPP_AVX512_H
#include "cpp_base.h"
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace {

#if defined(__AVX512F__)
// Lanes [lo, hi) of 16 (empty when hi <= lo).
inline __mmask16 rk_lanes(int64_t lo, int64_t hi) {
  lo = lo < 0 ? 0 : lo;
  hi = hi > 16 ? 16 : hi;
  return hi <= lo ? (__mmask16)0 : (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1));
}

// Lanes q .. q + 15 of the 32 that are lo's then hi's (q a constant, 0 to 3).
inline __m512 rk_shift_lanes(__m512 hi, __m512 lo, int q) {
  switch (q) {
    case 0: return lo;
    case 1: return _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(hi), _mm512_castps_si512(lo), 1));
    case 2: return _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(hi), _mm512_castps_si512(lo), 2));
    default: return _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(hi), _mm512_castps_si512(lo), 3));
  }
}

// max(a, b) and min(a, b) lane by lane as vmaxps and vminps compute them (b where either is NaN
// or both are equal). The zero-masking forms: the plain intrinsics' undefined operand draws GCC
// 12's maybe-uninitialized wherever they are inlined at -O3.
inline __m512 rk_max_lanes(__m512 a, __m512 b) { return _mm512_maskz_max_ps((__mmask16)0xFFFF, a, b); }
inline __m512 rk_min_lanes(__m512 a, __m512 b) { return _mm512_maskz_min_ps((__mmask16)0xFFFF, a, b); }

// A two-source permute's indices for elements 0, 2, ..., 30: the even columns of 32 (at stride 2,
// the input under 16 outputs).
inline __m512i rk_even_lanes() { return _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0); }
// And for elements 1, 3, ..., 31: the odd columns.
inline __m512i rk_odd_lanes() { return _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1); }
#endif

}  // namespace

#endif  // RK_CPP_AVX512_H
