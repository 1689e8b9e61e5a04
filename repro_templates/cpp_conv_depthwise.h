// reprokit generated code: depthwise convolutions on AVX-512, a row of output a vector on small
// planes, in blocks of 16 columns on wider ones; on AVX2, in blocks of 8 columns (part of
// cpp_prelude.h, compiled only into the kernels unit that defines RK_DEPTHWISE_KERNEL).
//
// A depthwise conv reads one input channel for each output channel: a row of output is the sum,
// over the taps, of a tap's weight times the input row under it shifted by the tap's column. On
// planes up to 16 wide a row of output is one vector and its input row one (two at stride 2):
// each input row is loaded once, masked to the row, and each column tap's shifted copy made in
// registers by a permute that zeroes the lanes in the padding; 16 rows of output (8 at stride 2)
// are summed at once, so that each input row is added into every sum it is a tap row of. Planes
// up to 8 wide go two rows of output a vector. The generated direct conv (conv2d_planes) copies
// each plane, padded, before its pass over the taps and runs its epilogue a row at a time: on rows
// of 7 or 14 most of its time was those loops' overhead.
// Tried before this: 16 channels a vector, the planes transposed in and out (ONNX Runtime's and
// oneDNN's blocked layout, but only inside the kernel): the transposes cost as much as the taps,
// and it was no faster; each tap's row read by a masked load from the plane: 0.83-0.88x this on
// 3x3, level on 5x5.
#ifndef RK_CPP_CONV_DEPTHWISE_H
#define RK_CPP_CONV_DEPTHWISE_H
#include "cpp_base.h"
#include "cpp_avx2.h"
#include "cpp_avx512.h"
#if defined(RK_DEPTHWISE_VECTORS)
#include <immintrin.h>
#endif

namespace {

#if defined(RK_DEPTHWISE_VECTORS)
// Every plane of every image, shared out between the threads in groups, each group's epilogue run
// on the thread that computed it while the group is in its cache. plane(c, x, w, out) computes one
// output plane of channel c from its input plane x and weights w.
template <int K, class Plane>
void rk_depthwise_groups(int64_t images, const float* weights, const float* image, int64_t image_step, const RkConvWindow& d, float* C,
                         RkEpilogue epilogue, const Plane& plane) {
  const int64_t planes = images * d.channels;
  const bool parallel = planes >= 2 && planes * d.plane * K * K >= (int64_t{1} << 16);
  (void)parallel;
  // The epilogue a group of planes at a time (up to 4 KiB of them, in L1 still): a call a plane
  // cost 16 ns on a plane of 49, a third of a 3x3 conv's time there.
  const int64_t group = rk_max<int64_t>(1, rk_min<int64_t>(16, 1024 / rk_max<int64_t>(1, d.plane)));
  const int64_t groups = (planes + group - 1) / group;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t gi = 0; gi < groups; ++gi) {
    const int64_t m_lo = gi * group, m_hi = rk_min(planes, m_lo + group);
    for (int64_t m = m_lo; m < m_hi; ++m) {
      const int64_t nb = m / d.channels, c = m % d.channels;
      plane(c, image + nb * image_step + c * d.channel_step, weights + c * K * K, C + m * d.plane);
    }
    if (epilogue.run) epilogue.run(epilogue.ctx, m_lo, m_hi, 0, d.plane);
  }
}

#endif

#if defined(__AVX512F__)
// Rows of output summed at once at stride 2, and as pairs of rows: 8 independent sums (with 4 the
// adds waited on each other: 4-12% slower in a stand-alone copy; 16 was 6% slower at stride 2
// there). At stride 1, 16 (rk_depthwise_plane): each input row is then added into up to K sums
// of a block of 16 rather than 8 (one thread, a model of the conv: 5x5 on 672 channels at
// 14 x 14 with a batch norm 100 -> 90 us, on 240 37 -> 36, 7x7 on 384 82 -> 79; 3x3 level).
constexpr int kRkDepthwiseRows = 8;

// A plane's RkChannelAffine as its kernel applies it: the weights times the channel's scale, the
// sums started at its shift, and the clamp (and activation A) on each vector as it is stored (the
// identity map and an unbounded clamp where there is none). As a pass over each group of planes
// after them, it cost as much as the generated epilogue it replaces (3x3 on 576 channels at
// 14 x 14: 30 us, 40 with a batch norm and relu6, either way); in the kernel, the batch norm is
// the multiply-adds' own. max and min return their second operand where either is NaN or both are
// equal: max(lo, v) keeps v's NaN and -0, as the generated clamp does; a relu's +0 added after
// makes -0 +0. A branch skipping the clamp where there is none cost the kernels' loops their
// unrolling (3x3 at 14 x 14 1.3x as long, with or without one); the activation is a template
// argument for the same reason.
template <RkActivation A> struct RkDepthwiseFinish {
  float scale, shift;
  __m512 lo, hi;
  bool relu;
  RkDepthwiseFinish(const RkChannelAffine* a, int64_t c)
      : scale(a ? a->scale[c] : 1.0f),
        shift(a ? a->shift[c] : 0.0f),
        lo(_mm512_set1_ps(a ? a->lo : -INFINITY)),
        hi(_mm512_set1_ps(a ? a->hi : INFINITY)),
        relu(a != nullptr && a->relu) {}
  __m512 operator()(__m512 sum) const {
    // Before a SiLU the clamp is unbounded and there is no relu (RkActivation): not computed.
    if constexpr (A == RkActivation::silu) return rk_silu_lanes(sum);
    const __m512 v = rk_min_lanes(hi, rk_max_lanes(lo, sum));
    return relu ? _mm512_add_ps(v, _mm512_setzero_ps()) : v;
  }
};

// Where each column tap of a row of output reads. An input row's phases: at stride 1 the row; at
// stride 2 its even and its odd columns. Column tap j of output lane l reads input column
// l S + s (s = j - pad_w): lane l + shift of phase s mod S, shift = floor(s / S); zero where that
// lane is past the phase (the padding). The same for every plane of a conv, so made once.
template <int K, int S> struct RkDepthwiseTaps {
  __m512i at[K];
  __mmask16 live[K];
  bool odd[K];
  explicit RkDepthwiseTaps(const RkConvWindow& d) {
    for (int j = 0; j < K; ++j) {
      const int64_t s = j - d.pad_w, phase = S == 1 ? 0 : (s & 1), shift = (s - phase) / S;
      const int64_t length = S == 1 ? d.in_w : (d.in_w + 1 - phase) / 2;
      alignas(64) int32_t lanes[16];
      for (int l = 0; l < 16; ++l) lanes[l] = (int32_t)((l + shift) & 15);
      at[j] = _mm512_load_si512(lanes);
      live[j] = rk_lanes(-shift, length - shift) & rk_lanes(0, d.out_w);
      odd[j] = phase == 1;
    }
  }
};

// One channel: out[oy out_w + ox] = sum over taps (i, j) of w[i K + j] x(oy S + i - pad_h,
// ox S + j - pad_w), zero outside the input, the taps added in order (no bias: the epilogue adds
// it). A row of output is one vector (out_w <= 16), its input row one or two (in_w <= 16 S).
template <int K, int S, class Finish>
void rk_depthwise_plane(const float* x, const float* w, const RkConvWindow& d, const RkDepthwiseTaps<K, S>& taps, int64_t out_h, float* out,
                        const Finish& finish) {
  __m512 wv[K * K];
  for (int t = 0; t < K * K; ++t) wv[t] = _mm512_set1_ps(w[t] * finish.scale);
  const __m512i evens = rk_even_lanes();
  const __m512i odds = rk_odd_lanes();
  const __mmask16 first = rk_lanes(0, d.in_w), second = rk_lanes(0, d.in_w - 16), store = rk_lanes(0, d.out_w);
  // R output rows at a time: each input row under them read once and added into each of their
  // sums it is a tap row of (independent sums: one a row waited on each add).
  constexpr int R = S == 1 ? 2 * kRkDepthwiseRows : kRkDepthwiseRows;
  for (int64_t oy = 0; oy < out_h; oy += R) {
    __m512 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_set1_ps(finish.shift);
    const int64_t y0 = oy * S - d.pad_h;
#pragma GCC unroll 24
    for (int u = 0; u < (R - 1) * S + K; ++u) {
      const int64_t y = y0 + u;
      if (y < 0 || y >= d.in_h) continue;
      const float* row = x + y * d.in_w;
      __m512 even_columns, odd_columns;
      if (S == 1) {
        even_columns = odd_columns = _mm512_maskz_loadu_ps(first, row);
      } else {
        const __m512 a = _mm512_maskz_loadu_ps(first, row), b = _mm512_maskz_loadu_ps(second, row + 16);
        even_columns = _mm512_permutex2var_ps(a, evens, b);
        odd_columns = _mm512_permutex2var_ps(a, odds, b);
      }
      __m512 v[K];
#pragma GCC unroll 7
      for (int j = 0; j < K; ++j) v[j] = _mm512_maskz_permutexvar_ps(taps.live[j], taps.at[j], taps.odd[j] ? odd_columns : even_columns);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        const int i = u - r * S;  // the tap row that input row is for output row oy + r
        if (i < 0 || i >= K) continue;
#pragma GCC unroll 7
        for (int j = 0; j < K; ++j) acc[r] = _mm512_fmadd_ps(wv[i * K + j], v[j], acc[r]);
      }
    }
    for (int r = 0; r < R && oy + r < out_h; ++r) _mm512_mask_storeu_ps(out + (oy + r) * d.out_w, store, finish(acc[r]));
  }
}

// Planes up to 8 wide, two rows of output a vector: lanes 0-7 row oy, lanes 8-15 row oy + 1 (a row
// of 7 alone left over half of each vector idle). Tap row i of those two rows reads input rows
// y = oy S + i - pad_h and y + S, each loaded whole (in_w <= 16); column tap j of lane l
// (half h, column c) is element c S + j - pad_w of the half's row, zero in the padding: one
// two-source permute.
template <int K, int S> struct RkDepthwisePairTaps {
  __m512i at[K];
  __mmask16 live[K];
  explicit RkDepthwisePairTaps(const RkConvWindow& d) {
    for (int j = 0; j < K; ++j) {
      alignas(64) int32_t lanes[16];
      unsigned mask = 0;
      for (int l = 0; l < 16; ++l) {
        const int64_t c = l & 7, column = c * S + j - d.pad_w;
        const bool inside = c < d.out_w && column >= 0 && column < d.in_w;
        lanes[l] = (int32_t)((l >> 3) * 16 + (inside ? column : 0));
        if (inside) mask |= 1u << l;
      }
      at[j] = _mm512_load_si512(lanes);
      live[j] = (__mmask16)mask;
    }
  }
};

template <int K, int S, class Finish>
void rk_depthwise_plane_pairs(const float* x, const float* w, const RkConvWindow& d, const RkDepthwisePairTaps<K, S>& taps, int64_t out_h, float* out,
                              const Finish& finish) {
  __m512 wv[K * K];
  for (int t = 0; t < K * K; ++t) wv[t] = _mm512_set1_ps(w[t] * finish.scale);
  constexpr int kPairs = kRkDepthwiseRows / 2;  // vectors of two output rows summed at once
  const __mmask16 row = rk_lanes(0, d.in_w), both = (__mmask16)(rk_lanes(0, d.out_w) | (rk_lanes(0, d.out_w) << 8));
  for (int64_t oy = 0; oy < out_h; oy += 2 * kPairs) {
    __m512 acc[kPairs];
    for (int r = 0; r < kPairs; ++r) acc[r] = _mm512_set1_ps(finish.shift);
    const int64_t y0 = oy * S - d.pad_h;
    // Pair q: input rows y0 + q and y0 + q + S, tap row i = q - 2 r S of vector r's two rows.
#pragma GCC unroll 24
    for (int q = 0; q < 2 * (kPairs - 1) * S + K; ++q) {
      const int64_t ya = y0 + q, yb = ya + S;
      const bool a_in = ya >= 0 && ya < d.in_h, b_in = yb >= 0 && yb < d.in_h;
      if (!a_in && !b_in) continue;
      const __m512 a = _mm512_maskz_loadu_ps(a_in ? row : (__mmask16)0, x + ya * d.in_w);
      const __m512 b = _mm512_maskz_loadu_ps(b_in ? row : (__mmask16)0, x + yb * d.in_w);
      __m512 v[K];
#pragma GCC unroll 7
      for (int j = 0; j < K; ++j) v[j] = _mm512_maskz_permutex2var_ps(taps.live[j], a, taps.at[j], b);
#pragma GCC unroll 8
      for (int r = 0; r < kPairs; ++r) {
        const int i = q - 2 * r * S;
        if (i < 0 || i >= K) continue;
#pragma GCC unroll 7
        for (int j = 0; j < K; ++j) acc[r] = _mm512_fmadd_ps(wv[i * K + j], v[j], acc[r]);
      }
    }
    // Each vector's two rows are adjacent in the output: its live lanes packed in a register,
    // then stored. A compressing store to memory (vcompressps m512) is microcoded on AMD's Zen 4,
    // about 55 cycles: 63% of a 3x3 conv on 960 channels at 7 x 7 there (one thread, 112 us).
    for (int r = 0; r < kPairs && oy + 2 * r < out_h; ++r) {
      const bool second = oy + 2 * r + 1 < out_h;
      const __mmask16 keep = second ? both : rk_lanes(0, d.out_w);
      _mm512_mask_storeu_ps(out + (oy + 2 * r) * d.out_w, rk_lanes(0, (second ? 2 : 1) * d.out_w), _mm512_maskz_compress_ps(keep, finish(acc[r])));
    }
  }
}

// Planes wider than 16 (5x5 and 7x7 windows: the generated direct conv's one pass over the taps
// re-reads every input vector for each tap, and 3x3 there is as fast): a row of output in blocks of
// 16 columns, 8 or 16 rows of a block summed at once as above (R below). At stride 1 each column
// tap's input is a masked unaligned load of the input row (zero in the padding); at stride 2 the
// row under a block is loaded as three vectors and split into its even and odd columns, each later
// tap those shifted by whole lanes (valignd), so a row costs three loads and not two a tap. A
// block of columns goes down the plane: across the plane, a block of rows at a time (its input
// rows kept in L1), was 6-10% slower on planes that fit L1 and within 5% either way at 112 x 112.
template <int K, int S, class Finish>
void rk_depthwise_plane_wide(const float* x, const float* w, const RkConvWindow& d, int64_t out_h, float* out, const Finish& finish) {
  __m512 wv[K * K];
  for (int t = 0; t < K * K; ++t) wv[t] = _mm512_set1_ps(w[t] * finish.scale);
  const __m512i evens = rk_even_lanes();
  const __m512i odds = rk_odd_lanes();
  // 16 rows at stride 1 for 3x3 and 5x5 (one thread on an AMD EPYC, Zen 4, models of six to ten
  // convs in a row: 3x3 on 192 channels at 28 x 28 4-6% faster, on 144 at 56 x 56 1-3%, 5x5 on
  // 240 at 28 x 28 5%); 7x7 gained as much (96 at 56 x 56, 192 at 28 x 28: 4-7%), but its unit
  // took 1.47 s to compile against 1.28, on the critical path of convnext_tiny's cold compile.
  constexpr int R = S == 1 && K <= 5 ? 2 * kRkDepthwiseRows : kRkDepthwiseRows;
  for (int64_t c0 = 0; c0 < d.out_w; c0 += 16) {
    const __mmask16 store = rk_lanes(0, d.out_w - c0);
    // Lane l of tap j reads input column base + l S + j; at stride 2 the three vectors of a row
    // start at base, base + 16 and base + 32.
    const int64_t base = c0 * S - d.pad_w;
    __mmask16 live[S == 1 ? K : 3];  // the input lanes each load keeps
    for (int v = 0; v < (S == 1 ? K : 3); ++v) {
      const int64_t at = base + (S == 1 ? v : 16 * v);
      live[v] = rk_lanes(-at, d.in_w - at);
    }
    for (int64_t oy = 0; oy < out_h; oy += R) {
      __m512 acc[R];
      for (int r = 0; r < R; ++r) acc[r] = _mm512_set1_ps(finish.shift);
      const int64_t y0 = oy * S - d.pad_h;
#pragma GCC unroll 24
      for (int u = 0; u < (R - 1) * S + K; ++u) {
        const int64_t y = y0 + u;
        if (y < 0 || y >= d.in_h) continue;
        const float* row = x + y * d.in_w + base;
        __m512 v[K];
        if (S == 1) {
#pragma GCC unroll 7
          for (int j = 0; j < K; ++j) v[j] = _mm512_maskz_loadu_ps(live[j], row + j);
        } else {
          const __m512 a = _mm512_maskz_loadu_ps(live[0], row), b = _mm512_maskz_loadu_ps(live[1], row + 16);
          const __m512 c = _mm512_maskz_loadu_ps(live[2], row + 32);
          const __m512 e0 = _mm512_permutex2var_ps(a, evens, b), o0 = _mm512_permutex2var_ps(a, odds, b);
          const __m512 e1 = _mm512_maskz_permutexvar_ps(kRkAllLanes, evens, c), o1 = _mm512_maskz_permutexvar_ps(kRkAllLanes, odds, c);
#pragma GCC unroll 7
          for (int j = 0; j < K; ++j) v[j] = rk_shift_lanes(j % 2 == 0 ? e1 : o1, j % 2 == 0 ? e0 : o0, j / 2);
        }
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
          const int i = u - r * S;  // the tap row that input row is for output row oy + r
          if (i < 0 || i >= K) continue;
#pragma GCC unroll 7
          for (int j = 0; j < K; ++j) acc[r] = _mm512_fmadd_ps(wv[i * K + j], v[j], acc[r]);
        }
      }
      for (int r = 0; r < R && oy + r < out_h; ++r) _mm512_mask_storeu_ps(out + (oy + r) * d.out_w + c0, store, finish(acc[r]));
    }
  }
}

template <int K, int S, RkActivation A>
void rk_depthwise_planes(int64_t images, const float* weights, const float* image, int64_t image_step, const RkConvWindow& d, float* C,
                         RkEpilogue epilogue, const RkChannelAffine* affine) {
  const int64_t out_h = d.plane / d.out_w;
  const bool pairs = d.out_w <= 8 && d.in_w <= 16, narrow = d.out_w <= 16 && d.in_w <= 16 * S;
  const RkDepthwiseTaps<K, S> taps(d);
  const RkDepthwisePairTaps<K, S> pair_taps(d);
  rk_depthwise_groups<K>(images, weights, image, image_step, d, C, epilogue, [&](int64_t c, const float* x, const float* w, float* out) {
    const RkDepthwiseFinish<A> finish(affine, c);
    if (pairs) rk_depthwise_plane_pairs<K, S>(x, w, d, pair_taps, out_h, out, finish);
    else if (narrow) rk_depthwise_plane<K, S>(x, w, d, taps, out_h, out, finish);
    else rk_depthwise_plane_wide<K, S>(x, w, d, out_h, out, finish);
  });
}
#elif defined(RK_DEPTHWISE_VECTORS)
// AVX2 (no masked lanes, 16 vector registers), on rows of at least 8 columns: a row of output in
// blocks of 8 columns, R rows of a block summed at once, each input row under them loaded once and
// added into every sum it is a tap row of. At stride 1 column tap j of a block is the 8 input
// floats from the block's first column plus j - pad_w; at stride 2 two windows of 8, split into
// their even and odd columns, give taps j and j + 1. Blocks whose windows all lie inside the row
// read them with plain loads; at the row's ends a window is the row's first or last 8 floats with
// its lanes permuted into place and those outside the row zeroed (a masked load, vmaskmovps, is
// several times a load's time on AMD's Zen 3; a copy of the columns under an edge block, zero
// outside the row, cost as much as the block's multiply-adds).
// R: 8 independent sums, so that the multiply-adds of one do not wait on each other's results;
// 6 at 7x7, where 8 sums and 7 taps are more than the 16 registers hold.
template <int K> constexpr int kRkDepthwiseRows8 = K <= 5 ? 8 : 6;

// The windows of 8 input columns a block of output reads from each row: at stride 1 window j at
// column base + j; at stride 2 windows 2p and 2p + 1 at base + 2p and base + 2p + 8. Each is the
// 8 floats at `from` (inside the row), lane l of the window their lane at[l], zeroed outside the
// lanes `live` (the columns inside the row). The same for every plane of a conv, so made once.
template <int K, int S> struct RkDepthwiseWindows8 {
  static constexpr int N = S == 1 ? K : 2 * ((K + 1) / 2);
  int64_t from[N];
  __m256i at[N];
  __m256 live[N];
  bool inside = true;  // every window wholly inside the row: plain loads
  RkDepthwiseWindows8(int64_t base, int64_t in_w) {
    for (int q = 0; q < N; ++q) {
      const int64_t column = base + (S == 1 ? q : q / 2 * 2 + q % 2 * 8);
      from[q] = column < 0 ? 0 : (column > in_w - 8 ? in_w - 8 : column);
      alignas(32) int32_t lanes[8];
      alignas(32) uint32_t keep[8];
      for (int l = 0; l < 8; ++l) {
        lanes[l] = (int32_t)((column - from[q] + l) & 7);
        keep[l] = column + l >= 0 && column + l < in_w ? 0xFFFFFFFFu : 0u;
      }
      at[q] = _mm256_load_si256((const __m256i*)lanes);
      live[q] = _mm256_castsi256_ps(_mm256_load_si256((const __m256i*)keep));
      inside = inside && from[q] == column;
    }
  }
};

template <RkActivation A> struct RkDepthwiseFinish {
  float scale, shift;
  __m256 lo, hi;
  bool relu;
  RkDepthwiseFinish(const RkChannelAffine* a, int64_t c)
      : scale(a ? a->scale[c] : 1.0f),
        shift(a ? a->shift[c] : 0.0f),
        lo(_mm256_set1_ps(a ? a->lo : -INFINITY)),
        hi(_mm256_set1_ps(a ? a->hi : INFINITY)),
        relu(a != nullptr && a->relu) {}
  __m256 operator()(__m256 sum) const {
    if constexpr (A == RkActivation::silu) return rk_silu8(sum);
    // max(lo, v) keeps v's NaN and -0 (vmaxps returns its second operand), as the generated clamp.
    const __m256 v = _mm256_min_ps(hi, _mm256_max_ps(lo, sum));
    return relu ? _mm256_add_ps(v, _mm256_setzero_ps()) : v;
  }
};

// Columns at, at + 2, ..., at + 14 and at + 1, ..., at + 15 of the 16 that are a's then b's.
inline void rk_split_columns8(__m256 a, __m256 b, __m256* even, __m256* odd) {
  // Within each half: a0 a2 b0 b2 | a4 a6 b4 b6; then the middle quarters swapped.
  *even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xD8));
  *odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xDD)), 0xD8));
}

// One block of 8 output columns down a plane: out[oy out_w + ox] = sum over taps (i, j) of
// w[i K + j] x(oy S + i - pad_h, ox S + j - pad_w), zero outside the input, the taps added in
// order.
template <int K, int S, bool Inside, class Finish>
void rk_depthwise_block8(const float* x, const RkDepthwiseWindows8<K, S>& win, const __m256* wv, const RkConvWindow& d, int64_t columns,
                         int64_t out_h, float* out, const Finish& finish) {
  constexpr int R = kRkDepthwiseRows8<K>;
  const auto window = [&](const float* row, int q) {
    const __m256 v = _mm256_loadu_ps(row + win.from[q]);
    return Inside ? v : _mm256_and_ps(_mm256_permutevar8x32_ps(v, win.at[q]), win.live[q]);
  };
  for (int64_t oy = 0; oy < out_h; oy += R) {
    __m256 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_set1_ps(finish.shift);
    const int64_t y0 = oy * S - d.pad_h;
#pragma GCC unroll 24
    for (int u = 0; u < (R - 1) * S + K; ++u) {
      const int64_t y = y0 + u;
      if (y < 0 || y >= d.in_h) continue;
      const float* row = x + y * d.in_w;
      __m256 v[K + 1];
      if (S == 1) {
#pragma GCC unroll 7
        for (int j = 0; j < K; ++j) v[j] = window(row, j);
      } else {
#pragma GCC unroll 4
        for (int j = 0; j < K; j += 2) rk_split_columns8(window(row, j), window(row, j + 1), &v[j], &v[j + 1]);
      }
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const int i = u - r * S;  // the tap row that input row is for output row oy + r
        if (i < 0 || i >= K) continue;
#pragma GCC unroll 7
        for (int j = 0; j < K; ++j) acc[r] = _mm256_fmadd_ps(wv[i * K + j], v[j], acc[r]);
      }
    }
    for (int r = 0; r < R && oy + r < out_h; ++r) {
      float* to = out + (oy + r) * d.out_w;
      if (columns == 8) _mm256_storeu_ps(to, finish(acc[r]));
      else rk_store_first(to, finish(acc[r]), columns);
    }
  }
}

template <int K, int S, RkActivation A>
void rk_depthwise_planes(int64_t images, const float* weights, const float* image, int64_t image_step, const RkConvWindow& d, float* C,
                         RkEpilogue epilogue, const RkChannelAffine* affine) {
  const int64_t out_h = d.plane / d.out_w, blocks = (d.out_w + 7) / 8;
  // Each block's windows, the same for every plane.
  std::vector<RkDepthwiseWindows8<K, S> > windows;
  windows.reserve((size_t)blocks);
  for (int64_t b = 0; b < blocks; ++b) windows.emplace_back(b * 8 * S - d.pad_w, d.in_w);
  rk_depthwise_groups<K>(images, weights, image, image_step, d, C, epilogue, [&](int64_t c, const float* x, const float* w, float* out) {
    const RkDepthwiseFinish<A> finish(affine, c);
    __m256 wv[K * K];
    for (int t = 0; t < K * K; ++t) wv[t] = _mm256_set1_ps(w[t] * finish.scale);
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t columns = rk_min<int64_t>(8, d.out_w - 8 * b);
      if (windows[(size_t)b].inside) rk_depthwise_block8<K, S, true>(x, windows[(size_t)b], wv, d, columns, out_h, out + 8 * b, finish);
      else rk_depthwise_block8<K, S, false>(x, windows[(size_t)b], wv, d, columns, out_h, out + 8 * b, finish);
    }
  });
}
#endif

}  // namespace

#endif  // RK_CPP_CONV_DEPTHWISE_H
