// reprokit generated code: float convolutions on the panel GEMM (cpp_panel_gemm.h; part of
// cpp_prelude.h, compiled only into the kernels unit that defines RK_CONV_KERNELS).
//
// conv2d is out[M = out channels, N = output pixels] = weights[M, K = in channels x taps] x
// col[K, N]. im2col writes col straight into the GEMM's 32-column panels; the weights are its A.
#ifndef RK_CPP_CONV_GEMM_H
#define RK_CPP_CONV_GEMM_H
#include "cpp_avx512.h"
#include "cpp_panel_gemm.h"
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace {

// Panel p of im2col: for each channel and tap (row k), the input under that tap for output
// pixels 32p..32p+31, zero in the padding and past the last pixel; in `shape`: rows of 16 nv
// floats, then ne columns each contiguous along K. Offsets are int32 (the generator checks the
// input is small enough).
inline void rk_pack_conv_panel(const float* x, const RkConvWindow& w, int64_t p, RkTailShape shape, float* dst) {
  const int64_t K = w.channels * w.taps_h * w.taps_w, W = 16 * shape.nv;
  float* extra = dst + K * W;
  // A 1x1 conv at stride 1 without padding over whole input rows: pixel q reads input pixel q, so
  // row k of the panel is 32 floats of channel k as they lie. The window's pixel-by-pixel path
  // cost more to set up than the copy itself where K is small (mobilenet_v2's 16 -> 96 conv at
  // 112 x 112: 32 divisions a panel of 16 rows).
  if (w.taps_h == 1 && w.taps_w == 1 && w.stride_h == 1 && w.stride_w == 1 && w.pad_h == 0 && w.pad_w == 0 && w.col_step == 1 &&
      w.row_step == w.in_w && w.out_w == w.in_w) {
    const int64_t q0 = p * 32, live = rk_min<int64_t>(32, w.plane - q0), in_vectors = rk_min(live, W);
    for (int64_t k = 0; k < K; ++k) {
      const float* src = x + k * w.channel_step + q0;
      float* to = dst + k * W;
      if (in_vectors == 32) {
        // In machine vectors: a memcpy here shared its length with the short one below and
        // compiled to rep movs, which cost 30-40 cycles to start for 128 bytes (over half of the
        // pack of a 1x1 conv with K < 2 M, whose every panel is copied).
        for (int v = 0; v < 32 / kRkLanes; ++v) ((rk_fvec*)to)[v] = ((const rk_fvec*)src)[v];
      } else {
        std::memcpy(to, src, (size_t)in_vectors * sizeof(float));
        for (int64_t j = in_vectors; j < W; ++j) to[j] = 0.0f;
      }
      for (int e = 0; e < shape.ne; ++e) extra[e * K + k] = W + e < live ? src[W + e] : 0.0f;
    }
    return;
  }
  int64_t row = 0;
  alignas(64) int32_t top[32], left[32];  // input row and column of tap (0, 0), per pixel
  // (A division for the panel's first pixel, then steps: a division a pixel was most of a small
  // K's pack.)
  for (int64_t c = 0, oy = (p * 32) / w.out_w, ox = (p * 32) % w.out_w; c < 32; ++c) {
    const bool inside = p * 32 + c < w.plane;
    top[c] = inside ? (int32_t)(oy * w.stride_h - w.pad_h) : -(1 << 30);
    left[c] = inside ? (int32_t)(ox * w.stride_w - w.pad_w) : -(1 << 30);
    if (++ox == w.out_w) ox = 0, ++oy;
  }
#if defined(__AVX512F__)
  // 16 pixels a vector, masked (masked lanes, the padding, are never read).
  __m512i y0[2], x0[2], at0[2];
  const __m512i rows = _mm512_set1_epi32((int32_t)w.in_h), cols = _mm512_set1_epi32((int32_t)w.in_w);
  const __m512i row_step = _mm512_set1_epi32((int32_t)w.row_step), col_step = _mm512_set1_epi32((int32_t)w.col_step);
  // Along an output row, pixels read consecutive inputs (unit strides) or every other one (stride
  // 2): a half's 16 pixels are cut into the runs that lie on one output row each, and a run is
  // one masked load (at stride 2, two and a permute; resnet18's stride-2 convs) instead of its
  // part of a gather (about 4x dearer). Planes narrower than 16 pixels (14 x 14, 7 x 7) give
  // halves of 2 to 4 runs; a half of more runs than kRuns is gathered.
  constexpr int kRuns = 4;
  struct Run {
    __mmask16 lanes;
    int64_t base;  // lane t of the run reads xc + base + t stride_w + tap
  };
  Run runs[2][kRuns];
  int nruns[2] = {0, 0};
  const bool unit = w.stride_w == 1 && w.col_step == 1;
#if defined(__BMI2__)
  const bool stride2 = w.stride_w == 2 && w.col_step == 1;
#else
  const bool stride2 = false;
#endif
  const __m512i evens = rk_even_lanes();
  for (int h = 0; h < 2; ++h) {
    // The half's pixels inside the plane (none where it cannot be read as runs).
    const int pixels = unit || stride2 ? (int)rk_max<int64_t>(0, rk_min<int64_t>(16, w.plane - (p * 32 + 16 * h))) : 0;
    for (int c = 0; c < pixels;) {
      const int at = 16 * h + c;
      int end = c + 1;
      while (end < pixels && top[16 * h + end] == top[at]) ++end;
      if (nruns[h] == kRuns) {  // too many runs: gathered
        nruns[h] = 0;
        break;
      }
      runs[h][nruns[h]++] = {(__mmask16)(((1u << end) - 1u) & ~((1u << c) - 1u)),
                             (int64_t)top[at] * w.row_step + (int64_t)left[at] * w.col_step - (int64_t)c * w.stride_w};
      c = end;
    }
    y0[h] = _mm512_load_si512(top + 16 * h);
    x0[h] = _mm512_load_si512(left + 16 * h);
    at0[h] = _mm512_add_epi32(_mm512_mullo_epi32(y0[h], row_step), _mm512_mullo_epi32(x0[h], col_step));
  }
  for (int64_t ic = 0; ic < w.channels; ++ic) {
    const float* xc = x + ic * w.channel_step;
    for (int64_t i = 0; i < w.taps_h; ++i) {
      const __m512i di = _mm512_set1_epi32((int32_t)(i * w.dilation_h));
      __mmask16 row_ok[2];
      for (int h = 0; h < 2; ++h) row_ok[h] = _mm512_cmplt_epu32_mask(_mm512_add_epi32(y0[h], di), rows);
      for (int64_t j = 0; j < w.taps_w; ++j, ++row) {
        const __m512i dj = _mm512_set1_epi32((int32_t)(j * w.dilation_w));
        const int64_t tap = i * w.dilation_h * w.row_step + j * w.dilation_w * w.col_step;
        const __m512i shift = _mm512_set1_epi32((int32_t)tap);
        for (int h = 0; h < shape.nv + (shape.ne > 0); ++h) {
          const __mmask16 ok = row_ok[h] & _mm512_cmplt_epu32_mask(_mm512_add_epi32(x0[h], dj), cols);
          __m512 v = _mm512_setzero_ps();
          if (nruns[h] == 0) {
            v = _mm512_mask_i32gather_ps(v, ok, _mm512_add_epi32(at0[h], shift), xc, 4);
          } else if (unit) {
            for (int r = 0; r < nruns[h]; ++r) v = _mm512_mask_loadu_ps(v, ok & runs[h][r].lanes, xc + runs[h][r].base + tap);
          } else {
#if defined(__BMI2__)
            for (int r = 0; r < nruns[h]; ++r) {  // lane t reads input 2t: the lane mask spread over even positions
              const float* at = xc + runs[h][r].base + tap;
              const unsigned lanes = ok & runs[h][r].lanes;
              const __m512 lo = _mm512_maskz_loadu_ps((__mmask16)_pdep_u32(lanes & 0xFFu, 0x5555u), at);
              const __m512 hi = _mm512_maskz_loadu_ps((__mmask16)_pdep_u32(lanes >> 8, 0x5555u), at + 16);
              v = _mm512_mask_mov_ps(v, (__mmask16)lanes, _mm512_permutex2var_ps(lo, evens, hi));
            }
#endif
          }
          if (h < shape.nv) {
            _mm512_storeu_ps(dst + row * W + 16 * h, v);
          } else {
            alignas(64) float t[16];
            _mm512_store_ps(t, v);
            for (int e = 0; e < shape.ne; ++e) extra[e * K + row] = t[e];
          }
        }
      }
    }
  }
#else
  // The panel's pixels as runs along output rows (each reads every stride_w-th input of one input
  // row per tap): a tap's row of the panel is each run's span inside the input copied, zero
  // around it. A bounds check on both axes for every pixel of every tap was 0.5 ms of resnet18's
  // 512 -> 512 3x3 conv at 7 x 7 (4.3 ms).
  struct Run {
    int64_t c, n;  // panel columns [c, c + n)
  };
  Run runs[32];
  int nruns = 0;
  for (int64_t c = 0; c < 32 && p * 32 + c < w.plane; ++c) {
    if (nruns > 0 && top[c] == top[c - 1] && left[c] == left[c - 1] + w.stride_w) ++runs[nruns - 1].n;
    else runs[nruns++] = {c, 1};
  }
  for (int64_t ic = 0; ic < w.channels; ++ic) {
    const float* xc = x + ic * w.channel_step;
    for (int64_t i = 0; i < w.taps_h; ++i)
      for (int64_t j = 0; j < w.taps_w; ++j, ++row) {
        float t[32] = {};
        for (int r = 0; r < nruns; ++r) {
          const Run& run = runs[r];
          const int64_t y = top[run.c] + i * w.dilation_h, x0 = left[run.c] + j * w.dilation_w;
          if (y < 0 || y >= w.in_h) continue;
          // Pixels [lo, hi) of the run read inside the row: x0 + k stride_w in [0, in_w).
          const int64_t lo = x0 >= 0 ? 0 : (-x0 + w.stride_w - 1) / w.stride_w;
          const int64_t hi = x0 >= w.in_w ? 0 : rk_min(run.n, (w.in_w - x0 + w.stride_w - 1) / w.stride_w);
          const float* src = xc + y * w.row_step;
          float* to = t + run.c;
          if (w.stride_w == 1 && w.col_step == 1) {
            for (int64_t k = lo; k < hi; ++k) to[k] = src[x0 + k];
          } else {
            for (int64_t k = lo; k < hi; ++k) to[k] = src[(x0 + k * w.stride_w) * w.col_step];
          }
        }
        for (int64_t c = 0; c < W; ++c) dst[row * W + c] = t[c];
        for (int e = 0; e < shape.ne; ++e) extra[e * K + row] = t[W + e];
      }
  }
#endif
}

#if defined(__AVX512F__)
// ne (1 to 4) columns of C, each stored contiguous along K at extra + e K: dot products.
inline void rk_conv_dot_columns(int64_t m_lo, int64_t m_hi, int64_t K, const float* A, int64_t lda, const float* extra, int ne, float* c, int64_t ldc,
                                int64_t ldj) {
  switch (ne) {
    case 1: rk_panel_rows<rk_tail_rows(0, 1), 0, 1>(m_lo, m_hi, 0, K, A, lda, nullptr, extra, c, ldc, 0, 0, ldj); break;
    case 2: rk_panel_rows<rk_tail_rows(0, 2), 0, 2>(m_lo, m_hi, 0, K, A, lda, nullptr, extra, c, ldc, 0, 0, ldj); break;
    case 3: rk_panel_rows<rk_tail_rows(0, 3), 0, 3>(m_lo, m_hi, 0, K, A, lda, nullptr, extra, c, ldc, 0, 0, ldj); break;
    case 4: rk_panel_rows<rk_tail_rows(0, 4), 0, 4>(m_lo, m_hi, 0, K, A, lda, nullptr, extra, c, ldc, 0, 0, ldj); break;
  }
}

// 16 columns of C (a vector a row) and ne more, dot products along K, in one kernel.
inline void rk_conv_vector_and_dots(int64_t m_lo, int64_t m_hi, int64_t K, const float* A, int64_t lda, const float* b, const float* extra, int ne,
                                    float* c, int64_t ldc, int64_t ldj) {
  switch (ne) {
    case 1: rk_panel_rows<rk_tail_rows(1, 1), 1, 1>(m_lo, m_hi, 0, K, A, lda, b, extra, c, ldc, 16, 16, ldj); break;
    case 2: rk_panel_rows<rk_tail_rows(1, 2), 1, 2>(m_lo, m_hi, 0, K, A, lda, b, extra, c, ldc, 16, 16, ldj); break;
    case 3: rk_panel_rows<rk_tail_rows(1, 3), 1, 3>(m_lo, m_hi, 0, K, A, lda, b, extra, c, ldc, 16, 16, ldj); break;
    case 4: rk_panel_rows<rk_tail_rows(1, 4), 1, 4>(m_lo, m_hi, 0, K, A, lda, b, extra, c, ldc, 16, 16, ldj); break;
  }
}
#endif

// The rows [m_lo, m_hi) of C for panels [p_lo, p_hi), K in slices of kRkPanelDepth (one pass
// up to 8192: a panel of that depth, 1 MiB, still fits L2); a last panel in another shape
// (rk_tail_shape) in one pass over K. With `direct` (B itself, K rows ldd apart: a 1x1 conv's
// input, a row-major matrix), full panels are read from it in place; only the last, if short,
// is packed. AVX2 slices K across the tile (rk_sliced_tile).
__attribute__((noinline)) inline void rk_conv_gemm_tile(int64_t m_lo, int64_t m_hi, int64_t p_lo, int64_t p_hi, int64_t N, int64_t K, const float* A,
                                                        int64_t lda, const float* panels, RkOut out, const float* direct = nullptr, int64_t ldd = 0) {
#if !defined(__AVX512F__)
  rk_sliced_tile(m_lo, m_hi, p_lo, p_hi, N, K, A, lda, panels, out, direct, ldd, false);
#else
  const int64_t ldc = out.ldc, ldj = out.ldj;
  for (int64_t p = p_lo; p < p_hi; ++p) {
    const int64_t ncols = rk_min(kRkPanelCols, N - p * kRkPanelCols);
    const RkTailShape t = rk_tail_shape(ncols);
    const float* b = panels + p * K * kRkPanelCols;
    const float* extra = b + K * 16 * t.nv;
    float* c = out.C + p * kRkPanelCols * ldj;
    // One instantiation per shape: each is a kernel of its own.
    if (t.nv == 2) rk_full_panel(m_lo, m_hi, p, ncols, K, A, lda, panels, out, direct, ldd);
    else if (t.nv == 1 && t.ne == 0) rk_panel_rows<rk_tail_rows(1, 0), 1, 0>(m_lo, m_hi, 0, K, A, lda, b, nullptr, c, ldc, ncols, 16, ldj);
    else if (t.nv == 1) rk_conv_vector_and_dots(m_lo, m_hi, K, A, lda, b, extra, t.ne, c, ldc, ldj);
    else rk_conv_dot_columns(m_lo, m_hi, K, A, lda, extra, t.ne, c, ldc, ldj);
  }
#endif
}

// C[M x N] (rows ldc apart) = A[M x K] (rows lda apart) x im2col(image) (K x N). A 1x1 stride-1
// conv over a contiguous plane needs no im2col: its input is B, K rows of N pixels, and full
// panels can be read from it in place. That pays where the pack (a copy, K x N) is large against
// the multiply (M x K x N): with K >= 2 M, 0.47-0.85x the time on mobilenet_v2's and
// squeezenet's shapes; with more rows than K, reading strided rows for every block of rows cost
// 3-10% more than packing them once.
inline void rk_conv_gemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* image, const RkConvWindow& window, float* panels,
                         float* C, int64_t ldc, RkEpilogue epilogue) {
  const bool in_place = window.taps_h == 1 && window.taps_w == 1 && window.stride_h == 1 && window.stride_w == 1 && window.pad_h == 0 &&
                        window.pad_w == 0 && window.col_step == 1 && window.row_step == window.in_w && K >= 2 * M && N >= 2 * kRkPanelCols &&
                        rk_rows_in_place(window.channel_step, K);
  struct Arg {
    const float* image;
    const RkConvWindow* window;
    int64_t N, K;
  } arg{image, &window, N, K};
  const RkPackPanels pack = [](const void* a, int64_t p_lo, int64_t p_hi, bool padded, float* panels) {
    const Arg& c = *static_cast<const Arg*>(a);
    for (int64_t p = p_lo; p < p_hi; ++p) {
      const RkTailShape shape = padded ? RkTailShape{2, 0} : rk_tail_shape(rk_min(kRkPanelCols, c.N - p * kRkPanelCols));
      rk_pack_conv_panel(c.image, *c.window, p, shape, panels + (p - p_lo) * c.K * kRkPanelCols);
    }
  };
  rk_panel_gemm(M, N, K, A, lda, pack, &arg, in_place ? image : nullptr, window.channel_step, panels, RkOut{C, ldc, 1}, rk_conv_gemm_tile, false,
                epilogue);
}

}  // namespace
#endif  // RK_CPP_CONV_GEMM_H
