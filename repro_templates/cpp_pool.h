// reprokit generated code: 2-D max pooling on AVX-512, 16 outputs of a row a vector (part of
// cpp_prelude.h, compiled only into the kernels unit that defines RK_POOL_KERNELS).
//
// The generated pool (max_pool_rows) runs a loop a tap over each output row, bounds computed at
// run time: on rows of 13 to 56 outputs most of its time was those loops' setup and scalar
// remainders (resnet18's 3x3 pool at stride 2: 521 us, against ONNX Runtime's 146). Here each tap
// of 16 outputs is one masked load (two and a permute at stride 2), the lanes outside the input
// loaded as -inf, folded in by one max. The max instruction keeps its second operand on ties and
// where either is NaN: ties keep the earlier tap (as the generated pool: the first maximum, so -0
// before +0 stays -0), but a NaN would be dropped; so a plane where a tap read a NaN is pooled
// again by the exact rule (the first NaN wins), which a plane without one (the usual case) never pays.
#ifndef RK_CPP_POOL_H
#define RK_CPP_POOL_H
#include "cpp_base.h"
#include "cpp_avx512.h"
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace {

#if defined(__AVX512F__)
constexpr int64_t kRkPoolVectors = 16, kRkPoolTaps = 16;  // vectors of a row of output (256 outputs), tap columns at most

// The lanes of each tap column j's load for vector v of a row of output (at stride 2, of its two
// loads): the input columns inside the row. The same for every row and plane of a pool.
struct RkPoolLanes {
  __mmask16 first[kRkPoolTaps * kRkPoolVectors], second[kRkPoolTaps * kRkPoolVectors];
  RkPoolLanes(const RkConvWindow& w, int64_t vectors) {
    for (int64_t j = 0; j < w.taps_w; ++j)
      for (int64_t v = 0; v < vectors; ++v) {
        const int64_t base = 16 * v * w.stride_w + j - w.pad_w;  // the input column of lane 0
        first[j * vectors + v] = rk_lanes(-base, w.in_w - base);
        second[j * vectors + v] = rk_lanes(-base - 16, w.in_w - base - 16);
      }
  }
};

// One plane: out[oy out_w + ox] = the max over the window's taps inside the input, -inf where the
// window is all padding, the taps in window order. `exact`: each tap folded in by the generated
// pool's rule (the first NaN wins); else by the max instruction, and the return says whether a
// tap read a NaN (the plane must then be pooled again, exactly).
template <int S> bool rk_max_pool_plane(const float* x, const RkConvWindow& w, const RkPoolLanes& lanes, int64_t out_h, bool exact, float* out) {
  const int64_t vectors = (w.out_w + 15) / 16;
  const __m512 lowest = _mm512_set1_ps(-INFINITY);
  const __m512i evens = rk_even_lanes();
  const __mmask16 last = rk_lanes(0, w.out_w - 16 * (vectors - 1));
  __mmask16 nan = 0;
  for (int64_t oy = 0; oy < out_h; ++oy) {
    const int64_t y0 = oy * w.stride_h - w.pad_h, i_lo = y0 < 0 ? -y0 : 0, i_hi = w.in_h - y0 < w.taps_h ? w.in_h - y0 : w.taps_h;
    for (int64_t v = 0; v < vectors; ++v) {
      __m512 acc = lowest;
      for (int64_t i = i_lo; i < i_hi; ++i) {
        const float* row = x + (y0 + i) * w.row_step + 16 * v * S - w.pad_w;
        for (int64_t j = 0; j < w.taps_w; ++j) {
          __m512 t = _mm512_mask_loadu_ps(lowest, lanes.first[j * vectors + v], row + j);
          if (S == 2) t = _mm512_permutex2var_ps(t, evens, _mm512_mask_loadu_ps(lowest, lanes.second[j * vectors + v], row + j + 16));
          if (exact) {  // (a == a && (t != t || t > a)) ? t : a
            const __mmask16 take =
                _mm512_cmp_ps_mask(acc, acc, _CMP_ORD_Q) & (_mm512_cmp_ps_mask(t, t, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(t, acc, _CMP_GT_OQ));
            acc = _mm512_mask_mov_ps(acc, take, t);
          } else {
            nan |= _mm512_cmp_ps_mask(t, t, _CMP_UNORD_Q);
            acc = _mm512_mask_max_ps(acc, (__mmask16)0xFFFF, t, acc);  // (the unmasked intrinsic warns: its undefined source)
          }
        }
      }
      _mm512_mask_storeu_ps(out + oy * w.out_w + 16 * v, v == vectors - 1 ? last : (__mmask16)0xFFFF, acc);
    }
  }
  return nan != 0;
}

template <int S> void rk_max_pool_planes(int64_t images, const float* image, int64_t image_step, const RkConvWindow& w, float* out) {
  const int64_t planes = images * w.channels, out_h = w.plane / w.out_w;
  const bool parallel = planes >= 2 && planes * w.plane * w.taps_h * w.taps_w >= (int64_t{1} << 15);
  (void)parallel;
  const RkPoolLanes lanes(w, (w.out_w + 15) / 16);
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t m = 0; m < planes; ++m) {
    const float* x = image + (m / w.channels) * image_step + (m % w.channels) * w.channel_step;
    if (rk_max_pool_plane<S>(x, w, lanes, out_h, false, out + m * w.plane)) rk_max_pool_plane<S>(x, w, lanes, out_h, true, out + m * w.plane);
  }
}
#endif

}  // namespace

#endif  // RK_CPP_POOL_H
