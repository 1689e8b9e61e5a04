// reprokit generated code: the float GEMM kernel (part of cpp_prelude.h, compiled only into the
// kernels units, RK_GEMM_KERNELS and RK_CONV_KERNELS).
//
// C[M x N] = A[M x K] x B[K x N]: A is read where it lies (rows lda apart), B is copied into
// 32-column panels, panel[(p * K + k) * 32 + j], zero past N: the shape a BLAS would copy the
// operand into on every call anyway. A BLAS packs A on every call too, because here it is a
// graph input (a conv's weights, a linear layer's); that packing was a third of resnet18's GEMM
// time. A block of 8 rows x 32 columns is kept in 16 vector registers over the whole
// of K: measured against slices of K (256, 1024), one pass lets the hardware prefetcher stream
// each row of A, which mattered more than keeping the panel's slice in L1 (resnet18's layer3:
// 220 -> 255 GFLOP/s). Convolutions (cpp_conv_gemm.h) fill the panels by im2col; matmuls
// (rk_matmul_f32) by copying B, or A^T for a product computed as its transpose.
#ifndef RK_CPP_PANEL_GEMM_H
#define RK_CPP_PANEL_GEMM_H
#include "cpp_base.h"

namespace {

// Vector of 16 floats that GCC maps to one AVX-512 register (two AVX, four SSE).
typedef float rk_f32x16 __attribute__((vector_size(64), aligned(4), may_alias));
// A block's accumulators are rk_fvec, the machine's own vector (cpp_base.h). Without AVX-512,
// GCC builds `scalar * rk_f32x16` through the stack, 16 stores and reloads a broadcast, and keeps
// the accumulators there too: 3 GFLOP/s on a 1x1 conv where native vectors reach 10x that.

// Rows per block: AVX-512 keeps 8 x 2 accumulators and the panel's 2 vectors in its 32 registers.
// AVX2 has 16 registers of 8 floats: a 32-column panel is multiplied a 16-column half at a time,
// 6 rows of 2 accumulators (12) beside the half-row and a broadcast. Whole 32-column rows fit only
// 2 at a time (8 accumulators), whose panel row was loaded again for every 2 rows: on a Zen 3,
// resnet18's 3x3 convs at 14 x 14 and 7 x 7 (K = 2304, 4608) ran at 42 and 31 GFLOP/s that way.
#if defined(__AVX512F__)
constexpr int kRkPanelRows = 8;
#else
constexpr int kRkPanelRows = 6;
#endif
constexpr int64_t kRkPanelCols = 32, kRkPanelDepth = 8192, kRkTileRows = 128, kRkTilePanels = 8, kRkEpilogueRows = 64, kRkStreamDepth = 128;
// Without AVX-512 a tile's K is multiplied in slices (rk_sliced_tile), kRkSliceDepth deep: a
// slice of a 32-column panel is 32 KiB, L1's size.
#if defined(__AVX512F__)
constexpr bool kRkSlicedTiles = false;
#else
constexpr bool kRkSlicedTiles = true;
#endif
constexpr int64_t kRkSliceDepth = 256;

// Whether K rows of B, ld floats apart, can be read in place by a panel and stay in cache for
// the next block of rows: rows a multiple of 2^j bytes apart share a 2^(j-6)th of a cache's sets.
// Modelled as a cache of 1024 sets of 8 ways (smaller than any L2 this code meets); rows it
// cannot hold are packed. A matmul by a 768 x 3072 weight (rows 12 KiB apart) read in place took
// 1.7x the time of packing it first; a 1x1 conv of 32 channels over 112 x 112 (50 KiB) half.
inline bool rk_rows_in_place(int64_t ld, int64_t K) {
  const int64_t bytes = ld * (int64_t)sizeof(float), alignment = bytes & -bytes;
  const int64_t sets = alignment <= 64 ? 1024 : rk_max<int64_t>(1, 65536 / rk_min<int64_t>(alignment, 65536));
  return sets * 8 >= K;
}

// A conv's last panel (N mod 32 columns) is computed in the panel's own shape, not padded to 32
// (a matmul's is padded: rk_full_panel_tile, one kernel shape to compile):
// nv vectors of 16 from the panel (rows 16 nv floats apart) and ne columns (at most 4) each
// stored contiguous along K after them, multiplied as dot products along K. resnet18's layer4
// (N = 7 x 7 = 49 = 32 + 16 + 1) computed 64 columns for 49, layer3 (196 = 6 x 32 + 4) 224.
struct RkTailShape {
  int nv, ne;
};
// AVX2 keeps no dot columns in the panel: a last panel is one or two vectors of 16, zero-padded,
// as every panel is multiplied in slices of K (rk_sliced_tile); of its last 8 columns or fewer,
// up to 4 are gathered along K slice by slice and multiplied as dot products (rk_dot_block), more
// one vector of 8 wide (rk_panel_rows8). Dot columns over the whole of K, 4 rows at a time, were
// a pass over all of A of their own: resnet18's 512 x 4608 x 49 GEMM (49 = 32 + 16 + 1) took 4.6
// ms, 1.3x the time of 512 x 4608 x 64.
inline RkTailShape rk_tail_shape(int64_t ncols) {
#if defined(__AVX512F__)
  if (ncols > 20) return {2, 0};
  if (ncols > 16) return {1, (int)ncols - 16};
  if (ncols > 4) return {1, 0};
  return {0, (int)ncols};
#else
  return {ncols > 16 ? 2 : 1, 0};
#endif
}

// Lanes of two vectors side by side (lanes 16.. are the second's), for __builtin_shuffle: the
// even and odd ones, and the pairs, quads and halves of each.
typedef int32_t rk_i32x16 __attribute__((vector_size(64)));
constexpr rk_i32x16 kRkEvenLanes = {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30};
constexpr rk_i32x16 kRkOddLanes = {1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31};
constexpr rk_i32x16 kRkEvenPairs = {0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29};
constexpr rk_i32x16 kRkOddPairs = {2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31};
constexpr rk_i32x16 kRkEvenQuads = {0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27};
constexpr rk_i32x16 kRkOddQuads = {4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31};
constexpr rk_i32x16 kRkLowHalves = {0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23};
constexpr rk_i32x16 kRkHighHalves = {8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31};

// Lane i of the result is the sum of the 16 lanes of v[i] (n <= 16 vectors, zero past n): each
// level adds pairs of vectors' halves, then quarters, eighths and lanes, 15 adds in all where
// summing each vector's lanes one at a time took 16 x 15 dependent scalar adds (the dotted
// columns of a last panel: a 14 x 14 conv's 4, with K = 64, spent more on them than on its K).
inline rk_f32x16 rk_sum_lanes(const rk_f32x16* v, int n) {
  rk_f32x16 x[16], y[8], z[4], w[2];
  for (int i = 0; i < 16; ++i) x[i] = i < n ? v[i] : rk_f32x16{};
  for (int i = 0; i < 8; ++i)  // y[i]: x[2i]'s halves summed, then x[2i + 1]'s
    y[i] = __builtin_shuffle(x[2 * i], x[2 * i + 1], kRkLowHalves) + __builtin_shuffle(x[2 * i], x[2 * i + 1], kRkHighHalves);
  for (int i = 0; i < 4; ++i)  // z[i]: quads of x[4i] .. x[4i + 3] in order
    z[i] = __builtin_shuffle(y[2 * i], y[2 * i + 1], kRkEvenQuads) + __builtin_shuffle(y[2 * i], y[2 * i + 1], kRkOddQuads);
  for (int i = 0; i < 2; ++i)  // w[i]: pairs of x[8i] .. x[8i + 7]
    w[i] = __builtin_shuffle(z[2 * i], z[2 * i + 1], kRkEvenPairs) + __builtin_shuffle(z[2 * i], z[2 * i + 1], kRkOddPairs);
  return __builtin_shuffle(w[0], w[1], kRkEvenLanes) + __builtin_shuffle(w[0], w[1], kRkOddLanes);
}

// 16 floats from p, zero past the first n (a last step of K shorter than 16).
__attribute__((noinline)) inline rk_f32x16 rk_load_part(const float* p, int64_t n) {
  float t[16] = {};
  std::memcpy(t, p, (size_t)n * 4);
  rk_f32x16 v;
  std::memcpy(&v, t, 64);
  return v;
}

// Rows of a block (rows x (w + ne) floats in t, of which the first `cols` and the last ne are
// stored) as columns: element (r, j) to c[r ldc + j ldj].
__attribute__((noinline)) inline void rk_store_transposed(const float* t, int rows, int64_t w, int64_t ne, int64_t cols, float* c, int64_t ldc,
                                                          int64_t ldj, bool accumulate) {
  for (int64_t j = 0; j < cols + ne; ++j) {
    const int64_t col = j < cols ? j : w + (j - cols);
    float* cj = c + col * ldj;
    for (int r = 0; r < rows; ++r) cj[r * ldc] = accumulate ? cj[r * ldc] + t[r * (w + ne) + col] : t[r * (w + ne) + col];
  }
}

// c[rows x (16 nv + ne)] (+)= a[rows x K] (rows lda apart) x (b[K x 16 NV] (rows ldb apart) |
// extra[NE x K]^T): one panel (ldb = 16 NV), a 1x1 conv's input in place (ldb = its plane), or
// the last panel in its shape; rows <= MR (a block short of MR computes its last row again and
// stores it once). Only the first ncols of the vector columns are stored. Element (r, j) of c is
// c[r ldc + j ldj]: ldj = 1 but for a matmul computed as its transpose (rk_matmul_f32).
template <int MR, int NV, int NE>
inline void rk_panel_block(int rows, int64_t K, const float* a0, int64_t lda, const float* b, int64_t ldb, const float* extra, float* c, int64_t ldc,
                           int64_t ncols, bool accumulate, int64_t ldj = 1) {
  constexpr int64_t W = 16 * NV;  // floats per panel row
  // What row k prefetches, at k ldb (see the loop below); the next panel's rows only where they
  // and this panel's fit in L1 together (32 KiB: the smallest this code meets). With deeper K
  // they evicted the rows the block after needs (192 rows at 28 x 28: 7-11% slower).
  const float* const ahead = ldb == W || 2 * K * W * (int64_t)sizeof(float) > (int64_t{32} << 10) ? b + 32 * ldb : b + W;
  const float* a[MR];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) a[r] = a0 + (r < rows ? r : rows - 1) * lda;
  constexpr int NW = NV * 16 / kRkLanes;  // machine vectors a panel row
  rk_fvec acc[MR][NW > 0 ? NW : 1];
  rk_f32x16 dot[MR][NE > 0 ? NE : 1];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < NW; ++v) acc[r][v] = rk_fvec{};
    for (int e = 0; e < NE; ++e) dot[r][e] = rk_f32x16{};
  }
  for (int64_t k16 = 0; k16 < K; k16 += 16) {
    // The weights stream from memory once per run (resnet18: 47 MB), MR rows lda apart, which
    // the hardware prefetcher follows poorly: ask for each row's line 128 floats ahead, and past
    // its end for the same row of the next block, which starts cold otherwise (mobilenet_v2's
    // 1x1 convs at 7 x 7, each block a pass over 320-960 floats of 8 rows: 11-18% faster).
    const int64_t ahead_k = k16 + 128 < K ? k16 + 128 : k16 + 128 - K + MR * lda;
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) __builtin_prefetch(a[r] + ahead_k, 0, 3);
    const int64_t k_end = rk_min(K, k16 + 16);
    if constexpr (NV > 0) {
      for (int64_t k = k16; k < k_end; ++k) {
        // A packed panel's lines 32 rows ahead: each row is read once per block at two lines per
        // 8 cycles, faster than the L1 prefetcher brings them from L2 (+13% on resnet18's shapes).
        // A shallow panel read in place (rows a plane apart) has its row's lines in the next
        // panel's place asked for instead: 32 rows ahead is past its end, and the first block of
        // each panel waited on every row (mobilenet_v2's 32 -> 16 conv at 112 x 112, in the
        // model, one thread: 222 -> 104 us; 96 -> 24 at 56 x 56: 149 -> 116 us).
#pragma GCC unroll 2
        for (int v = 0; v < NV; ++v) __builtin_prefetch(ahead + k * ldb + 16 * v, 0, 3);
        rk_fvec bv[NW];
#pragma GCC unroll 4
        for (int v = 0; v < NW; ++v) bv[v] = *(const rk_fvec*)(b + k * ldb + kRkLanes * v);
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) {
          const float av = a[r][k];
#pragma GCC unroll 4
          for (int v = 0; v < NW; ++v) acc[r][v] += av * bv[v];
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
  // Transposed (ldj != 1): the block goes to a buffer, stored from there by a function of its
  // own (one copy of the store code per kernel shape, not two: compile time).
  float tile[MR * (W + NE)];
  float sums[NE > 0 ? MR * NE : 1];  // the dotted columns, row by row
  if constexpr (NE > 0) {
    static_assert(MR * NE <= 16, "one vector of sums");
    const rk_f32x16 s = rk_sum_lanes(&dot[0][0], MR * NE);
    std::memcpy(sums, &s, sizeof sums);
  }
  const bool transposed = ldj != 1;
  float* const out = transposed ? tile : c;
  const int64_t ldo = transposed ? W + NE : ldc;
  const bool add = !transposed && accumulate;
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    if (r >= rows) break;
    float* cr = out + r * ldo;
    if (NV > 0 && ncols == W) {
      for (int v = 0; v < NW; ++v) {
        if (add) acc[r][v] += *(const rk_fvec*)(cr + kRkLanes * v);
        *(rk_fvec*)(cr + kRkLanes * v) = acc[r][v];
      }
    } else if (NV > 0) {  // a last panel padded in vectors: only its columns below N
      float t[W > 0 ? W : 1];
      std::memcpy(t, &acc[r][0], sizeof(float) * W);
      for (int64_t j = 0; j < ncols; ++j) cr[j] = add ? cr[j] + t[j] : t[j];
    }
    for (int e = 0; e < NE; ++e) cr[W + e] = add ? cr[W + e] + sums[r * NE + e] : sums[r * NE + e];
  }
  if (transposed) rk_store_transposed(tile, rows, W, NE, NV > 0 ? rk_min<int64_t>(ncols, W) : 0, c, ldc, ldj, accumulate);
}

// Rows [m_lo, m_hi) of C for one panel in `shape` (ncols of its columns below N), MR rows a block.
template <int MR, int NV, int NE>
inline void rk_panel_rows(int64_t m_lo, int64_t m_hi, int64_t k0, int64_t depth, const float* A, int64_t lda, const float* b, const float* extra,
                          float* C, int64_t ldc, int64_t ncols, int64_t ldb = 16 * NV, int64_t ldj = 1) {
  for (int64_t m = m_lo; m < m_hi; m += MR)
    rk_panel_block<MR, NV, NE>((int)rk_min<int64_t>(MR, m_hi - m), depth, A + m * lda + k0, lda, b, ldb, extra, C + m * ldc, ldc, ncols, k0 > 0, ldj);
}

#if !defined(__AVX512F__)
// AVX2: c[rows x 8] (+)= a[rows x K] (rows lda apart) x b[K x 8] (rows ldb apart), rows <= MR,
// ncols <= 8 of the columns stored (element (r, j) at c[r ldc + j ldj]): the last 8 columns or
// fewer of a panel, one vector wide, 12 rows a block (12 accumulators, as the 16-column kernel's 6
// rows of two). As the second half of a 16-column kernel they were 16 columns computed for 1 to 8:
// a 7 x 7 plane (49 = 32 + 17) computed 64 columns, now 56.
template <int MR>
inline void rk_panel_block8(int rows, int64_t K, const float* a0, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t ncols,
                            bool accumulate, int64_t ldj) {
  static_assert(kRkLanes == 8, "one AVX2 vector a row");
  const float* a[MR];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) a[r] = a0 + (r < rows ? r : rows - 1) * lda;
  rk_fvec acc[MR];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) acc[r] = rk_fvec{};
  for (int64_t k16 = 0; k16 < K; k16 += 16) {
    // A's rows 128 floats ahead, and past their end the next block's (rk_panel_block).
    const int64_t ahead_k = k16 + 128 < K ? k16 + 128 : k16 + 128 - K + MR * lda;
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) __builtin_prefetch(a[r] + ahead_k, 0, 3);
    const int64_t k_end = rk_min(K, k16 + 16);
    for (int64_t k = k16; k < k_end; ++k) {
      const rk_fvec bv = *(const rk_fvec*)(b + k * ldb);
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) acc[r] += a[r][k] * bv;
    }
  }
  float tile[MR * 8];
  const bool transposed = ldj != 1;
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    if (r >= rows) break;
    if (transposed) {
      *(rk_fvec*)(tile + 8 * r) = acc[r];
      continue;
    }
    float* cr = c + r * ldc;
    float t[8];
    std::memcpy(t, &acc[r], sizeof t);
    for (int64_t j = 0; j < ncols; ++j) cr[j] = accumulate ? cr[j] + t[j] : t[j];
  }
  if (transposed) rk_store_transposed(tile, rows, 8, 0, ncols, c, ldc, ldj, accumulate);
}
constexpr int kRkNarrowRows = 12;

// Rows [m_lo, m_hi) of C for the 8 columns of b (rows ldb apart), ncols of them stored.
inline void rk_panel_rows8(int64_t m_lo, int64_t m_hi, int64_t k0, int64_t depth, const float* A, int64_t lda, const float* b, int64_t ldb, float* C,
                           int64_t ldc, int64_t ncols, int64_t ldj) {
  for (int64_t m = m_lo; m < m_hi; m += kRkNarrowRows)
    rk_panel_block8<kRkNarrowRows>((int)rk_min<int64_t>(kRkNarrowRows, m_hi - m), depth, A + m * lda + k0, lda, b, ldb, C + m * ldc, ldc, ncols,
                                   k0 > 0, ldj);
}

// Lane i: the sum of the 8 lanes of v[i], for n <= 8 vectors (zero past n): halves, pairs,
// then lanes added across vectors, 7 adds for 8 sums (rk_sum_lanes does 16 of 16). The tree
// leaves vector j's sum in lane bitrev(j), so the vectors go in in that order.
inline rk_fvec rk_sum_lanes8(const rk_fvec* v, int n) {
  typedef int32_t RkLanes8 __attribute__((vector_size(32)));
  constexpr int kBitReversed[8] = {0, 4, 2, 6, 1, 5, 3, 7};
  rk_fvec x[8], y[4], z[2];
  for (int i = 0; i < 8; ++i) x[i] = kBitReversed[i] < n ? v[kBitReversed[i]] : rk_fvec{};
  for (int i = 0; i < 4; ++i)  // y[i]: 4 partial sums of x[2i], then of x[2i + 1]
    y[i] = __builtin_shuffle(x[2 * i], x[2 * i + 1], RkLanes8{0, 1, 2, 3, 8, 9, 10, 11}) +
           __builtin_shuffle(x[2 * i], x[2 * i + 1], RkLanes8{4, 5, 6, 7, 12, 13, 14, 15});
  for (int i = 0; i < 2; ++i)  // z[i]: 2 partial sums of x[4i], x[4i + 2], x[4i + 1], x[4i + 3]
    z[i] = __builtin_shuffle(y[2 * i], y[2 * i + 1], RkLanes8{0, 1, 8, 9, 4, 5, 12, 13}) +
           __builtin_shuffle(y[2 * i], y[2 * i + 1], RkLanes8{2, 3, 10, 11, 6, 7, 14, 15});
  return __builtin_shuffle(z[0], z[1], RkLanes8{0, 8, 2, 10, 4, 12, 6, 14}) + __builtin_shuffle(z[0], z[1], RkLanes8{1, 9, 3, 11, 5, 13, 7, 15});
}

// AVX2: c[rows x E] (+)= a[rows x K] (rows lda apart) x bt[E x K]^T, E columns of B each
// contiguous along K (K apart), rows <= MR (element (r, j) at c[r ldc + j ldj]): a panel's last
// 1 to 4 columns as dot products, 8 steps of K a vector. One vector wide (rk_panel_block8) they
// were 8 columns computed for 1 to 4: a 7 x 7 plane (49 = 48 + 1) computed 56. MR x E
// accumulators, E columns and a row of A in AVX2's 16 registers.
template <int MR, int E>
inline void rk_dot_block(int rows, int64_t K, const float* a0, int64_t lda, const float* bt, float* c, int64_t ldc, bool accumulate, int64_t ldj) {
  static_assert(MR * E <= 16, "two vectors of sums");
  const float* a[MR];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) a[r] = a0 + (r < rows ? r : rows - 1) * lda;
  rk_fvec acc[MR * E];
#pragma GCC unroll 16
  for (int i = 0; i < MR * E; ++i) acc[i] = rk_fvec{};
  const auto step = [&](int64_t k) {
    rk_fvec bv[E];
#pragma GCC unroll 4
    for (int e = 0; e < E; ++e) bv[e] = *(const rk_fvec*)(bt + e * K + k);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const rk_fvec av = *(const rk_fvec*)(a[r] + k);
#pragma GCC unroll 4
      for (int e = 0; e < E; ++e) acc[r * E + e] += av * bv[e];
    }
  };
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    // A's rows 128 floats ahead (rk_panel_block).
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) __builtin_prefetch(a[r] + k + 128, 0, 3);
    step(k);
    step(k + 8);
  }
  if (k + 8 <= K) step(k), k += 8;
  float sums[16];
  for (int h = 0; h < MR * E; h += 8) {
    const rk_fvec s = rk_sum_lanes8(acc + h, MR * E - h);
    std::memcpy(sums + h, &s, sizeof s);
  }
  for (int r = 0; r < rows; ++r)
    for (int e = 0; e < E; ++e) {
      float t = sums[r * E + e];
      for (int64_t kk = k; kk < K; ++kk) t += a[r][kk] * bt[e * K + kk];
      float& out = c[r * ldc + e * ldj];
      out = accumulate ? out + t : t;
    }
}

// Rows [m_lo, m_hi) of C for E columns gathered along K (bt, d floats each), steps [k, k + d) of
// A's rows, MR rows a block.
template <int MR, int E>
inline void rk_dot_rows(int64_t m_lo, int64_t m_hi, int64_t k, int64_t d, const float* A, int64_t lda, const float* bt, float* C, int64_t ldc,
                        int64_t ldj) {
  for (int64_t m = m_lo; m < m_hi; m += MR)
    rk_dot_block<MR, E>((int)rk_min<int64_t>(MR, m_hi - m), d, A + m * lda + k, lda, bt, C + m * ldc, ldc, k > 0, ldj);
}

// Rows [m_lo, m_hi) of C for the ncols <= 8 columns of b (rows ldb apart): up to 4 columns as
// dot products (rk_dot_block, the columns first gathered along K), more one vector wide.
inline void rk_panel_rows_narrow(int64_t m_lo, int64_t m_hi, int64_t k0, int64_t depth, const float* A, int64_t lda, const float* b, int64_t ldb,
                                 float* C, int64_t ldc, int64_t ncols, int64_t ldj) {
  if (ncols > 4) {
    rk_panel_rows8(m_lo, m_hi, k0, depth, A, lda, b, ldb, C, ldc, ncols, ldj);
    return;
  }
  constexpr int64_t kChunk = 1024;
  float bt[4 * kChunk];
  for (int64_t k1 = 0; k1 < depth; k1 += kChunk) {
    const int64_t d = rk_min(kChunk, depth - k1), k = k0 + k1;
    for (int64_t j = 0; j < ncols; ++j)
      for (int64_t i = 0; i < d; ++i) bt[j * d + i] = b[(k1 + i) * ldb + j];
    // MR x E accumulators: 12 x 1, 6 x 2, 3 x 3, 2 x 4.
    if (ncols == 1) rk_dot_rows<12, 1>(m_lo, m_hi, k, d, A, lda, bt, C, ldc, ldj);
    else if (ncols == 2) rk_dot_rows<6, 2>(m_lo, m_hi, k, d, A, lda, bt, C, ldc, ldj);
    else if (ncols == 3) rk_dot_rows<3, 3>(m_lo, m_hi, k, d, A, lda, bt, C, ldc, ldj);
    else rk_dot_rows<2, 4>(m_lo, m_hi, k, d, A, lda, bt, C, ldc, ldj);
  }
}
#endif

// Rows per block of a last panel's kernel: its accumulators (MR x (nv + ne) vectors) stay in
// registers with the operands beside them.
// AVX2 (2 registers a vector of 16) has only one vector a row (rk_tail_shape): 6 rows.
constexpr int rk_tail_rows(int nv, int ne) { return kRkPanelRows == 8 ? (nv + ne <= 2 ? 8 : 4) : 6; }

// Rows [m_lo, m_hi) of C for one 32-column panel (rows ldb apart, ncols of its columns stored).
// AVX2: each block of rows a half at a time, its rows of A (K floats each) still in L1 or L2 for
// the second half.
inline void rk_panel_rows32(int64_t m_lo, int64_t m_hi, int64_t k0, int64_t depth, const float* A, int64_t lda, const float* b, float* C, int64_t ldc,
                            int64_t ncols, int64_t ldb, int64_t ldj = 1) {
#if defined(__AVX512F__)
  // Whole blocks of 8 rows, then a last of 1 to 4 rows on a kernel of 2 or 4 rows, not one of 8
  // computing its last row again (49 rows, one thread: 7 blocks' time for 6 and a row; convnext's
  // 49 x 3072 x 768 and 49 x 768 x 3072 matmuls 5-6% faster).
  const int64_t tail = (m_hi - m_lo) % kRkPanelRows, whole = tail != 0 && tail <= 4 ? m_hi - tail : m_hi;
  rk_panel_rows<kRkPanelRows, 2, 0>(m_lo, whole, k0, depth, A, lda, b, nullptr, C, ldc, ncols, ldb, ldj);
  if (tail > 2 && whole < m_hi) rk_panel_rows<4, 2, 0>(whole, m_hi, k0, depth, A, lda, b, nullptr, C, ldc, ncols, ldb, ldj);
  else if (whole < m_hi) rk_panel_rows<2, 2, 0>(whole, m_hi, k0, depth, A, lda, b, nullptr, C, ldc, ncols, ldb, ldj);
#else
  // Halves of 16 columns, and a last 8 columns or fewer (rk_panel_rows_narrow).
  const int64_t halves = ncols > 24 ? 2 : (ncols > 8 ? 1 : 0);
  for (int64_t m = m_lo; m < m_hi && halves > 0; m += kRkPanelRows) {
    const int rows = (int)rk_min<int64_t>(kRkPanelRows, m_hi - m);
    for (int64_t h = 0; h < halves; ++h)
      rk_panel_block<kRkPanelRows, 1, 0>(rows, depth, A + m * lda + k0, lda, b + 16 * h, ldb, nullptr, C + m * ldc + 16 * h * ldj, ldc,
                                         rk_min<int64_t>(16, ncols - 16 * h), k0 > 0, ldj);
  }
  if (ncols > 16 * halves)
    rk_panel_rows_narrow(m_lo, m_hi, k0, depth, A, lda, b + 16 * halves, ldb, C + 16 * halves * ldj, ldc, ncols - 16 * halves, ldj);
#endif
}

// Where the GEMM's C lies: element (m, n) at C[m ldc + n ldj] (ldj = 1 but for a transposed store).
struct RkOut {
  float* C;
  int64_t ldc, ldj;
};

// Panel p (ncols of its columns below N) for the rows [m_lo, m_hi) of C and rows [k0, k0 +
// depth) of K, 32 wide (a panel short of N zero-padded, its columns below N stored); with
// `direct`, a whole panel is read from B in place (rows ldd apart), a short one from its packed
// copy (in place it would read past N, past the end of B on its last row).
inline void rk_full_panel_slice(int64_t m_lo, int64_t m_hi, int64_t p, int64_t ncols, int64_t K, int64_t k0, int64_t depth, const float* A,
                                int64_t lda, const float* panels, RkOut out, const float* direct, int64_t ldd) {
  const bool in_place = direct && ncols == kRkPanelCols;
  const float* b = in_place ? direct + p * kRkPanelCols : panels + p * K * kRkPanelCols;
  const int64_t ldb = in_place ? ldd : kRkPanelCols;
  rk_panel_rows32(m_lo, m_hi, k0, depth, A, lda, b + k0 * ldb, out.C + p * kRkPanelCols * out.ldj, out.ldc, ncols, ldb, out.ldj);
}

// The same over the whole of K, in slices of kRkPanelDepth.
inline void rk_full_panel(int64_t m_lo, int64_t m_hi, int64_t p, int64_t ncols, int64_t K, const float* A, int64_t lda, const float* panels,
                          RkOut out, const float* direct, int64_t ldd) {
  for (int64_t k0 = 0; k0 < K; k0 += kRkPanelDepth)
    rk_full_panel_slice(m_lo, m_hi, p, ncols, K, k0, rk_min(kRkPanelDepth, K - k0), A, lda, panels, out, direct, ldd);
}

#if !defined(__AVX512F__)
// AVX2: the rows [m_lo, m_hi) of C for panels [p_lo, p_hi), K in slices (below), each
// slice of every panel against every row: the slice of A (128 rows: 128 KiB) stays in L2 across
// the panels, a panel's slice in L1 across the rows. Each block of 6 rows over the whole of K
// read every panel from L3 again (resnet18's 3x3 convs at 14 x 14 and 7 x 7, K = 2304 and 4608:
// 50 and 44 GFLOP/s where a 1x1 conv with K = 128 ran at 89). A last panel narrower than 32 is
// one vector of 16 wide unless `padded` (rk_tail_shape); up to 8 columns, one of 8.
inline void rk_sliced_tile(int64_t m_lo, int64_t m_hi, int64_t p_lo, int64_t p_hi, int64_t N, int64_t K, const float* A, int64_t lda,
                           const float* panels, RkOut out, const float* direct, int64_t ldd, bool padded) {
  // Deep K in slices of 1024: a slice of each row of A is then 4 KiB read on, where at 256 the
  // rows of a tile each started again every 1 KiB. One thread, best of three alternations:
  // resnet18's 3x3 convs at 7 x 7 (K = 4608) 3.56 -> 3.37 ms, at 14 x 14 (2304) 3.21 -> 3.06; 512
  // -> 128 at 28 x 28 (25 panels) level. Shallower K lost with it (mobilenet_v2's 1x1 convs at
  // 7 x 7, K up to 960, one slice each: 1.05 -> 1.12 ms): a panel's slice no longer fits L1.
  // As many slices as that depth needs, all about as deep (multiples of 16): K = 320 was 256 + 64,
  // the last slice's C read and stored again for 64 steps; now 160 + 160. One thread, best of
  // three alternations: the 7 x 7 conv 3.07 -> 2.99 ms, a 576 -> 96 1x1 conv at 14 x 14 0.283 ->
  // 0.275, 320 -> 1280 at 7 x 7 and 128 -> 128 3x3 at 28 x 28 within 1%.
  const int64_t most = K >= 2048 ? 1024 : kRkSliceDepth, slices = (K + most - 1) / most, slice = ((K + slices - 1) / slices + 15) / 16 * 16;
  for (int64_t k0 = 0; k0 < K; k0 += slice) {
    const int64_t depth = rk_min(slice, K - k0);
    for (int64_t p = p_lo; p < p_hi; ++p) {
      const int64_t ncols = rk_min(kRkPanelCols, N - p * kRkPanelCols);
      if ((direct && ncols == kRkPanelCols) || padded || rk_tail_shape(ncols).nv == 2) {
        rk_full_panel_slice(m_lo, m_hi, p, ncols, K, k0, depth, A, lda, panels, out, direct, ldd);
        continue;
      }
      // A last panel packed 16 wide: this slice of it, and its columns of C.
      const float* b = panels + p * K * kRkPanelCols + k0 * 16;
      float* c = out.C + p * kRkPanelCols * out.ldj;
      if (ncols <= 8) rk_panel_rows_narrow(m_lo, m_hi, k0, depth, A, lda, b, 16, c, out.ldc, ncols, out.ldj);
      else rk_panel_rows<kRkPanelRows, 1, 0>(m_lo, m_hi, k0, depth, A, lda, b, nullptr, c, out.ldc, ncols, 16, out.ldj);
    }
  }
}
#endif

// The rows [m_lo, m_hi) of C for panels [p_lo, p_hi), every panel 32 wide: the matmuls' tile.
// One kernel shape (compile time).
__attribute__((noinline)) inline void rk_full_panel_tile(int64_t m_lo, int64_t m_hi, int64_t p_lo, int64_t p_hi, int64_t N, int64_t K, const float* A,
                                                         int64_t lda, const float* panels, RkOut out, const float* direct, int64_t ldd) {
#if defined(__AVX512F__)
  for (int64_t p = p_lo; p < p_hi; ++p) rk_full_panel(m_lo, m_hi, p, rk_min(kRkPanelCols, N - p * kRkPanelCols), K, A, lda, panels, out, direct, ldd);
#else
  rk_sliced_tile(m_lo, m_hi, p_lo, p_hi, N, K, A, lda, panels, out, direct, ldd, true);
#endif
}

// C[M x N] = A[M x K] (rows lda apart, read in place) x B[K x N], B in 32-column panels that
// pack(p) writes to panels + p K 32 (room for all of them), or, with `direct`, full panels read
// from B in place (rows ldd apart) and only a short last one packed. With panels enough to
// share out, each thread packs a group of panels (about 512 KiB) and multiplies every row by it
// while it is still in its own L2: the whole of B (resnet18's first layers: 7 MiB) never goes
// out to L3 and back. With few panels (small images, deep layers), or A too large to stay in
// L2 while each group streams it, all panels are packed first and tiles of rows x panels are
// shared out instead. Few is fewer than 4 a thread, groups of one panel: each such group is a
// pass over every row of A for 32 columns of C, and on two threads tiles of rows across all the
// panels ran mobilenet_v2's 1x1 convs at 14 x 14 (7 panels) 1.2-1.5x faster; on one thread the
// same 7 panels in groups of 3 stayed 2-8% ahead of tiles, and 28 x 28 (25 panels) in groups
// of 6 on two threads 20-30% ahead.
// `tile` computes rows x panels: rk_conv_gemm_tile with last panels in their own shape, or
// rk_full_panel_tile with every panel 32 wide (`padded`: pack writes the last zero-padded).
// (pack and tile are functions, not template parameters: one copy of this code, compile time.)
// pack(arg, p_lo, p_hi, padded, panels): panels [p_lo, p_hi), panel p at panels + (p - p_lo) K 32,
// a last short one zero-padded to 32 columns (`padded`) or in its shape.
using RkPackPanels = void (*)(const void* arg, int64_t p_lo, int64_t p_hi, bool padded, float* panels);
using RkPanelTile = void (*)(int64_t m_lo, int64_t m_hi, int64_t p_lo, int64_t p_hi, int64_t N, int64_t K, const float* A, int64_t lda,
                             const float* panels, RkOut out, const float* direct, int64_t ldd);
// With an epilogue, each block of C is handed to it as soon as it is complete (every slice of K
// added), in blocks still in cache: chunks of a group's panels, or, in a tile, a block of rows
// across its panels or a panel across its rows.
// Without `pack`, `panels` holds every panel of B already (packed once: rk_matmul_f32's kept panels).
inline void rk_panel_gemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, RkPackPanels pack, const void* arg, const float* direct,
                          int64_t ldd, float* panels, RkOut out, RkPanelTile tile, bool padded, RkEpilogue epilogue = {}) {
  const int64_t np = (N + kRkPanelCols - 1) / kRkPanelCols;
  int64_t threads = 1;
#ifdef _OPENMP
  if (rk_gemm_worth_threads(M, N, K) && !omp_in_parallel()) threads = omp_get_max_threads();
#endif
  // Panels [p_lo, p_hi) to `to` (panel p_lo first); read in place (`direct`), only a short last
  // panel is packed.
  const auto pack_panels = [&](int64_t p_lo, int64_t p_hi, float* to) {
    if (!pack) return;
    const int64_t first = direct ? (N % kRkPanelCols != 0 ? rk_max(p_lo, np - 1) : p_hi) : p_lo;
    if (first < p_hi) pack(arg, first, p_hi, padded, to + (first - p_lo) * K * kRkPanelCols);
  };
  if (np >= 4 * threads && M * K * 4 <= (int64_t{1} << 20)) {
    const int64_t group = rk_max<int64_t>(1, rk_min(np / (2 * threads), (int64_t{512} << 10) / (K * kRkPanelCols * 4)));
    const int64_t groups = (np + group - 1) / group;
#pragma omp parallel for schedule(dynamic) num_threads(threads)
    for (int64_t t = 0; t < groups; ++t) {
      const int64_t p_lo = t * group, p_hi = rk_min(np, p_lo + group);
      // Each thread packs its groups into the same slot of `panels` (threads x group <= np / 2
      // panels): the slot stays in its L2. A slot a group sent every packed line out to memory
      // and read each new one in first (a 768 x 3072 weight: 9 MiB of packed panels a run).
      // Panels packed already are read where they lie.
      float* const own = pack ? panels + rk_thread_num() * group * K * kRkPanelCols : panels + p_lo * K * kRkPanelCols;
      pack_panels(p_lo, p_hi, own);
      // The group's panels as panels 0.. of its own GEMM: C, B in place and N from column 32 p_lo.
      const RkOut part{out.C + p_lo * kRkPanelCols * out.ldj, out.ldc, out.ldj};
      const float* const part_direct = direct ? direct + p_lo * kRkPanelCols : nullptr;
      // Without an epilogue, the whole group at once. With one, chunks of panels whose block of C
      // is 64 KiB at most, in cache still for the epilogue: each row's span of pixels as long as
      // it can be (the epilogue's loop costs about as much to start as a 1x1 conv of 16 inputs
      // does on 32 pixels). Where K is at most 128 (a few FMAs for each element of C stored),
      // 16 rows at a time across the chunk, C written along its rows: all of them a panel at a
      // time had 96 rows 50 KiB apart each take 128 bytes in turn, stores that missed and were
      // not prefetched (mobilenet_v2's 16 -> 96 conv at 112 x 112: 0.68 -> 0.57 ms alone). With
      // a deeper K (3x3 convs of 64 channels) that order was 2-3% slower. Where only one panel
      // fits, 64 rows at a time (the order tile keeps anyway): a panel's 32 pixels across 384 rows
      // had gone out to L2 and came back a load stall at a time.
      const int64_t rows = epilogue.run && K <= kRkStreamDepth ? rk_min<int64_t>(M, 2 * kRkPanelRows) : M;
      const int64_t chunk = epilogue.run ? rk_max<int64_t>(1, (int64_t{64} << 10) / (rows * kRkPanelCols * 4)) : p_hi - p_lo;
      const int64_t step = epilogue.run && chunk == 1 ? rk_min<int64_t>(M, kRkEpilogueRows) : rows;  // chunk 1: rows is M
      for (int64_t q = p_lo; q < p_hi; q += chunk)
        for (int64_t m = 0; m < M; m += step) {
          const int64_t q_hi = rk_min(p_hi, q + chunk), m_hi = rk_min(M, m + step);
          tile(m, m_hi, q - p_lo, q_hi - p_lo, N - p_lo * kRkPanelCols, K, A, lda, own, part, part_direct, ldd);
          if (epilogue.run) epilogue.run(epilogue.ctx, m, m_hi, q * kRkPanelCols, rk_min(N, q_hi * kRkPanelCols));
        }
    }
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    // A run of panels a thread: a matrix's rows are copied a run of them at a time.
    const int64_t run = (np + threads - 1) / threads;
#pragma omp for schedule(static)
    for (int64_t t = 0; t < threads; ++t)
      pack_panels(rk_min(np, t * run), rk_min(np, (t + 1) * run), panels + rk_min(np, t * run) * K * kRkPanelCols);
    const int64_t panel_tiles = (np + kRkTilePanels - 1) / kRkTilePanels;
    // Fewer tiles than two a thread (deep layers: a 7 x 7 plane is two panels): rows cut evenly
    // into two a thread, in whole blocks. In 128-row tiles, mobilenet_v2's 160 x 960 conv was
    // 128 rows for one thread and 32 for the other.
    // Where half as many tiles leave less on the busiest thread, those: 112 rows (14 blocks) in
    // four tiles of 4 blocks were 8 blocks for one thread and 6 for the other, in two of 7, 7 each
    // (efficientnet_b0's projections at 14 x 14, to 80 and 112 channels).
    int64_t tile_rows = kRkTileRows;
    if (threads > 1 && panel_tiles < 2 * threads) {
      const int64_t row_tiles = (2 * threads + panel_tiles - 1) / panel_tiles, blocks = (M + kRkPanelRows - 1) / kRkPanelRows;
      const auto busiest = [&](int64_t b) {  // blocks on the busiest thread, each tile to the least loaded in turn
        int64_t load[64] = {}, most = 0;
        const int64_t n = rk_min<int64_t>(threads, 64);
        for (int64_t m = 0; m < blocks; m += b)
          for (int64_t p = 0; p < panel_tiles; ++p) {
            int64_t least = 0;
            for (int64_t t = 1; t < n; ++t) least = load[t] < load[least] ? t : least;
            load[least] += rk_min(b, blocks - m);
            most = rk_max(most, load[least]);
          }
        return most;
      };
      const int64_t fine = (blocks + row_tiles - 1) / row_tiles, coarse = (blocks + (row_tiles + 1) / 2 - 1) / ((row_tiles + 1) / 2);
      const int64_t b = busiest(coarse) < busiest(fine) ? coarse : fine;
      tile_rows = rk_min(kRkTileRows, rk_max<int64_t>(2 * kRkPanelRows, b * kRkPanelRows));
    }
    const int64_t row_tiles = (M + tile_rows - 1) / tile_rows;
#pragma omp for schedule(dynamic) collapse(2)
    for (int64_t ti = 0; ti < row_tiles; ++ti)
      for (int64_t tj = 0; tj < panel_tiles; ++tj) {
        const int64_t m_lo = ti * tile_rows, m_hi = rk_min(M, (ti + 1) * tile_rows), p_lo = tj * kRkTilePanels,
                      p_hi = rk_min(np, (tj + 1) * kRkTilePanels);
        // Whichever of the tile's weights and panels is larger is read once: panels outermost
        // (each panel against every row), or, with more rows than panel columns, blocks of rows
        // outermost (resnet18's layer4: 2.4 MiB of weights a tile against 1.2 MiB of panels,
        // 740-753 against 792-840 us a conv).
        // AVX2 takes the tile whole: it slices K across the tile's rows and panels (rk_sliced_tile).
        const bool sliced = kRkSlicedTiles && K > kRkSliceDepth;
        const int64_t rows_at_once = sliced || m_hi - m_lo <= kRkPanelCols * (p_hi - p_lo) ? m_hi - m_lo : kRkPanelRows;
        if (epilogue.run && rows_at_once == m_hi - m_lo && !sliced) {  // panels outermost: each done across the tile's rows
          for (int64_t p = p_lo; p < p_hi; ++p) {
            tile(m_lo, m_hi, p, p + 1, N, K, A, lda, panels, out, direct, ldd);
            epilogue.run(epilogue.ctx, m_lo, m_hi, p * kRkPanelCols, rk_min(N, (p + 1) * kRkPanelCols));
          }
          continue;
        }
        for (int64_t m = m_lo; m < m_hi; m += rows_at_once) {  // each block of rows done across the tile's panels
          const int64_t m_end = rk_min(m_hi, m + rows_at_once);
          tile(m, m_end, p_lo, p_hi, N, K, A, lda, panels, out, direct, ldd);
          if (epilogue.run) epilogue.run(epilogue.ctx, m, m_end, p_lo * kRkPanelCols, rk_min(N, p_hi * kRkPanelCols));
        }
      }
  }
}

// dst[t * ldd + i] = src[i * lds + t] for i, t < 16: a 16 x 16 transpose in registers, in GCC's
// vector shuffles (each one two-source permute): pairs of rows interleaved by 32 and by 64 bits
// within 128-bit lanes, then the lanes exchanged twice.
typedef int32_t rk_i32x16 __attribute__((vector_size(64)));
inline void rk_transpose_16x16(const float* src, int64_t lds, float* dst, int64_t ldd) {
  const rk_i32x16 lo32 = {0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28, 13, 29}, hi32 = lo32 + 2;
  const rk_i32x16 lo64 = {0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29}, hi64 = lo64 + 2;
  const rk_i32x16 even_lanes = {0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27}, odd_lanes = even_lanes + 4;
  rk_f32x16 r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = *(const rk_f32x16*)(src + i * lds);
  for (int i = 0; i < 16; i += 2) {
    t[i] = __builtin_shuffle(r[i], r[i + 1], lo32);
    t[i + 1] = __builtin_shuffle(r[i], r[i + 1], hi32);
  }
  for (int i = 0; i < 16; i += 4) {  // r[i + q], lane L: column 4 L + q of rows i..i+3
    r[i] = __builtin_shuffle(t[i], t[i + 2], lo64);
    r[i + 1] = __builtin_shuffle(t[i], t[i + 2], hi64);
    r[i + 2] = __builtin_shuffle(t[i + 1], t[i + 3], lo64);
    r[i + 3] = __builtin_shuffle(t[i + 1], t[i + 3], hi64);
  }
  for (int h = 0; h < 16; h += 8)
    for (int q = 0; q < 4; ++q) {
      t[h + q] = __builtin_shuffle(r[h + q], r[h + 4 + q], even_lanes);
      t[h + 4 + q] = __builtin_shuffle(r[h + q], r[h + 4 + q], odd_lanes);
    }
  for (int q = 0; q < 4; ++q) {
    *(rk_f32x16*)(dst + q * ldd) = __builtin_shuffle(t[q], t[8 + q], even_lanes);
    *(rk_f32x16*)(dst + (8 + q) * ldd) = __builtin_shuffle(t[q], t[8 + q], odd_lanes);
    *(rk_f32x16*)(dst + (4 + q) * ldd) = __builtin_shuffle(t[4 + q], t[12 + q], even_lanes);
    *(rk_f32x16*)(dst + (12 + q) * ldd) = __builtin_shuffle(t[4 + q], t[12 + q], odd_lanes);
  }
}

// A matrix B[K x N] whose element (k, n) is b[k ks + n ns].
struct RkMatrix {
  const float* b;
  int64_t ks, ns, K, N;
};
// Panel p of a matrix, in `shape` (as rk_pack_conv_panel: rows of 16 nv floats, then ne columns
// each contiguous along K), zero past N.
inline void rk_pack_matrix_panel(const RkMatrix& m, int64_t p, RkTailShape shape, float* dst) {
  const float* b = m.b;
  const int64_t ks = m.ks, ns = m.ns, K = m.K, N = m.N;
  const int64_t W = 16 * shape.nv, n0 = p * kRkPanelCols, live = rk_min<int64_t>(W, N - n0);
  float* extra = dst + K * W;
  if (ns == 1) {  // rows of B: a copy a row
    for (int64_t k = 0; k < K; ++k) {
      std::memcpy(dst + k * W, b + k * ks + n0, sizeof(float) * (size_t)live);
      for (int64_t j = live; j < W; ++j) dst[k * W + j] = 0.0f;
    }
  } else {  // columns of B (a transposed operand): 16 steps of K at a time, so the 16 rows of
    // the panel written stay in L1 while every column is read along K.
    for (int64_t k0 = 0; k0 < K; k0 += 16) {
      const int64_t k1 = rk_min<int64_t>(K, k0 + 16);
      int64_t j = 0;
      if (ks == 1 && k1 - k0 == 16)
        for (; j + 16 <= live; j += 16) rk_transpose_16x16(b + k0 + (n0 + j) * ns, ns, dst + k0 * W + j, W);
      for (; j < W; ++j)
        for (int64_t k = k0; k < k1; ++k) dst[k * W + j] = j < live ? b[k * ks + (n0 + j) * ns] : 0.0f;
    }
  }
  for (int e = 0; e < shape.ne; ++e)
    for (int64_t k = 0; k < K; ++k) extra[e * K + k] = b[k * ks + (n0 + W + e) * ns];
}

// Panels [p_lo, p_hi) of a matrix (RkPackPanels). Rows of B (ns = 1): the full panels a row of B
// at a time, so B is read along its rows; a panel at a time, each row's 32 floats were a load
// from another page, 4 KiB or more from the last (a 768 x 3072 weight: 27% of the matmul's time).
inline void rk_pack_matrix_panels(const void* arg, int64_t p_lo, int64_t p_hi, bool padded, float* panels) {
  const RkMatrix& m = *static_cast<const RkMatrix*>(arg);
  const int64_t full_hi = rk_min(p_hi, m.N / kRkPanelCols), first = p_lo;
  if (m.ns == 1 && p_lo < full_hi) {
    for (int64_t k = 0; k < m.K; ++k) {
      const float* row = m.b + k * m.ks;
      for (int64_t p = p_lo; p < full_hi; ++p)
        std::memcpy(panels + ((p - first) * m.K + k) * kRkPanelCols, row + p * kRkPanelCols, sizeof(float) * kRkPanelCols);
    }
    p_lo = full_hi;
  }
  for (int64_t p = p_lo; p < p_hi; ++p) {
    const int64_t ncols = rk_min(kRkPanelCols, m.N - p * kRkPanelCols);
    rk_pack_matrix_panel(m, p, padded ? RkTailShape{2, 0} : rk_tail_shape(ncols), panels + (p - first) * m.K * kRkPanelCols);
  }
}

}  // namespace
#endif  // RK_CPP_PANEL_GEMM_H
