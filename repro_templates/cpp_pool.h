// reprokit generated code: 2-D max pooling on AVX-512, 16 outputs of a row a vector, and on AVX2,
// 8 (part of cpp_prelude.h, compiled only into the kernels unit that defines RK_POOL_KERNELS).
//
// The generated pool (max_pool_rows) runs a loop a tap over each output row, bounds computed at
// run time: on rows of 13 to 56 outputs most of its time was those loops' setup and scalar
// remainders (resnet18's 3x3 pool at stride 2: 521 us, against ONNX Runtime's 146). Here each tap
// of 16 outputs is one masked load (two and a permute at stride 2), the lanes outside the input
// loaded as -inf, folded in by one max. The max instruction keeps its second operand on ties and
// where either is NaN: ties keep the earlier tap (as the generated pool: the first maximum, so -0
// before +0 stays -0), but a NaN would be dropped; so a plane where a tap read a NaN is pooled
// again by the exact rule (the first NaN wins), which a plane without one (the usual case) never pays.
// AVX2 has no masked load that fills (and its vmaskmovps is slow on AMD's Zen 3): 8 columns are
// one load inside the row, and at its edges a load of the row's end permuted into place
// (rk_row_window8); the window is maxed along the rows first, then down (rk_max_pool_plane).
#ifndef RK_CPP_POOL_H
#define RK_CPP_POOL_H
#include "cpp_base.h"
#include "cpp_avx2.h"
#include "cpp_avx512.h"
#if defined(RK_POOL_VECTORS)
#include <immintrin.h>
#endif

namespace {

#if defined(RK_POOL_VECTORS)
constexpr int64_t kRkPoolRowOutputs = 256, kRkPoolTaps = 16;  // outputs of a row, tap columns at most

// The window rows of output row oy: input rows y0 + i for i in [lo, hi), those inside the input.
struct RkPoolRows {
  int64_t y0, lo, hi;
};
inline RkPoolRows rk_pool_rows(const RkConvWindow& w, int64_t oy) {
  const int64_t y0 = oy * w.stride_h - w.pad_h;
  return {y0, y0 < 0 ? -y0 : 0, w.in_h - y0 < w.taps_h ? w.in_h - y0 : w.taps_h};
}
#endif

#if defined(__AVX512F__)
constexpr int64_t kRkPoolVectors = kRkPoolRowOutputs / 16;  // vectors of a row of output

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
    const RkPoolRows span = rk_pool_rows(w, oy);
    for (int64_t v = 0; v < vectors; ++v) {
      __m512 acc = lowest;
      for (int64_t i = span.lo; i < span.hi; ++i) {
        const float* row = x + (span.y0 + i) * w.row_step + 16 * v * S - w.pad_w;
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

#elif defined(RK_POOL_VECTORS)

// (AVX-512's lanes of each tap; AVX2 finds a tap's edges as it loads it.)
struct RkPoolLanes {
  RkPoolLanes(const RkConvWindow&, int64_t) {}
};

// A thread's rows of maxima along a row (rk_max_pool_plane), a vector of 8 a block of columns.
struct RkPoolScratch {
  int64_t pitch;
  float* rows;
  explicit RkPoolScratch(const RkConvWindow& w)
      : pitch((w.out_w + 7) / 8 * 8), rows((float*)std::malloc(sizeof(float) * (size_t)(pitch * rk_max<int64_t>(1, w.in_h)))) {}
  ~RkPoolScratch() { std::free(rows); }
  RkPoolScratch(const RkPoolScratch&) = delete;
  RkPoolScratch& operator=(const RkPoolScratch&) = delete;
};

// The first n of 8 outputs stored at `to`; at stride 2 they are in the lane order 0 1 4 5 2 3 6 7
// (the even columns of two loads, by one shuffle), put back first.
template <int S> inline void rk_pool_store8(float* to, __m256 acc, int64_t n) {
  if (S == 2) acc = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(acc), _MM_SHUFFLE(3, 1, 2, 0)));
  rk_store_first(to, acc, n);
}

// The max along a row of 8 outputs' window columns (lane l's from input column c0 + l S), taps in
// order, and the lanes of any load that read a NaN. Inside: every load in the row. T: the window's
// columns where they are 2 or 3 (the loop unrolled), else 0 (w.taps_w). The NaN lanes are
// returned, not gathered through a reference: a mask the caller's stores (of floats) might alias
// was kept in memory, each block's OR waiting on the last one's store. squeezenet1_0's first pool
// (3x3 at stride 2, 96 planes of 109 x 109, one thread): 645 us, 430 with the mask returned, 359
// with the taps unrolled too (ONNX Runtime's pool, in planes: 366).
struct RkPoolRowMax {
  __m256 max, nan;
};
template <int S, bool Inside, int T> inline RkPoolRowMax rk_pool_row_max(const float* row, const RkConvWindow& w, int64_t c0) {
  const int64_t taps = T > 0 ? T : w.taps_w;
  const __m256 lowest = _mm256_set1_ps(-INFINITY);
  const auto load = [&](int64_t c) { return Inside ? _mm256_loadu_ps(row + c) : rk_row_window8(row, w.in_w, c, lowest); };
  __m256 acc = lowest, nan = _mm256_setzero_ps();
  if (S == 1) {
    for (int64_t j = 0; j < taps; ++j) {
      const __m256 t = load(c0 + j);
      nan = _mm256_or_ps(nan, _mm256_cmp_ps(t, t, _CMP_UNORD_Q));
      acc = _mm256_max_ps(t, acc);  // acc on a tie: the earlier tap
    }
  } else {
    for (int64_t j = 0; j < taps; j += 2) {
      const __m256 a = load(c0 + j), b = load(c0 + j + 8);
      nan = _mm256_or_ps(nan, _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
      acc = _mm256_max_ps(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)), acc);
      if (j + 1 < taps) acc = _mm256_max_ps(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)), acc);
    }
  }
  return {acc, nan};
}

template <int S, int T> inline RkPoolRowMax rk_pool_row_max_of(bool inside, const float* row, const RkConvWindow& w, int64_t c0) {
  return inside ? rk_pool_row_max<S, true, T>(row, w, c0) : rk_pool_row_max<S, false, T>(row, w, c0);
}

// One plane, as on AVX-512 (above), in two passes: the max along each input row under every
// block of 8 outputs (the window's columns), then down the window's rows. Each input row is
// maxed along once for all the windows that read it, not once for each (a 3x3 pool at stride 2
// reads each row for 1.5 output rows), and at stride 2 a pair of taps is one load of 16 columns
// from which two shuffles take the even and the odd ones (lanes in the order 0 1 4 5 2 3 6 7 for
// every tap alike, put back as the row is stored). Taps in window order, rows first: the max
// along each row keeps its first maximum, the max down the rows the first row's; a NaN is only
// noted (the return), and the plane pooled again exactly (rk_max_pool_plane_exact).
template <int S>
bool rk_max_pool_plane(const float* x, const RkConvWindow& w, const RkPoolLanes&, RkPoolScratch& scratch, int64_t out_h, float* out) {
  const int64_t vectors = (w.out_w + 7) / 8;
  const __m256 lowest = _mm256_set1_ps(-INFINITY);
  __m256 nan = _mm256_setzero_ps();                                                    // the lanes in which a load read a NaN
  const int64_t rows = rk_min(w.in_h, (out_h - 1) * w.stride_h - w.pad_h + w.taps_h);  // the input rows a window reads
  // The blocks whose loads all fall inside the row: [v_lo, v_hi).
  const int64_t reach = S == 1 ? w.taps_w - 1 + 8 : 2 * ((w.taps_w - 1) / 2) + 16;  // columns read from lane 0's first
  const int64_t room = w.in_w - reach + w.pad_w;                                    // 8 v S at most, for block v's last column to be inside
  const int64_t v_lo = (w.pad_w + 8 * S - 1) / (8 * S), v_hi = room < 0 ? v_lo : rk_max<int64_t>(v_lo, room / (8 * S) + 1);
  for (int64_t y = 0; y < rows; ++y) {
    const float* row = x + y * w.row_step;
    for (int64_t v = 0; v < vectors; ++v) {
      const int64_t c0 = 8 * v * S - w.pad_w;  // the input column of lane 0 for tap 0
      const bool inside = v >= v_lo && v < v_hi;
      const RkPoolRowMax r = w.taps_w == 3   ? rk_pool_row_max_of<S, 3>(inside, row, w, c0)
                             : w.taps_w == 2 ? rk_pool_row_max_of<S, 2>(inside, row, w, c0)
                                             : rk_pool_row_max_of<S, 0>(inside, row, w, c0);
      nan = _mm256_or_ps(nan, r.nan);
      _mm256_storeu_ps(scratch.rows + y * scratch.pitch + 8 * v, r.max);
    }
  }
  for (int64_t oy = 0; oy < out_h; ++oy) {
    const RkPoolRows span = rk_pool_rows(w, oy);
    for (int64_t v = 0; v < vectors; ++v) {
      __m256 acc = lowest;
      for (int64_t i = span.lo; i < span.hi; ++i) acc = _mm256_max_ps(_mm256_loadu_ps(scratch.rows + (span.y0 + i) * scratch.pitch + 8 * v), acc);
      rk_pool_store8<S>(out + oy * w.out_w + 8 * v, acc, w.out_w - 8 * v);
    }
  }
  return _mm256_movemask_ps(nan) != 0;
}

// A plane that read a NaN, by the generated pool's rule, tap by tap: (a == a && (t != t || t >
// a)) ? t : a, the first NaN winning.
template <int S> void rk_max_pool_plane_exact(const float* x, const RkConvWindow& w, int64_t out_h, float* out) {
  const int64_t vectors = (w.out_w + 7) / 8;
  const __m256 lowest = _mm256_set1_ps(-INFINITY);
  for (int64_t oy = 0; oy < out_h; ++oy) {
    const RkPoolRows span = rk_pool_rows(w, oy);
    for (int64_t v = 0; v < vectors; ++v) {
      __m256 acc = lowest;
      for (int64_t i = span.lo; i < span.hi; ++i) {
        const float* row = x + (span.y0 + i) * w.row_step;
        for (int64_t j = 0; j < w.taps_w; ++j) {
          const int64_t c0 = 8 * v * S + j - w.pad_w;  // the input column of lane 0
          __m256 t = rk_row_window8(row, w.in_w, c0, lowest);
          if (S == 2) t = _mm256_shuffle_ps(t, rk_row_window8(row, w.in_w, c0 + 8, lowest), _MM_SHUFFLE(2, 0, 2, 0));
          const __m256 take =
              _mm256_and_ps(_mm256_cmp_ps(acc, acc, _CMP_ORD_Q), _mm256_or_ps(_mm256_cmp_ps(t, t, _CMP_UNORD_Q), _mm256_cmp_ps(t, acc, _CMP_GT_OQ)));
          acc = _mm256_blendv_ps(acc, t, take);
        }
      }
      rk_pool_store8<S>(out + oy * w.out_w + 8 * v, acc, w.out_w - 8 * v);
    }
  }
}
#endif

#if defined(RK_POOL_VECTORS)
template <int S> void rk_max_pool_planes(int64_t images, const float* image, int64_t image_step, const RkConvWindow& w, float* out) {
  const int64_t planes = images * w.channels, out_h = w.plane / w.out_w;
  const bool parallel = planes >= 2 && planes * w.plane * w.taps_h * w.taps_w >= (int64_t{1} << 15);
  (void)parallel;
  const RkPoolLanes lanes(w, (w.out_w + 15) / 16);  // (AVX-512's vectors of 16)
#pragma omp parallel if (parallel)
  {
#if defined(__AVX512F__)
#pragma omp for schedule(static)
    for (int64_t m = 0; m < planes; ++m) {
      const float* x = image + (m / w.channels) * image_step + (m % w.channels) * w.channel_step;
      if (rk_max_pool_plane<S>(x, w, lanes, out_h, false, out + m * w.plane)) rk_max_pool_plane<S>(x, w, lanes, out_h, true, out + m * w.plane);
    }
#else
    RkPoolScratch scratch(w);
#pragma omp for schedule(static)
    for (int64_t m = 0; m < planes; ++m) {
      const float* x = image + (m / w.channels) * image_step + (m % w.channels) * w.channel_step;
      if (rk_max_pool_plane<S>(x, w, lanes, scratch, out_h, out + m * w.plane)) rk_max_pool_plane_exact<S>(x, w, out_h, out + m * w.plane);
    }
#endif
  }
}
#endif

}  // namespace

#endif  // RK_CPP_POOL_H
