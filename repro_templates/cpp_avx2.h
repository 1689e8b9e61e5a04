// reprokit generated code: the row windows, partial stores and float maps that the kernels written
// for machines with AVX2 but not AVX-512 share (part of cpp_prelude.h, compiled only into the kernels
// units that use them).
#ifndef RK_CPP_AVX2_H
#define RK_CPP_AVX2_H
#include "cpp_base.h"
#if defined(__AVX2__) && !defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace {

#if defined(__AVX2__) && !defined(__AVX512F__)
// Input columns [x0, x0 + 8) of a row of n floats, `fill` outside [0, n), read from inside the
// row only and without a masked load (vmaskmovps from memory took several times a load's time on
// AMD's Zen 3). At an edge: the row's first or last 8 floats (its first 4 and last 4 when
// shorter), each lane's column permuted into place and the lanes outside the row filled.
inline __m256 rk_row_window8(const float* row, int64_t n, int64_t x0, __m256 fill) {
  if (x0 >= 0 && x0 + 8 <= n) return _mm256_loadu_ps(row + x0);
  if (n <= 0) return fill;
  // Each lane's column (x0 clamped to [-8, n]: a window wholly outside the row stays outside).
  const __m256i col = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int32_t)(x0 < -8 ? -8 : (x0 > n ? n : x0))));
  const __m256i end = _mm256_set1_epi32((int32_t)n);
  const __m256 inside = _mm256_castsi256_ps(_mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_setzero_si256(), col), _mm256_cmpgt_epi32(end, col)));
  __m256 v;
  __m256i at;  // where in v each lane's column is (only the low 3 bits count; lanes outside are filled)
  if (n >= 8) {
    const int64_t from = x0 < 0 ? 0 : n - 8;
    v = _mm256_loadu_ps(row + from);
    at = _mm256_sub_epi32(col, _mm256_set1_epi32((int32_t)from));
  } else if (n >= 4) {
    v = _mm256_set_m128(_mm_loadu_ps(row + n - 4), _mm_loadu_ps(row));
    // Column c at c in the first half, at c - n + 8 in the second.
    at = _mm256_blendv_epi8(col, _mm256_sub_epi32(col, _mm256_set1_epi32((int32_t)(n - 8))), _mm256_cmpgt_epi32(col, _mm256_set1_epi32(3)));
  } else {
    alignas(32) float t[8] = {};
    for (int64_t c = 0; c < n; ++c) t[c] = row[c];
    v = _mm256_load_ps(t);
    at = col;
  }
  return _mm256_blendv_ps(fill, _mm256_permutevar8x32_ps(v, at), inside);
}

// The first n lanes of v (0 < n <= 8) stored at p and nothing after them: a vector, then halves
// and single lanes (a masked store, vmaskmovps to memory, is microcoded on AMD's Zen 2 and 3).
inline void rk_store_first(float* p, __m256 v, int64_t n) {
  if (n >= 8) {
    _mm256_storeu_ps(p, v);
    return;
  }
  __m128 part = _mm256_castps256_ps128(v);
  if (n >= 4) {
    _mm_storeu_ps(p, part);
    part = _mm256_extractf128_ps(v, 1);
    p += 4, n -= 4;
  }
  if (n >= 2) {
    _mm_storel_pi((__m64*)p, part);
    part = _mm_movehl_ps(part, part);
    p += 2, n -= 2;
  }
  if (n == 1) _mm_store_ss(p, part);
}

// exp(-x) lane by lane: the prelude's rk_expf of -x (the same clamp, reduction, polynomial and
// 2^n built from integer bits as two powers of two, so the product overflows, or rounds into the
// subnormals, only where exp does), the negation folded into the reduction, within 1 ulp of it
// where the multiply-adds fuse differently. A NaN goes through the clamp (vmaxps and vminps
// return their second operand for it) and the polynomial.
inline __m256 rk_exp_neg8(__m256 x) {
  const __m256 xc = _mm256_min_ps(_mm256_set1_ps(104.0f), _mm256_max_ps(_mm256_set1_ps(-89.0f), x));
  const __m256 big = _mm256_set1_ps(12582912.0f);  // 1.5 * 2^23: adding it rounds to an integer
  const __m256 t = _mm256_fmadd_ps(xc, _mm256_set1_ps(-1.44269504088896341f), big), n = _mm256_sub_ps(t, big);
  // r = -x - n ln 2, ln 2 in two parts as rk_expf has it.
  const __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), _mm256_fnmsub_ps(n, _mm256_set1_ps(0.693359375f), xc));
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 y = _mm256_fmadd_ps(_mm256_fmadd_ps(p, r, one), r, one);
  // n as an integer is t's low mantissa bits; 2^n = 2^n1 2^n2, each a normal float.
  const __m256i ni = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(0x4B400000)), n1 = _mm256_srai_epi32(ni, 1);
  const __m256i n2 = _mm256_sub_epi32(ni, n1), bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(y, s1), s2);
}

// SiLU, x sigmoid(x), as the generated code computes it from its decomposition: x times
// 1 / (1 + exp(-x)), each rounded (-inf gives NaN, as there; x below about -89 gives -0).
inline __m256 rk_silu8(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_mul_ps(x, _mm256_div_ps(one, _mm256_add_ps(rk_exp_neg8(x), one)));
}
#endif

}  // namespace

#endif  // RK_CPP_AVX2_H
