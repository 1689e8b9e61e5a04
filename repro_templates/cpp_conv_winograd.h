// reprokit generated code: Winograd F(2x2, 3x3) for float 3x3 stride-1 convolutions (part of
// cpp_prelude.h, compiled only into the kernels unit that defines RK_WINOGRAD_KERNELS).
//
// Each 2x2 block of output pixels (a tile) is A^T [(G g G^T) . (B^T d B)] A, d the 4x4 input
// under it: per tile and channel pair, 16 products where the direct convolution takes 36. The
// 16 element-wise products summed over channels are 16 GEMMs, U[xi] (M x C) x V[xi] (C x tiles),
// on the conv GEMM's own kernel (rk_panel_block): the multiply work falls 2.25x. The transforms
// are vectorised along a row of tiles (stride-2 loads and stores), and the work is cut into
// panels of 32 tiles: each thread transforms one panel's input, runs the 16 GEMMs on it and
// transforms their output while all of it is in its own L2 (resnet18's layer1: 262 KiB).
// Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", 2016.
#ifndef RK_CPP_CONV_WINOGRAD_H
#define RK_CPP_CONV_WINOGRAD_H
#include "cpp_conv_gemm.h"

namespace {

// U[xi][m][c] = (G g G^T)[xi] for the weights g[m][c][3][3] (rows lda apart): every run, since
// the weights are graph inputs. Rows shared out; a scalar loop (copying the taps out to vectorise
// along c was slower, see docs/INTERNALS.md).
inline void rk_winograd_weights(const float* w, int64_t lda, int64_t M, int64_t C, float* U, int64_t uplane) {
#pragma omp for schedule(static)
  for (int64_t m = 0; m < M; ++m) {
    const float* wm = w + m * lda;
    for (int64_t c = 0; c < C; ++c) {
      const float* g = wm + c * 9;
      float t[4][3];
      for (int j = 0; j < 3; ++j) {
        t[0][j] = g[j];
        t[1][j] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);
        t[2][j] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);
        t[3][j] = g[6 + j];
      }
      for (int i = 0; i < 4; ++i) {
        float* u = U + (i * 4) * uplane + m * C + c;
        u[0] = t[i][0];
        u[uplane] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);
        u[2 * uplane] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);
        u[3 * uplane] = t[i][2];
      }
    }
  }
}

// Where a run of tiles sits: tile row ty, columns [tx, tx + n), at column j of its panel.
struct RkTileRun {
  int64_t ty, tx, n, j;
};

// Two vectors interleaved (kRkEvenLanes and kRkOddLanes: cpp_panel_gemm.h).
constexpr rk_i32x16 kRkZipLow = {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23};
constexpr rk_i32x16 kRkZipHigh = {8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
inline rk_f32x16 rk_load16(const float* p) { return *(const rk_f32x16*)p; }

// V[xi][c][j..] (xi planes `plane` floats apart) = B^T d B for the tiles of one run and channel
// c, 16 tiles a vector: the run's 4 input rows are copied with their padding into a row buffer,
// and tile l's columns 2l..2l+3 come out of it as the even and odd lanes of two vector pairs.
// Whole vectors are stored: up to 15 floats past the run, which the next run or channel writes
// over later, or the plane's padding takes (rk_winograd_plane).
inline void rk_winograd_input_run(const float* xc, const RkConvWindow& w, const RkTileRun& r, float* v, int64_t plane) {
  constexpr int kSpan = 2 * 32 + 2 + 16;  // two vectors' columns, and the last pair's overread
  float rows[4][kSpan];
  const int64_t x0 = 2 * r.tx - w.pad_w, span = 2 * r.n + 2, fill = r.n > 16 ? kSpan : 2 * 16 + 2 + 16;
  for (int i = 0; i < 4; ++i) {
    const int64_t y = 2 * r.ty - w.pad_h + i;
    float* dst = rows[i];
    if (y < 0 || y >= w.in_h) {
      for (int64_t k = 0; k < fill; ++k) dst[k] = 0.0f;
      continue;
    }
    const float* src = xc + y * w.row_step;
    const int64_t lo = rk_min(span, rk_max<int64_t>(0, -x0)), hi = rk_max(lo, rk_min(span, w.in_w - x0));
    for (int64_t k = 0; k < lo; ++k) dst[k] = 0.0f;
    if (w.col_step == 1) {
      std::memcpy(dst + lo, src + x0 + lo, sizeof(float) * (size_t)(hi - lo));
    } else {
      for (int64_t k = lo; k < hi; ++k) dst[k] = src[(x0 + k) * w.col_step];
    }
    for (int64_t k = hi; k < fill; ++k) dst[k] = 0.0f;
  }
  for (int64_t l0 = 0; l0 < r.n; l0 += 16) {
    rk_f32x16 d[4][4], t[4][4];
    for (int i = 0; i < 4; ++i) {
      const float* row = rows[i] + 2 * l0;
      const rk_f32x16 a = rk_load16(row), b = rk_load16(row + 16), c = rk_load16(row + 2), e = rk_load16(row + 18);
      d[i][0] = __builtin_shuffle(a, b, kRkEvenLanes);
      d[i][1] = __builtin_shuffle(a, b, kRkOddLanes);
      d[i][2] = __builtin_shuffle(c, e, kRkEvenLanes);
      d[i][3] = __builtin_shuffle(c, e, kRkOddLanes);
    }
    for (int s = 0; s < 4; ++s) {
      t[0][s] = d[0][s] - d[2][s];
      t[1][s] = d[1][s] + d[2][s];
      t[2][s] = d[2][s] - d[1][s];
      t[3][s] = d[1][s] - d[3][s];
    }
    for (int i = 0; i < 4; ++i) {
      float* o = v + (i * 4) * plane + l0;
      *(rk_f32x16*)o = t[i][0] - t[i][2];
      *(rk_f32x16*)(o + plane) = t[i][1] + t[i][2];
      *(rk_f32x16*)(o + 2 * plane) = t[i][2] - t[i][1];
      *(rk_f32x16*)(o + 3 * plane) = t[i][1] - t[i][3];
    }
  }
}

// dst[0..n) = src[0..n) for a row of a run's output (n <= 64), in masked vector stores: libc's
// memcpy, a call for each of these 8 to 64 floats, had 7% of squeezenet1_0's samples (most of it
// the stores themselves, which stay: its 27 x 27 convs 1-3% faster without the calls).
inline void rk_copy_row(float* dst, const float* src, int64_t n) {
#if defined(__AVX512F__)
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 k = n - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - j)) - 1);
    _mm512_mask_storeu_ps(dst + j, k, _mm512_maskz_loadu_ps(k, src + j));
  }
#else
  std::memcpy(dst, src, sizeof(float) * (size_t)n);
#endif
}

// out[m] for the tiles of one run from Mo[xi][m][j..] (xi planes `plane` apart), 16 tiles a
// vector: A^T m A, the two columns of each row interleaved, then stored where they fall inside
// the output (reading past the run is harmless: Mo has a row or the plane's padding there).
inline void rk_winograd_output_run(const float* mo, int64_t plane, const RkTileRun& r, int64_t out_h, int64_t out_w, float* out) {
  float y[2][2 * 32];
  for (int64_t l0 = 0; l0 < r.n; l0 += 16) {
    rk_f32x16 m[4][4], t[2][4];
    for (int i = 0; i < 4; ++i)
      for (int s = 0; s < 4; ++s) m[i][s] = rk_load16(mo + (i * 4 + s) * plane + l0);
    for (int s = 0; s < 4; ++s) {
      t[0][s] = m[0][s] + m[1][s] + m[2][s];
      t[1][s] = m[1][s] - m[2][s] - m[3][s];
    }
    for (int a = 0; a < 2; ++a) {
      const rk_f32x16 left = t[a][0] + t[a][1] + t[a][2], right = t[a][1] - t[a][2] - t[a][3];
      *(rk_f32x16*)(y[a] + 2 * l0) = __builtin_shuffle(left, right, kRkZipLow);
      *(rk_f32x16*)(y[a] + 2 * l0 + 16) = __builtin_shuffle(left, right, kRkZipHigh);
    }
  }
  const int64_t ox = 2 * r.tx, cols = rk_min(2 * r.n, out_w - ox);
  for (int a = 0; a < 2 && 2 * r.ty + a < out_h; ++a) rk_copy_row(out + (2 * r.ty + a) * out_w + ox, y[a], cols);
}

// 2x2 output tiles of the conv, down and across (a last one half outside where a side is odd).
inline int64_t rk_winograd_tiles(const RkConvWindow& w) { return ((w.plane / w.out_w + 1) / 2) * ((w.out_w + 1) / 2); }

// Whether the transforms, and the weights' transform every run, cost less than the multiplies
// they save: enough channels for the GEMMs' K, and enough tiles per weight. On resnet18's
// shapes (two threads, docs/INTERNALS.md): 56 x 56 (784 tiles) 0.6x the time of the conv GEMM,
// 28 x 28 (196) 0.8x, 14 x 14 (49) 1.2x. U (16 M C floats) is capped at 16 MiB.
inline bool rk_winograd_pays(int64_t M, const RkConvWindow& w) {
  const bool shape = w.taps_h == 3 && w.taps_w == 3 && w.stride_h == 1 && w.stride_w == 1 && w.dilation_h == 1 && w.dilation_w == 1;
  return shape && w.channels >= 16 && M >= 16 && rk_winograd_tiles(w) >= 128 && M * w.channels <= (int64_t{1} << 18);
}

// The 16 planes of U, V and Mo are padded by a cache line: at their natural sizes (resnet18's
// 64 x 64 floats, 64 x 32) the 16 rows one transform reads or writes fall in one L1 set and
// evict each other (the transforms ran 3-4x slower).
constexpr int64_t rk_winograd_plane(int64_t floats) { return floats + 16; }

// The epilogue on every row of C over the output pixels of tiles [q_lo, q_hi): each tile row's
// pixels as two spans (its two output rows), spans that meet run as one (whole tile rows: one
// span of all their rows).
inline void rk_winograd_epilogue(int64_t M, int64_t q_lo, int64_t q_hi, int64_t tiles_w, int64_t out_h, int64_t out_w, RkEpilogue epilogue) {
  int64_t lo = 0, hi = 0;  // the span gathered so far
  for (int64_t ty = q_lo / tiles_w; q_lo < q_hi && ty <= (q_hi - 1) / tiles_w; ++ty) {
    const int64_t x0 = 2 * rk_max<int64_t>(q_lo - ty * tiles_w, 0), x1 = rk_min(2 * rk_min(q_hi - ty * tiles_w, tiles_w), out_w);
    for (int64_t oy = 2 * ty; oy < rk_min(2 * ty + 2, out_h); ++oy) {
      if (hi != oy * out_w + x0) {
        if (hi > lo) epilogue.run(epilogue.ctx, 0, M, lo, hi);
        lo = oy * out_w + x0;
      }
      hi = oy * out_w + x1;
    }
  }
  if (hi > lo) epilogue.run(epilogue.ctx, 0, M, lo, hi);
}

// C[M x (out_h x out_w)] (rows ldc apart) = conv3x3(image, weights A[M x 9C] (rows lda apart)),
// stride 1, by panels of 32 tiles, in `scratch` (room for `room` floats: the conv GEMM's panels,
// planned once per compiled graph): U, then a panel's V and Mo per thread. With too little room
// for U and one thread's panel, it does nothing and returns false (the caller runs the GEMM);
// with room for fewer threads than OpenMP has, it runs on fewer. Each thread takes a contiguous
// run of panels and then runs `epilogue` on their pixels, which it wrote and its cache holds: as
// a pass of its own after the conv, over rows shared out anew, each thread read half its pixels
// from the other's cache (squeezenet1_0's 16 -> 64 at 54 x 54, two threads: the epilogue 8% of
// the samples against 4.6% on one thread).
inline bool rk_conv_winograd(int64_t M, const float* A, int64_t lda, const float* image, const RkConvWindow& w, float* scratch, int64_t room,
                             float* C, int64_t ldc, RkEpilogue epilogue) {
  const int64_t ch = w.channels, out_w = w.out_w, out_h = w.plane / out_w;
  const int64_t tiles_w = (out_w + 1) / 2, tiles = rk_winograd_tiles(w), np = (tiles + 31) / 32;
  const int64_t uplane = rk_winograd_plane(M * ch), vplane = rk_winograd_plane(ch * 32), mplane = rk_winograd_plane(M * 32);
  const int64_t per_thread = 16 * (vplane + mplane), fit = (room - 16 * uplane) / per_thread;
  if (fit < 1) return false;
  int threads = 1;
#ifdef _OPENMP
  if (!omp_in_parallel()) threads = (int)rk_min<int64_t>(omp_get_max_threads(), fit);
#endif
  float* U = scratch;
#pragma omp parallel num_threads(threads)
  {
    rk_winograd_weights(A, lda, M, ch, U, uplane);  // ends in the omp for's barrier
    int me = 0, team = 1;
#ifdef _OPENMP
    me = omp_get_thread_num();
    team = omp_get_num_threads();
#endif
    float* V = scratch + 16 * uplane + me * per_thread;
    float* Mo = V + 16 * vplane;
    const int64_t p_lo = np * me / team, p_hi = np * (me + 1) / team;
    for (int64_t p = p_lo; p < p_hi; ++p) {
      const int64_t q0 = p * 32, n = rk_min<int64_t>(32, tiles - q0);
      const int64_t width = n > 16 ? 32 : 16;  // a last panel of 16 or fewer in the 16-wide kernel
      // The panel's runs of tiles along tile rows.
      RkTileRun runs[33];
      int nr = 0;
      for (int64_t q = q0; q < q0 + n;) {
        const int64_t ty = q / tiles_w, tx = q % tiles_w, len = rk_min(tiles_w - tx, q0 + n - q);
        runs[nr++] = {ty, tx, len, q - q0};
        q += len;
      }
      for (int64_t c = 0; c < ch; ++c)
        for (int i = 0; i < nr; ++i) rk_winograd_input_run(image + c * w.channel_step, w, runs[i], V + c * width + runs[i].j, vplane);
      for (int64_t xi = 0; xi < 16; ++xi) {
        const float* u = U + xi * uplane;
        if (width == 32) rk_panel_rows32(0, M, 0, ch, u, ch, V + xi * vplane, Mo + xi * mplane, width, width, width);
        else rk_panel_rows<rk_tail_rows(1, 0), 1, 0>(0, M, 0, ch, u, ch, V + xi * vplane, nullptr, Mo + xi * mplane, width, width);
      }
      for (int64_t m = 0; m < M; ++m)
        for (int i = 0; i < nr; ++i) rk_winograd_output_run(Mo + m * width + runs[i].j, mplane, runs[i], out_h, out_w, C + m * ldc);
    }
    if (epilogue.run) rk_winograd_epilogue(M, p_lo * 32, rk_min(tiles, p_hi * 32), tiles_w, out_h, out_w, epilogue);
  }
  return true;
}

}  // namespace
#endif  // RK_CPP_CONV_WINOGRAD_H
