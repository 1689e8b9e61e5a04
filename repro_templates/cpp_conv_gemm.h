// reprokit generated code: the GEMM of float convolutions (part of cpp_prelude.h, compiled only
// into the kernels unit that defines RK_CONV_KERNELS).
//
// conv2d is out[M = out channels, N = output pixels] = weights[M, K = in channels x taps] x
// col[K, N]. im2col writes col straight into 32-column panels, col[(panel * K + k) * 32 + j],
// zero past N: the shape a BLAS would copy the operand into on every call anyway. The weights
// are read where they lie (rows lda apart): a BLAS packs them on every call too, because here
// they are graph inputs; that packing was a third of resnet18's GEMM time (issue 24). A block of
// 8 rows x 32 columns is kept in 16 vector registers over the whole of K: measured against
// slices of K (256, 1024), one pass lets the hardware prefetcher stream each weight row, which
// mattered more than keeping the panel's slice in L1 (resnet18's layer3: 220 -> 255 GFLOP/s).

// Vector of 16 floats that GCC maps to one AVX-512 register (two AVX, four SSE).
typedef float rk_f32x16 __attribute__((vector_size(64), aligned(4), may_alias));

// Rows per block: AVX-512 keeps 8 x 2 accumulators and the panel's 2 vectors in its 32 registers;
// elsewhere a 16-float vector takes two of 16 registers, and 2 rows (8 + 4) fit.
#if defined(__AVX512F__)
constexpr int kRkPanelRows = 8;
#else
constexpr int kRkPanelRows = 2;
#endif
constexpr int64_t kRkPanelCols = 32, kRkPanelDepth = 8192, kRkTileRows = 128, kRkTilePanels = 8;

// The last panel's columns (N mod 32) are computed in the panel's own shape, not padded to 32:
// nv vectors of 16 from the panel (rows 16 nv floats apart) and ne columns (at most 4) each
// stored contiguous along K after them, multiplied as dot products along K. resnet18's layer4
// (N = 7 x 7 = 49 = 32 + 16 + 1) computed 64 columns for 49, layer3 (196 = 6 x 32 + 4) 224.
struct RkTailShape {
  int nv, ne;
};
inline RkTailShape rk_tail_shape(int64_t ncols) {
  if (ncols > 20) return {2, 0};
  if (ncols > 16) return {1, (int)ncols - 16};
  if (ncols > 4) return {1, 0};
  return {0, (int)ncols};
}

// 16 floats from p, zero past the first n (a last step of K shorter than 16).
__attribute__((noinline)) inline rk_f32x16 rk_load_part(const float* p, int64_t n) {
  float t[16] = {};
  std::memcpy(t, p, (size_t)n * 4);
  rk_f32x16 v;
  std::memcpy(&v, t, 64);
  return v;
}

// c[rows x (16 nv + ne)] (+)= a[rows x K] (rows lda apart) x (b[K x 16 NV] (rows ldb apart) |
// extra[NE x K]^T): one panel (ldb = 16 NV), a 1x1 conv's input in place (ldb = its plane), or
// the last panel in its shape; rows <= MR (a block short of MR computes its last row again and
// stores it once). Only the first ncols of the vector columns are stored.
template <int MR, int NV, int NE>
inline void rk_panel_block(int rows, int64_t K, const float* a0, int64_t lda, const float* b, int64_t ldb, const float* extra, float* c, int64_t ldc,
                           int64_t ncols, bool accumulate) {
  constexpr int64_t W = 16 * NV;  // floats per panel row
  const float* a[MR];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) a[r] = a0 + (r < rows ? r : rows - 1) * lda;
  rk_f32x16 acc[MR][NV > 0 ? NV : 1], dot[MR][NE > 0 ? NE : 1];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < NV; ++v) acc[r][v] = rk_f32x16{};
    for (int e = 0; e < NE; ++e) dot[r][e] = rk_f32x16{};
  }
  for (int64_t k16 = 0; k16 < K; k16 += 16) {
    // The weights stream from memory once per run (resnet18: 47 MB), MR rows lda apart, which
    // the hardware prefetcher follows poorly: ask for each row's line 128 floats ahead.
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) __builtin_prefetch(a[r] + k16 + 128, 0, 3);
    const int64_t k_end = rk_min(K, k16 + 16);
    if constexpr (NV > 0) {
      for (int64_t k = k16; k < k_end; ++k) {
        // The panel's lines 32 rows ahead: each row is read once per block at two lines per
        // 8 cycles, faster than the L1 prefetcher brings them from L2 (+13% on resnet18's shapes).
#pragma GCC unroll 2
        for (int v = 0; v < NV; ++v) __builtin_prefetch(b + (k + 32) * ldb + 16 * v, 0, 3);
        rk_f32x16 bv[NV];
#pragma GCC unroll 2
        for (int v = 0; v < NV; ++v) bv[v] = *(const rk_f32x16*)(b + k * ldb + 16 * v);
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) {
          const float av = a[r][k];
#pragma GCC unroll 2
          for (int v = 0; v < NV; ++v) acc[r][v] += av * bv[v];
        }
      }
    }
    if constexpr (NE > 0) {
      // 16 steps of K at once, lanes along K (a last short step zero-padded).
      const int64_t n = k_end - k16;
      rk_f32x16 xv[NE];
      for (int e = 0; e < NE; ++e) xv[e] = n == 16 ? *(const rk_f32x16*)(extra + e * K + k16) : rk_load_part(extra + e * K + k16, n);
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) {
        const rk_f32x16 ar = n == 16 ? *(const rk_f32x16*)(a[r] + k16) : rk_load_part(a[r] + k16, n);
        for (int e = 0; e < NE; ++e) dot[r][e] += ar * xv[e];
      }
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    if (r >= rows) break;
    float* cr = c + r * ldc;
    if (NV > 0 && ncols == W) {
      for (int v = 0; v < NV; ++v) {
        if (accumulate) acc[r][v] += *(const rk_f32x16*)(cr + 16 * v);
        *(rk_f32x16*)(cr + 16 * v) = acc[r][v];
      }
    } else if (NV > 0) {  // a last panel padded in vectors: only its columns below N
      float t[W > 0 ? W : 1];
      std::memcpy(t, &acc[r][0], sizeof(float) * W);
      for (int64_t j = 0; j < ncols; ++j) cr[j] = accumulate ? cr[j] + t[j] : t[j];
    }
    for (int e = 0; e < NE; ++e) {
      float t[16], sum = 0;
      std::memcpy(t, &dot[r][e], 64);
      for (int l = 0; l < 16; ++l) sum += t[l];
      cr[W + e] = accumulate ? cr[W + e] + sum : sum;
    }
  }
}

// Panel p of im2col: for each channel and tap (row k), the input under that tap for output
// pixels 32p..32p+31, zero in the padding and past the last pixel; in `shape`: rows of 16 nv
// floats, then ne columns each contiguous along K. Offsets are int32 (the generator checks the
// input is small enough).
inline void rk_pack_conv_panel(const float* x, const RkConvWindow& w, int64_t p, RkTailShape shape, float* dst) {
  const int64_t K = w.channels * w.taps_h * w.taps_w, W = 16 * shape.nv;
  float* extra = dst + K * W;
  int64_t row = 0;
  alignas(64) int32_t top[32], left[32];  // input row and column of tap (0, 0), per pixel
  for (int64_t c = 0; c < 32; ++c) {
    const int64_t q = p * 32 + c;
    top[c] = q < w.plane ? (int32_t)((q / w.out_w) * w.stride_h - w.pad_h) : -(1 << 30);
    left[c] = q < w.plane ? (int32_t)((q % w.out_w) * w.stride_w - w.pad_w) : -(1 << 30);
  }
#if defined(__AVX512F__)
  // 16 pixels a vector: a masked gather per tap (masked lanes, the padding, are never read).
  __m512i y0[2], x0[2], at0[2];
  const __m512i rows = _mm512_set1_epi32((int32_t)w.in_h), cols = _mm512_set1_epi32((int32_t)w.in_w);
  const __m512i row_step = _mm512_set1_epi32((int32_t)w.row_step), col_step = _mm512_set1_epi32((int32_t)w.col_step);
  // A half whose 16 pixels lie on one output row reads 16 consecutive inputs (unit strides):
  // one masked load instead of a gather (about 4x cheaper); at stride 2, every other one of
  // 32 consecutive inputs (two masked loads and a permute; resnet18's first conv).
  bool along_row[2];
  int64_t first[2];
  const bool unit = w.stride_w == 1 && w.col_step == 1;
#if defined(__BMI2__)
  const bool stride2 = w.stride_w == 2 && w.col_step == 1;
#else
  const bool stride2 = false;
#endif
  const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  for (int h = 0; h < 2; ++h) {
    along_row[h] = (unit || stride2) && p * 32 + 16 * h + 15 < w.plane && top[16 * h] == top[16 * h + 15];
    first[h] = (int64_t)top[16 * h] * w.row_step + (int64_t)left[16 * h] * w.col_step;
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
          __m512 v;
          if (along_row[h] && unit) {
            v = _mm512_maskz_loadu_ps(ok, xc + first[h] + tap);
#if defined(__BMI2__)
          } else if (along_row[h]) {  // lane t reads input 2t: the lane mask spread over even positions
            const float* at = xc + first[h] + tap;
            const __m512 lo = _mm512_maskz_loadu_ps((__mmask16)_pdep_u32(ok & 0xFFu, 0x5555u), at);
            const __m512 hi = _mm512_maskz_loadu_ps((__mmask16)_pdep_u32((unsigned)ok >> 8, 0x5555u), at + 16);
            v = _mm512_permutex2var_ps(lo, evens, hi);
#endif
          } else {
            v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), ok, _mm512_add_epi32(at0[h], shift), xc, 4);
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
  for (int64_t ic = 0; ic < w.channels; ++ic) {
    const float* xc = x + ic * w.channel_step;
    for (int64_t i = 0; i < w.taps_h; ++i)
      for (int64_t j = 0; j < w.taps_w; ++j, ++row)
        for (int64_t c = 0; c < W + shape.ne; ++c) {
          const int64_t y = top[c] + i * w.dilation_h, xx = left[c] + j * w.dilation_w;
          const float v = (y >= 0 && y < w.in_h && xx >= 0 && xx < w.in_w) ? xc[y * w.row_step + xx * w.col_step] : 0.0f;
          if (c < W) dst[row * W + c] = v;
          else extra[(c - W) * K + row] = v;
        }
  }
#endif
}

// Rows [m_lo, m_hi) of C for one panel in `shape` (ncols of its columns below N), MR rows a block.
template <int MR, int NV, int NE>
inline void rk_panel_rows(int64_t m_lo, int64_t m_hi, int64_t k0, int64_t depth, const float* A, int64_t lda, const float* b,
                          const float* extra, float* C, int64_t ldc, int64_t ncols, int64_t ldb = 16 * NV) {
  for (int64_t m = m_lo; m < m_hi; m += MR)
    rk_panel_block<MR, NV, NE>((int)rk_min<int64_t>(MR, m_hi - m), depth, A + m * lda + k0, lda, b, ldb, extra, C + m * ldc, ldc, ncols, k0 > 0);
}

// Rows per block of a last panel's kernel: its accumulators (MR x (nv + ne) vectors) stay in
// registers with the operands beside them.
constexpr int rk_tail_rows(int vectors) { return kRkPanelRows == 8 ? (vectors <= 2 ? 8 : 4) : (vectors <= 2 ? 2 : 1); }

// The rows [m_lo, m_hi) of C for panels [p_lo, p_hi), K in slices of kRkPanelDepth (one pass
// up to 8192: a panel of that depth, 1 MiB, still fits L2); a last panel in another shape
// (rk_tail_shape) in one pass over K. With `direct` (a 1x1 conv's input, K rows ldd apart), full
// panels are read from it in place; only the last, if short, is packed.
inline void rk_conv_gemm_tile(int64_t m_lo, int64_t m_hi, int64_t p_lo, int64_t p_hi, int64_t N, int64_t K, const float* A, int64_t lda,
                              const float* panels, float* C, int64_t ldc, const float* direct = nullptr, int64_t ldd = 0) {
  for (int64_t p = p_lo; p < p_hi; ++p) {
    const int64_t ncols = rk_min(kRkPanelCols, N - p * kRkPanelCols);
    const RkTailShape t = rk_tail_shape(ncols);
    const float* b = panels + p * K * kRkPanelCols;
    const float* extra = b + K * 16 * t.nv;
    float* c = C + p * kRkPanelCols;
    // One instantiation per shape: each is a kernel of its own.
    switch (t.nv * 8 + t.ne) {
      case 16: {
        const int64_t ldb = direct ? ldd : kRkPanelCols;
        if (direct) b = direct + p * kRkPanelCols;
        for (int64_t k0 = 0; k0 < K; k0 += kRkPanelDepth)
          rk_panel_rows<kRkPanelRows, 2, 0>(m_lo, m_hi, k0, rk_min(kRkPanelDepth, K - k0), A, lda, b + k0 * ldb, nullptr, c, ldc, ncols, ldb);
        break;
      }
      case 8: rk_panel_rows<rk_tail_rows(1), 1, 0>(m_lo, m_hi, 0, K, A, lda, b, nullptr, c, ldc, ncols); break;
      case 9: rk_panel_rows<rk_tail_rows(2), 1, 1>(m_lo, m_hi, 0, K, A, lda, b, extra, c, ldc, 16); break;
      case 10: rk_panel_rows<rk_tail_rows(3), 1, 2>(m_lo, m_hi, 0, K, A, lda, b, extra, c, ldc, 16); break;
      case 11: rk_panel_rows<rk_tail_rows(4), 1, 3>(m_lo, m_hi, 0, K, A, lda, b, extra, c, ldc, 16); break;
      case 12: rk_panel_rows<rk_tail_rows(5), 1, 4>(m_lo, m_hi, 0, K, A, lda, b, extra, c, ldc, 16); break;
      case 1: rk_panel_rows<rk_tail_rows(1), 0, 1>(m_lo, m_hi, 0, K, A, lda, b, extra, c, ldc, 0); break;
      case 2: rk_panel_rows<rk_tail_rows(2), 0, 2>(m_lo, m_hi, 0, K, A, lda, b, extra, c, ldc, 0); break;
      case 3: rk_panel_rows<rk_tail_rows(3), 0, 3>(m_lo, m_hi, 0, K, A, lda, b, extra, c, ldc, 0); break;
      case 4: rk_panel_rows<rk_tail_rows(4), 0, 4>(m_lo, m_hi, 0, K, A, lda, b, extra, c, ldc, 0); break;
    }
  }
}

// C[M x N] (rows ldc apart) = A[M x K] (rows lda apart) x im2col(image) (K x N), through panels
// (room for all of them). A 1x1 stride-1 conv over a contiguous plane needs no im2col: its
// input is B, K rows of N pixels, and full panels can be read from it in place. That pays where
// the pack (a copy, K x N) is large against the multiply (M x K x N): with K >= 2 M, 0.47-0.85x
// the time on mobilenet_v2's and squeezenet's shapes; with more rows than K, reading strided
// rows for every block of rows cost 3-10% more than packing them once. With panels enough to
// share out, each thread packs a group of panels
// (about 512 KiB) and multiplies every row by it while it is still in its own L2: the whole of
// B (resnet18's first layers: 7 MiB) never goes out to L3 and back. With few panels (small
// images, deep layers), or weights too large to stay in L2 while each group streams them, all
// panels are packed first and tiles of rows x panels are shared out instead.
inline void rk_conv_gemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* image, const RkConvWindow& window, float* panels,
                         float* C, int64_t ldc) {
  const int64_t np = (N + kRkPanelCols - 1) / kRkPanelCols;
  int64_t threads = 1;
#ifdef _OPENMP
  if (2.0 * (double)M * (double)N * (double)K >= kRkGemmParallelFlops && !omp_in_parallel()) threads = omp_get_max_threads();
#endif
  const bool in_place = window.taps_h == 1 && window.taps_w == 1 && window.stride_h == 1 && window.stride_w == 1 && window.pad_h == 0 &&
                        window.pad_w == 0 && window.col_step == 1 && window.row_step == window.in_w && K >= 2 * M && N >= 2 * kRkPanelCols;
  const float* direct = in_place ? image : nullptr;
  const int64_t ldd = window.channel_step;
  const auto pack = [&](int64_t p) {
    const int64_t ncols = rk_min(kRkPanelCols, N - p * kRkPanelCols);
    if (!in_place || ncols < kRkPanelCols) rk_pack_conv_panel(image, window, p, rk_tail_shape(ncols), panels + p * K * kRkPanelCols);
  };
  if (np >= 2 * threads && M * K * 4 <= (int64_t{1} << 20)) {
    const int64_t group = rk_max<int64_t>(1, rk_min(np / (2 * threads), (int64_t{512} << 10) / (K * kRkPanelCols * 4)));
    const int64_t groups = (np + group - 1) / group;
#pragma omp parallel for schedule(dynamic) num_threads(threads)
    for (int64_t t = 0; t < groups; ++t) {
      const int64_t p_lo = t * group, p_hi = rk_min(np, p_lo + group);
      for (int64_t p = p_lo; p < p_hi; ++p) pack(p);
      rk_conv_gemm_tile(0, M, p_lo, p_hi, N, K, A, lda, panels, C, ldc, direct, ldd);
    }
    return;
  }
#pragma omp parallel num_threads(threads)
  {
#pragma omp for schedule(static)
    for (int64_t p = 0; p < np; ++p) pack(p);
    const int64_t row_tiles = (M + kRkTileRows - 1) / kRkTileRows, panel_tiles = (np + kRkTilePanels - 1) / kRkTilePanels;
#pragma omp for schedule(dynamic) collapse(2)
    for (int64_t ti = 0; ti < row_tiles; ++ti)
      for (int64_t tj = 0; tj < panel_tiles; ++tj) {
        const int64_t m_lo = ti * kRkTileRows, m_hi = rk_min(M, (ti + 1) * kRkTileRows), p_lo = tj * kRkTilePanels, p_hi = rk_min(np, (tj + 1) * kRkTilePanels);
        // Whichever of the tile's weights and panels is larger is read once: panels outermost
        // (each panel against every row), or, with more rows than panel columns, blocks of rows
        // outermost (resnet18's layer4: 2.4 MiB of weights a tile against 1.2 MiB of panels,
        // 740-753 against 792-840 us a conv).
        const int64_t rows_at_once = m_hi - m_lo > kRkPanelCols * (p_hi - p_lo) ? kRkPanelRows : m_hi - m_lo;
        for (int64_t m = m_lo; m < m_hi; m += rows_at_once)
          rk_conv_gemm_tile(m, rk_min(m_hi, m + rows_at_once), p_lo, p_hi, N, K, A, lda, panels, C, ldc, direct, ldd);
      }
  }
}
