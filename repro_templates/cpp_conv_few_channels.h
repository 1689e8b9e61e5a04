// reprokit generated code: convolutions of few input channels (a network's first conv, on the
// image's 3 colour planes; grouped convs of up to 8 channels a group, 16 on AVX2) on AVX-512 or
// AVX2, a vector of 16 or 8 output pixels of a row at a time, or on rows of at most 16 a strip's
// rows as one flat run (part of cpp_prelude.h, compiled only into the kernels unit that defines
// RK_FEW_CHANNELS_KERNELS).
//
// On the conv GEMM such a conv is im2col of K = channels x taps rows (27 for a 3x3 conv on 3
// channels, 147 for 7x7) over every output pixel: the pack writes taps times more floats than the
// image holds and the GEMM reads them back, against only M x K multiply-adds a pixel. Here each
// thread takes a strip of output rows: the input rows under it are copied once, split into
// column phases modulo the stride (at stride 2: even and odd columns) and zero-padded, so that
// tap (i, j) of a vector of consecutive output pixels is one unaligned load from phase j mod S at
// column offset j / S; each load is then multiplied into a block of output channels' sums (8 on
// AVX-512, 4 on AVX2), and the conv's epilogue runs on each block of channels x the strip while it
// is in cache. Grouped convs of up to 8 channels a group (regnet_y_400mf's 3x3 convs) are such
// convs too, one per group: on the conv GEMM each group was one 8-row block a panel, and packing
// the panel cost as much as multiplying it.
#ifndef RK_CPP_CONV_FEW_CHANNELS_H
#define RK_CPP_CONV_FEW_CHANNELS_H
#include "cpp_base.h"
#include "cpp_avx2.h"
#include "cpp_avx512.h"
#include <type_traits>
#if defined(RK_FEW_CHANNELS_VECTORS)
#include <immintrin.h>
#endif

namespace {

#if defined(RK_FEW_CHANNELS_VECTORS)
constexpr int64_t kRkFewChannelsStrip = 16384;  // floats of a strip's copied input rows (64 KiB, the stack)
constexpr int64_t kRkFewChannelsTaps = 484;     // channels x taps at most (4 channels of 11 x 11, 8 of 7 x 7, 16 of 5 x 5)

// The vector the kernel computes in: 16 output pixels on AVX-512, 8 on AVX2. A block sums
// kRkFewBlock output channels (or fewer, the last) x 3 vectors of a row at once: its
// accumulators, the vectors loaded and a broadcast weight fill the registers (32 on AVX-512, 16
// on AVX2). On AVX2 8 channels x 1 vector ran resnet18's first conv in 3.25 ms, 4 x 3 in 2.65
// (one load of the row feeds 4 FMAs, not 8, but a broadcast feeds 3, not 1).
#if defined(__AVX512F__)
using RkFewVector = __m512;
constexpr int64_t kRkFewLanes = 16;
constexpr int kRkFewBlock = 8;
constexpr int64_t kRkFewChannels = 8;  // input channels at most
inline __m512 rk_few_zero() { return _mm512_setzero_ps(); }
inline __m512 rk_few_load(const float* p) { return _mm512_loadu_ps(p); }
inline __m512 rk_few_broadcast(const float* p) { return _mm512_set1_ps(*p); }
inline __m512 rk_few_fma(__m512 a, __m512 b, __m512 acc) { return _mm512_fmadd_ps(a, b, acc); }
inline void rk_few_store_first(float* p, __m512 v, int64_t n) { _mm512_mask_storeu_ps(p, rk_lanes(0, n), v); }
inline void rk_few_copy(float* to, const float* from, int64_t n) {  // n <= 16
  _mm512_mask_storeu_ps(to, rk_lanes(0, n), _mm512_maskz_loadu_ps(rk_lanes(0, n), from));
}
// Input columns base + S l of `row` (lanes l in [0, 16)), zero outside [0, in_w): masked loads
// never touch the lanes outside the row (the padding).
template <int S> inline __m512 rk_few_channels_columns(const float* row, int64_t in_w, int64_t base) {
  const __m512 lo = _mm512_maskz_loadu_ps(rk_lanes(-base, in_w - base), row + base);
  if (S == 1) return lo;
  const __m512 hi = _mm512_maskz_loadu_ps(rk_lanes(-base - 16, in_w - base - 16), row + base + 16);
  return _mm512_permutex2var_ps(lo, rk_even_lanes(), hi);
}
#else
using RkFewVector = __m256;
constexpr int64_t kRkFewLanes = 8;
constexpr int kRkFewBlock = 4;
// Input channels at most. On AVX2 (one thread) squeezenet1_0's 3x3 convs of 16 -> 64 channels at
// 54 x 54 took 950 us on Winograd, 730 here; its 32 -> 128 convs were slower here than there
// (2.67 -> 2.93 ms at 54 x 54). AVX-512 machines were not measured beyond 8.
constexpr int64_t kRkFewChannels = 16;
inline __m256 rk_few_zero() { return _mm256_setzero_ps(); }
inline __m256 rk_few_load(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 rk_few_broadcast(const float* p) { return _mm256_broadcast_ss(p); }
inline __m256 rk_few_fma(__m256 a, __m256 b, __m256 acc) { return _mm256_fmadd_ps(a, b, acc); }
inline void rk_few_store_first(float* p, __m256 v, int64_t n) { rk_store_first(p, v, n); }
inline void rk_few_copy(float* to, const float* from, int64_t n) {
  for (int64_t t = 0; t < n; ++t) to[t] = from[t];
}
// Input columns base + S l of `row` (lanes l in [0, 8)), zero outside [0, in_w); at stride 2 the
// even lanes of two windows.
template <int S> inline __m256 rk_few_channels_columns(const float* row, int64_t in_w, int64_t base) {
  const __m256 lo = rk_row_window8(row, in_w, base, _mm256_setzero_ps());
  if (S == 1) return lo;
  const __m256 hi = rk_row_window8(row, in_w, base + 8, _mm256_setzero_ps());
  // lo0 lo2 hi0 hi2 | lo4 lo6 hi4 hi6, its 64-bit quarters put in order 0 2 1 3.
  const __m256 evens = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(evens), _MM_SHUFFLE(3, 1, 2, 0)));
}
#endif

// Columns S t + p - pad_w of input row `row` (null: a row of the padding), t in [0, pitch), into
// `to`: one column phase of the row, zero outside it.
template <int S> inline void rk_few_channels_copy_phase(const float* row, const RkConvWindow& w, int64_t p, int64_t pitch, float* to) {
  for (int64_t t = 0; t < pitch; t += kRkFewLanes) {
    const RkFewVector x = row != nullptr ? rk_few_channels_columns<S>(row, w.in_w, S * t + p - w.pad_w) : rk_few_zero();
    rk_few_store_first(to + t, x, pitch - t);
  }
}

// The input row y of channel c, or null where y is in the padding.
inline const float* rk_few_channels_row(const float* image, const RkConvWindow& w, int64_t c, int64_t y) {
  return y < 0 || y >= w.in_h ? nullptr : image + c * w.channel_step + y * w.row_step;
}

// Copies input row y of every channel into the strip's row u, phase by phase.
template <int S>
inline void rk_few_channels_copy_row(const float* image, const RkConvWindow& w, int64_t y, int64_t u, int64_t rows, int64_t pitch, float* strip) {
  for (int64_t c = 0; c < w.channels; ++c)
    for (int64_t p = 0; p < S; ++p)
      rk_few_channels_copy_phase<S>(rk_few_channels_row(image, w, c, y), w, p, pitch, strip + ((c * rows + u) * S + p) * pitch);
}

// B output channels (weights wb[k B + b] for tap k) x X vectors of one output row, from the strip
// rows under it (`under`: channel 0, tap row 0, phase 0, at the first vector's column; tap k at
// under + tap[k]): the taps summed in order (channel, tap row, tap column), as the conv GEMM sums K.
// The last vector's first `last` lanes are stored.
template <int B, int X>
inline void rk_few_channels_block(const float* under, const int32_t* tap, int64_t K, const float* wb, float* out, int64_t ldc, int64_t last) {
  RkFewVector acc[B][X];
#pragma GCC unroll 8
  for (int b = 0; b < B; ++b)
#pragma GCC unroll 4
    for (int x = 0; x < X; ++x) acc[b][x] = rk_few_zero();
  for (int64_t k = 0; k < K; ++k, wb += B) {
    const float* at = under + tap[k];
    RkFewVector v[X];
#pragma GCC unroll 4
    for (int x = 0; x < X; ++x) v[x] = rk_few_load(at + kRkFewLanes * x);
#pragma GCC unroll 8
    for (int b = 0; b < B; ++b) {
      const RkFewVector wv = rk_few_broadcast(wb + b);
#pragma GCC unroll 4
      for (int x = 0; x < X; ++x) acc[b][x] = rk_few_fma(wv, v[x], acc[b][x]);
    }
  }
#pragma GCC unroll 8
  for (int b = 0; b < B; ++b)
#pragma GCC unroll 4
    for (int x = 0; x < X; ++x) rk_few_store_first(out + b * ldc + kRkFewLanes * x, acc[b][x], x == X - 1 ? last : kRkFewLanes);
}

// `vectors` vectors from `under` into `out` (rows ldc apart), 3 at a time, the last
// vector's first `last` lanes stored.
template <int B>
inline void rk_few_channels_run(const float* under, const int32_t* tap, int64_t K, const float* wb, float* out, int64_t ldc, int64_t vectors,
                                int64_t last) {
  int64_t v = 0;
  for (; v + 3 <= vectors; v += 3)
    rk_few_channels_block<B, 3>(under + kRkFewLanes * v, tap, K, wb, out + kRkFewLanes * v, ldc, v + 3 == vectors ? last : kRkFewLanes);
  if (vectors - v == 2) rk_few_channels_block<B, 2>(under + kRkFewLanes * v, tap, K, wb, out + kRkFewLanes * v, ldc, last);
  if (vectors - v == 1) rk_few_channels_block<B, 1>(under + kRkFewLanes * v, tap, K, wb, out + kRkFewLanes * v, ldc, last);
}

// Channel m + b's weight of tap k at wb[k B + b]: one broadcast each.
template <int B> inline void rk_few_channels_weights(const float* A, int64_t lda, int64_t m, int64_t K, float* wb) {
  for (int64_t k = 0; k < K; ++k)
    for (int b = 0; b < B; ++b) wb[k * B + b] = A[(m + b) * lda + k];
}

// Output channels [m, m + B) of the strip's n_rows output rows.
template <int S, int B>
inline void rk_few_channels_rows(const float* strip, const int32_t* tap, int64_t K, int64_t pitch, const float* A, int64_t lda, int64_t m,
                                 int64_t out_w, int64_t oy0, int64_t n_rows, float* C, int64_t ldc) {
  const int64_t vectors = (out_w + kRkFewLanes - 1) / kRkFewLanes;
  alignas(64) float wb[kRkFewChannelsTaps * B];
  rk_few_channels_weights<B>(A, lda, m, K, wb);
  for (int64_t r = 0; r < n_rows; ++r)  // from channel 0, strip row r S, phase 0
    rk_few_channels_run<B>(strip + r * S * S * pitch, tap, K, wb, C + m * ldc + (oy0 + r) * out_w, ldc, vectors, out_w - kRkFewLanes * (vectors - 1));
}

// On rows of output of at most 16 (flat): the strip's input is copied into sub-planes by
// row and column phase modulo the stride (one at stride 1; at stride 2 the even and odd rows'
// even and odd columns), each row pitch = out_w + (taps_w - 1) / S wide, unaligned, and the
// strip's output rows computed as one flat run at that pitch: output (r, ox) at r pitch + ox,
// tap (i, j) of it in sub-plane (i mod S, j mod S) at row r + i / S, column ox + j / S, that is
// the flat index + a constant. The columns between rows are computed and dropped, then each row
// copied out. A row of 7 was a vector, 7 of its 16 lanes used; flat, 7 x 7 is 4 vectors for 49
// pixels, in blocks of 3 (one thread, 55 groups of 8 channels at 7 x 7: 89 -> 74 us; 26 groups
// at 14 x 14 level). On rows of 28 the copy out cost more than it saved: 6 -> 96 and 5 -> 256
// channels 4-8% slower, groups of 8 at 28 x 28 3% faster.
constexpr int64_t kRkFewChannelsFlatWidth = 16;  // out_w at most this: flat
constexpr int64_t kRkFewChannelsSlack = 32;      // zeros after the strip: the last vector's taps read past it

// Sub-plane row v of every channel and phase: input row y0 + S v + a for row phase a, its
// columns S u + p - pad_w for column phase p.
template <int S>
inline void rk_few_channels_copy_flat(const float* image, const RkConvWindow& w, int64_t y0, int64_t v, int64_t sub_rows, int64_t pitch,
                                      float* strip) {
  for (int64_t c = 0; c < w.channels; ++c)
    for (int64_t a = 0; a < S; ++a)
      for (int64_t p = 0; p < S; ++p)
        rk_few_channels_copy_phase<S>(rk_few_channels_row(image, w, c, y0 + S * v + a), w, p, pitch,
                                      strip + (((c * S + a) * S + p) * sub_rows + v) * pitch);
}

// Output channels [m, m + B) of the strip's n_rows output rows, flat: the run into `flat` (B rows
// of `run` floats), then each output row copied out.
template <int B>
inline void rk_few_channels_flat(const float* strip, const int32_t* tap, int64_t K, int64_t pitch, const float* A, int64_t lda, int64_t m,
                                 int64_t out_w, int64_t oy0, int64_t n_rows, float* C, int64_t ldc, float* flat, int64_t run) {
  alignas(64) float wb[kRkFewChannelsTaps * B];
  rk_few_channels_weights<B>(A, lda, m, K, wb);
  rk_few_channels_run<B>(strip, tap, K, wb, flat, run, (n_rows * pitch + kRkFewLanes - 1) / kRkFewLanes, kRkFewLanes);
  for (int b = 0; b < B; ++b)
    for (int64_t r = 0; r < n_rows; ++r) rk_few_copy(C + (m + b) * ldc + (oy0 + r) * out_w, flat + b * run + r * pitch, out_w);
}

// The strip's output rows and its copied rows' pitch for this window, or false where the kernel
// does not take it.
struct RkFewChannelsPlan {
  int64_t strip_rows, pitch;
  bool flat;
};
inline bool rk_few_channels_plan(int64_t M, const RkConvWindow& w, RkFewChannelsPlan* plan) {
  const int64_t S = w.stride_w, out_h = w.out_w > 0 ? w.plane / w.out_w : 0;
  const bool taken = w.channels >= 1 && w.channels <= kRkFewChannels && w.taps_h >= 1 && w.taps_h <= 11 && w.taps_w >= 1 && w.taps_w <= 11 &&
                     w.channels * w.taps_h * w.taps_w <= kRkFewChannelsTaps && w.stride_h == S && (S == 1 || S == 2) && w.dilation_h == 1 &&
                     w.dilation_w == 1 && w.col_step == 1 && M >= 1 && out_h >= 1;
  if (!taken) return false;
  const int64_t L = kRkFewLanes, vectors = (w.out_w + L - 1) / L;
  plan->flat = w.out_w <= kRkFewChannelsFlatWidth;
  plan->pitch = plan->flat ? w.out_w + (w.taps_w - 1) / S : (L * vectors + (w.taps_w - 1) / S + L - 1) / L * L;
  for (int64_t r = 8; r >= 1; --r)
    if (w.channels * (plan->flat ? S * (r + (w.taps_h - 1) / S) : (r - 1) * S + w.taps_h) * S * plan->pitch + kRkFewChannelsSlack <=
        kRkFewChannelsStrip) {
      plan->strip_rows = r < out_h ? r : out_h;
      return true;
    }
  return false;
}

// C[M x plane] (rows ldc apart) = the conv of `image` by A (M rows of channels x taps weights, lda
// apart), the epilogue run on each block of output channels x strip; strips shared out between
// the threads.
template <int S>
void rk_few_channels_conv(int64_t M, const float* A, int64_t lda, const float* image, const RkConvWindow& w, const RkFewChannelsPlan& plan, float* C,
                          int64_t ldc, RkEpilogue epilogue) {
  const int64_t out_h = w.plane / w.out_w, strips = (out_h + plan.strip_rows - 1) / plan.strip_rows, pitch = plan.pitch;
  bool parallel = false;
#ifdef _OPENMP
  parallel = strips >= 2 && !omp_in_parallel();
#endif
  (void)parallel;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t s = 0; s < strips; ++s) {
    const int64_t oy0 = s * plan.strip_rows, n_rows = out_h - oy0 < plan.strip_rows ? out_h - oy0 : plan.strip_rows;
    const int64_t rows = (n_rows - 1) * S + w.taps_h;
    alignas(64) float strip[kRkFewChannelsStrip];
    const int64_t sub_rows = n_rows + (w.taps_h - 1) / S;  // of each flat sub-plane
    if (plan.flat) {
      for (int64_t v = 0; v < sub_rows; ++v) rk_few_channels_copy_flat<S>(image, w, oy0 * S - w.pad_h, v, sub_rows, pitch, strip);
      for (int64_t t = 0; t < kRkFewChannelsSlack; ++t) strip[w.channels * S * S * sub_rows * pitch + t] = 0.0f;
    } else {
      for (int64_t u = 0; u < rows; ++u) rk_few_channels_copy_row<S>(image, w, oy0 * S - w.pad_h + u, u, rows, pitch, strip);
    }
    // Tap (c, i, j) of an output row reads channel c's strip row (that row's) + i, phase j mod S,
    // j / S columns on; flat, sub-plane (c, i mod S, j mod S) at row i / S, column j / S.
    int32_t tap[kRkFewChannelsTaps];
    int64_t K = 0;
    for (int64_t c = 0; c < w.channels; ++c)
      for (int64_t i = 0; i < w.taps_h; ++i)
        for (int64_t j = 0; j < w.taps_w; ++j)
          tap[K++] = (int32_t)(plan.flat ? (((c * S + i % S) * S + j % S) * sub_rows + i / S) * pitch + j / S
                                         : ((c * rows + i) * S + j % S) * pitch + j / S);
    // The flat run's sums: a block of up to 8 channels of up to 8 rows of at most 16 + 10 columns, in whole vectors.
    const int64_t run = (n_rows * pitch + kRkFewLanes - 1) / kRkFewLanes * kRkFewLanes;
    alignas(64) float flat[kRkFewBlock * 8 * 32];
    for (int64_t m = 0; m < M;) {
      const int64_t left = M - m, b = left >= kRkFewBlock ? kRkFewBlock : left >= 4 ? 4 : left >= 2 ? 2 : 1;
      const auto channels = [&](auto block) {
        constexpr int B = decltype(block)::value;
        if (plan.flat) rk_few_channels_flat<B>(strip, tap, K, pitch, A, lda, m, w.out_w, oy0, n_rows, C, ldc, flat, run);
        else rk_few_channels_rows<S, B>(strip, tap, K, pitch, A, lda, m, w.out_w, oy0, n_rows, C, ldc);
      };
      if (b == kRkFewBlock) channels(std::integral_constant<int, kRkFewBlock>{});
      else if (b == 4) channels(std::integral_constant<int, 4>{});
      else if (b == 2) channels(std::integral_constant<int, 2>{});
      else channels(std::integral_constant<int, 1>{});
      if (epilogue.run) epilogue.run(epilogue.ctx, m, m + b, oy0 * w.out_w, (oy0 + n_rows) * w.out_w);
      m += b;
    }
  }
}

// Runs the conv where the kernel takes its window at stride S (returns true), else computes nothing.
template <int S>
inline bool rk_conv_few_channels(int64_t M, const float* A, int64_t lda, const float* image, const RkConvWindow& w, float* C, int64_t ldc,
                                 RkEpilogue epilogue) {
  RkFewChannelsPlan plan;
  if (w.stride_w != S || !rk_few_channels_plan(M, w, &plan)) return false;
  rk_few_channels_conv<S>(M, A, lda, image, w, plan, C, ldc, epilogue);
  return true;
}
#endif

}  // namespace

#endif  // RK_CPP_CONV_FEW_CHANNELS_H
