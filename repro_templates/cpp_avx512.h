// reprokit generated code: the lane masks, permute indices and float maps that the AVX-512 kernels
// share (part of cpp_prelude.h, compiled only into the kernels units of convolutions and pooling).
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

// All 16 lanes: the zero-masked form of an operation with this mask is the plain one. GCC 12's
// plain alignr and permutexvar pass an "undefined" vector it then warns about as maybe
// uninitialized where they are inlined into a kernel; the zero-masked forms pass a zero.
constexpr __mmask16 kRkAllLanes = 0xFFFF;

// Lanes q .. q + 15 of the 32 that are lo's then hi's (q a constant, 0 to 3).
inline __m512 rk_shift_lanes(__m512 hi, __m512 lo, int q) {
  const __m512i h = _mm512_castps_si512(hi), l = _mm512_castps_si512(lo);
  switch (q) {
    case 0: return lo;
    case 1: return _mm512_castsi512_ps(_mm512_maskz_alignr_epi32(kRkAllLanes, h, l, 1));
    case 2: return _mm512_castsi512_ps(_mm512_maskz_alignr_epi32(kRkAllLanes, h, l, 2));
    default: return _mm512_castsi512_ps(_mm512_maskz_alignr_epi32(kRkAllLanes, h, l, 3));
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

// exp(-x) lane by lane: the prelude's rk_expf of -x (the same clamp, reduction and polynomial,
// within 1 ulp), the negation folded into the reduction, and 2^n applied by vscalefps, whose one
// rounding overflows, or rounds into the subnormals, exactly where exp does (rk_expf builds 2^n
// from integer bits as two powers of two to get that from plain float code). A NaN goes through
// the clamp (vmaxps and vminps return their second operand for it) and the polynomial. 17
// operations where the generated SiLU has 28: a SiLU over 50K floats in L2, one thread, 0.40 ->
// 0.32 ns an element.
inline __m512 rk_exp_neg_lanes(__m512 x) {
  const __mmask16 all = 0xFFFF;
  const __m512 xc = rk_min_lanes(_mm512_set1_ps(104.0f), rk_max_lanes(_mm512_set1_ps(-89.0f), x));
  const __m512 n = _mm512_maskz_roundscale_ps(all, _mm512_mul_ps(xc, _mm512_set1_ps(-1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT);
  // r = -x - n ln 2, ln 2 in two parts as rk_expf has it.
  const __m512 r = _mm512_fmsub_ps(n, _mm512_set1_ps(2.12194440e-4f), _mm512_fmadd_ps(n, _mm512_set1_ps(0.693359375f), xc));
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  // p r^2 + r + 1 as (p r + 1) r + 1.
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 y = _mm512_fmadd_ps(_mm512_fmadd_ps(p, r, one), r, one);
  return _mm512_maskz_scalef_ps(all, y, n);
}

// SiLU, x sigmoid(x), as the generated code computes it from its decomposition: x times
// 1 / (1 + exp(-x)), each rounded (-inf gives NaN, as there; x below about -89 gives -0). The
// division, not a reciprocal estimate refined by a Newton step: that was 5% slower on Zen 4.
inline __m512 rk_silu_lanes(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  return _mm512_mul_ps(x, _mm512_div_ps(one, _mm512_add_ps(rk_exp_neg_lanes(x), one)));
}
#endif

}  // namespace

#endif  // RK_CPP_AVX512_H
