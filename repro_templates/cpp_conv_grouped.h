// reprokit generated code: grouped convolutions of G = 4, 8 or 16 channels a group (as many out as
// in) on AVX-512, 16 output channels a vector (part of cpp_prelude.h, compiled only into the
// kernels unit that defines RK_GROUPED_KERNEL G, S).
//
// A grouped conv of 8 channels a group (regnet_y_400mf's 3x3 convs) does 8 x 9 multiply-adds an
// output value: too few for a GEMM a group (packing cost as much as multiplying), and on the
// few-channel conv each group's 8 planes are copied and each output row a vector, which on rows of
// 7 or 14 left lanes idle and spent half its time outside the multiply-adds. Here a vector holds
// 16 output channels, 16 / G groups side by side: the input planes of those groups are transposed
// into pixels of 16 channels (zero-padded), and each tap of each input channel of a group is one
// broadcast of 16 / G floats (a value a group) times a vector of 16 weights. The transposes cost
// 4 shuffles a pixel each way against G x taps multiply-adds; a depthwise conv (G = 1) has too few
// for that (cpp_conv_depthwise.h).
//
// Lanes: output channel c0 + g G + k of a vector (group g, channel k of it) is lane k (16 / G) + g,
// and input channel c0 + g G + i of the transposed input lane i (16 / G) + g, so the 16 / G
// floats of input channel i of every group lie side by side and one broadcast gives each lane its
// group's value.
#ifndef RK_CPP_CONV_GROUPED_H
#define RK_CPP_CONV_GROUPED_H
#include "cpp_base.h"
#include "cpp_avx512.h"
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace {

#if defined(__AVX512F__)
constexpr int64_t kRkGroupedColumns = 7;    // output pixels of a row summed at once (rows of 7, 14, 28, 56: no waste)
constexpr int64_t kRkGroupedInput = 12288;  // floats of a strip's transposed input (48 KiB, the stack)
constexpr int64_t kRkGroupedOutput = 4096;  // floats of a strip's sums before they are transposed out (16 KiB)

// r[0..15] transposed in place: element l of r[k] becomes element k of r[l]. GCC's vector
// shuffles, which it compiles to the same unpacks and 128-bit shuffles as the intrinsics; those
// set their unused operand to an undefined value, which GCC 12 reports at -O3 as maybe
// uninitialized wherever they are inlined.
inline void rk_transpose_16x16(__m512 r[16]) {
  typedef int32_t RkLanes __attribute__((vector_size(64)));
  const RkLanes lo32 = {0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28, 13, 29};
  const RkLanes hi32 = {2, 18, 3, 19, 6, 22, 7, 23, 10, 26, 11, 27, 14, 30, 15, 31};
  const RkLanes lo64 = {0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29};
  const RkLanes hi64 = {2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31};
  const RkLanes even128 = {0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27};
  const RkLanes odd128 = {4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31};
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = __builtin_shuffle(r[2 * i], r[2 * i + 1], lo32);
    t[2 * i + 1] = __builtin_shuffle(r[2 * i], r[2 * i + 1], hi32);
  }
  for (int i = 0; i < 4; ++i) {
    r[4 * i] = __builtin_shuffle(t[4 * i], t[4 * i + 2], lo64);
    r[4 * i + 1] = __builtin_shuffle(t[4 * i], t[4 * i + 2], hi64);
    r[4 * i + 2] = __builtin_shuffle(t[4 * i + 1], t[4 * i + 3], lo64);
    r[4 * i + 3] = __builtin_shuffle(t[4 * i + 1], t[4 * i + 3], hi64);
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      t[8 * i + j] = __builtin_shuffle(r[8 * i + j], r[8 * i + j + 4], even128);
      t[8 * i + j + 4] = __builtin_shuffle(r[8 * i + j], r[8 * i + j + 4], odd128);
    }
  for (int j = 0; j < 8; ++j) {
    r[j] = __builtin_shuffle(t[j], t[j + 8], even128);
    r[j + 8] = __builtin_shuffle(t[j], t[j + 8], odd128);
  }
}

// The lane of channel c (0-15) of a vector of 16 / G groups, and the channel of lane l.
template <int G> constexpr int rk_grouped_lane(int c) { return (c % G) * (16 / G) + c / G; }
template <int G> constexpr int rk_grouped_channel(int l) { return (l % (16 / G)) * G + l / (16 / G); }

// Input channel i of every group of a vector at one pixel, broadcast: lane l gets at[l mod 16 / G].
template <int G> inline __m512 rk_grouped_broadcast(const float* at) {
  if constexpr (G == 16) return _mm512_set1_ps(*at);
  else if constexpr (G == 8) {
    double pair;  // two floats as one 64-bit broadcast (a copy, not a cast: no aliasing)
    std::memcpy(&pair, at, sizeof pair);
    return _mm512_castpd_ps(_mm512_set1_pd(pair));
  }
  // The zero-masking form: the plain one's undefined operand draws GCC 12's maybe-uninitialized.
  else
    return _mm512_maskz_broadcast_f32x4((__mmask16)0xFFFF, _mm_loadu_ps(at));
}

// Weights of vector v (output channels 16 v ...) in the order the sums read them: tap t, input
// channel i, then 16 lanes; zero for channels past M.
template <int G> void rk_grouped_pack_weights(int64_t M, const float* w, int64_t taps, float* packed) {
  const int64_t vectors = (M + 15) / 16;
  for (int64_t v = 0; v < vectors; ++v)
    for (int64_t t = 0; t < taps; ++t)
      for (int i = 0; i < G; ++i) {
        float* to = packed + ((v * taps + t) * G + i) * 16;
        for (int l = 0; l < 16; ++l) {
          const int64_t c = 16 * v + rk_grouped_channel<G>(l);
          to[l] = c < M ? w[(c * G + i) * taps + t] : 0.0f;
        }
      }
}

// Output rows [oy0, oy0 + rows) of vector v of image `image` (channels 16 v ... of its M), into C's
// planes, the epilogue run on them.
template <int G, int K, int S>
void rk_grouped_strip(int64_t M, const float* packed, const float* image, const RkConvWindow& d, int64_t v, int64_t oy0, int64_t rows, int64_t pitch,
                      float* C, int64_t m0, RkEpilogue epilogue, const RkChannelAffine* affine) {
  alignas(64) float in[kRkGroupedInput];
  alignas(64) float sums[kRkGroupedOutput];
  const int64_t out_w = d.out_w, in_rows = (rows - 1) * S + K;
  const int64_t y0 = oy0 * S - d.pad_h;  // the input row of the strip's first row
  // Transposed input: row u, column q (input column q - pad_w), 16 channels; zero outside (only
  // there: zeroing the whole strip first was 7% of a conv at stride 2).
  const int64_t ya = y0 < 0 ? 0 : y0, yb = rk_min(d.in_h, y0 + in_rows);
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t u = 0; u < in_rows; ++u) {
    const bool inside = y0 + u >= ya && y0 + u < yb;  // a row of the input, else of the padding
    for (int64_t q = 0; q < (inside ? d.pad_w : pitch); ++q) _mm512_store_ps(in + (u * pitch + q) * 16, zero);
    for (int64_t q = d.in_w + d.pad_w; inside && q < pitch; ++q) _mm512_store_ps(in + (u * pitch + q) * 16, zero);
  }
  if (yb > ya) {
    // The rows' pixels run on in the planes (rows read along): 16 at a time, a plane a vector.
    const int64_t first = ya * d.in_w, count = (yb - ya) * d.in_w;
    for (int64_t p = 0; p < count; p += 16) {
      const __mmask16 live = rk_lanes(0, count - p);
      __m512 r[16];
      for (int c = 0; c < 16; ++c) {
        const int64_t channel = 16 * v + c;
        r[rk_grouped_lane<G>(c)] = channel < M ? _mm512_maskz_loadu_ps(live, image + channel * d.channel_step + first + p) : _mm512_setzero_ps();
      }
      rk_transpose_16x16(r);
      int64_t y = ya + p / d.in_w, x = p % d.in_w;  // pixel p's row and column, then the next's
      for (int64_t k = 0; k < 16 && p + k < count; ++k) {
        _mm512_store_ps(in + ((y - y0) * pitch + x + d.pad_w) * 16, r[k]);
        if (++x == d.in_w) x = 0, ++y;
      }
    }
  }
  // Sums of kRkGroupedColumns pixels of an output row at a time; pixels past the row are summed
  // from the padding and dropped. Each input pixel of a tap row is broadcast once and multiplied
  // into every sum of the block it is a tap of (K at stride 1): one load to a multiply-add was
  // 1.15 a multiply-add, and the kernel waited on them.
  constexpr int N = kRkGroupedColumns, X = (N - 1) * S + K;  // sums, input columns under them
  const float* wv0 = packed + v * K * K * G * 16;
  // The epilogue's per-channel affine map and clamp (RkChannelAffine), lane by lane, on each
  // vector of sums as it is stored: 3 operations against G x 9 multiply-adds. Without one, the
  // identity and an unbounded clamp (a branch there cost the loops their unrolling).
  alignas(64) float scale[16], shift[16];
  for (int l = 0; l < 16; ++l) {
    const int64_t c = rk_min<int64_t>(M - 1, 16 * v + rk_grouped_channel<G>(l));
    scale[l] = affine ? affine->scale[c] : 1.0f;
    shift[l] = affine ? affine->shift[c] : 0.0f;
  }
  const __m512 scale_v = _mm512_load_ps(scale), shift_v = _mm512_load_ps(shift);
  const __m512 lo = _mm512_set1_ps(affine ? affine->lo : -INFINITY), hi = _mm512_set1_ps(affine ? affine->hi : INFINITY);
  const bool relu = affine && affine->relu;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t ox0 = 0; ox0 < out_w; ox0 += N) {
      __m512 acc[N];
#pragma GCC unroll 8
      for (int n = 0; n < N; ++n) acc[n] = _mm512_setzero_ps();
      for (int i = 0; i < K; ++i) {
        const float* row = in + ((r * S + i) * pitch + ox0 * S) * 16;
#pragma GCC unroll 16
        for (int ci = 0; ci < G; ++ci) {
          __m512 w[K];
#pragma GCC unroll 7
          for (int j = 0; j < K; ++j) w[j] = _mm512_loadu_ps(wv0 + ((i * K + j) * G + ci) * 16);
#pragma GCC unroll 24
          for (int x = 0; x < X; ++x) {
            const __m512 b = rk_grouped_broadcast<G>(row + x * 16 + ci * (16 / G));
#pragma GCC unroll 7
            for (int j = 0; j < K; ++j) {
              const int n = (x - j) / S;  // the sum input column x is tap j of
              if (x - j >= 0 && (x - j) % S == 0 && n < N) acc[n] = _mm512_fmadd_ps(b, w[j], acc[n]);
            }
          }
        }
      }
      float* to = sums + (r * out_w + ox0) * 16;
#pragma GCC unroll 8
      for (int n = 0; n < N; ++n) {
        // max(lo, v) keeps v's NaN and -0 as the generated clamp does; a relu's +0 makes -0 +0.
        const __m512 y = rk_min_lanes(hi, rk_max_lanes(lo, _mm512_fmadd_ps(acc[n], scale_v, shift_v)));
        if (ox0 + n < out_w) _mm512_store_ps(to + n * 16, relu ? _mm512_add_ps(y, _mm512_setzero_ps()) : y);
      }
    }
  // The sums out to C's planes, 16 pixels at a time.
  const int64_t count = rows * out_w, at = oy0 * out_w;
  for (int64_t p = 0; p < count; p += 16) {
    __m512 r[16];
    for (int64_t k = 0; k < 16; ++k) r[k] = p + k < count ? _mm512_load_ps(sums + (p + k) * 16) : _mm512_setzero_ps();
    rk_transpose_16x16(r);
    const __mmask16 live = rk_lanes(0, count - p);
    for (int l = 0; l < 16; ++l) {
      const int64_t channel = 16 * v + rk_grouped_channel<G>(l);
      if (channel < M) _mm512_mask_storeu_ps(C + (m0 + channel) * d.plane + at + p, live, r[l]);
    }
  }
  if (epilogue.run) epilogue.run(epilogue.ctx, m0 + 16 * v, m0 + rk_min<int64_t>(M, 16 * v + 16), at, at + count);
}

// The transposed input's row pitch (pixels) and a strip's output rows, or false where the kernel
// does not take the window.
inline bool rk_grouped_plan(const RkConvWindow& d, int64_t S, int64_t* pitch, int64_t* strip_rows) {
  const int64_t out_h = d.out_w > 0 ? d.plane / d.out_w : 0;
  if (d.stride_h != S || d.stride_w != S || d.dilation_h != 1 || d.dilation_w != 1 || d.col_step != 1 || d.row_step != d.in_w || out_h < 1 ||
      d.plane != out_h * d.out_w || d.taps_h != 3 || d.taps_w != 3)
    return false;
  const int64_t blocks = (d.out_w + kRkGroupedColumns - 1) / kRkGroupedColumns;
  *pitch = rk_max<int64_t>((blocks * kRkGroupedColumns - 1) * S + d.taps_w, d.in_w + d.pad_w);
  for (int64_t r = out_h; r >= 1; --r)
    if (((r - 1) * S + d.taps_h) * *pitch * 16 <= kRkGroupedInput && r * d.out_w * 16 <= kRkGroupedOutput) {
      *strip_rows = r;
      return true;
    }
  return false;
}

// Every output plane of every image (m = n M + c: C + m plane), M = window.channels channels of
// G a group, in strips of `strip_rows` rows at `pitch` (rk_grouped_plan's); packed:
// rk_grouped_pack_weights's.
template <int G, int S>
void rk_grouped_conv(int64_t images, const float* packed, const float* image, int64_t image_step, const RkConvWindow& d, int64_t pitch,
                     int64_t strip_rows, float* C, RkEpilogue epilogue, const RkChannelAffine* affine) {
  const int64_t M = d.channels, vectors = (M + 15) / 16, out_h = d.plane / d.out_w, strips = (out_h + strip_rows - 1) / strip_rows;
  const int64_t tasks = images * vectors * strips;
  const bool parallel = tasks >= 2 && images * M * d.plane * G * d.taps_h * d.taps_w >= (int64_t{1} << 17);
  (void)parallel;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t task = 0; task < tasks; ++task) {
    const int64_t s = task % strips, v = (task / strips) % vectors, nb = task / (strips * vectors);
    const int64_t oy0 = s * strip_rows, rows = rk_min(strip_rows, out_h - oy0);
    rk_grouped_strip<G, 3, S>(M, packed, image + nb * image_step, d, v, oy0, rows, pitch, C, nb * M, epilogue, affine);
  }
}
#endif

}  // namespace

#endif  // RK_CPP_CONV_GROUPED_H
