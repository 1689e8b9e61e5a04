// reprokit generated code: prelude shared by every graph compiled by the cpp backend.
// (Embedded from repro_templates/cpp_prelude.h; a real, compilable header.)
#include "cpp_base.h"
// The kernels library code implements are units of their own, each the same text in every graph,
// so the compile cache builds each once (cpp_codegen.cpp), and a graph compiles only those it
// calls, side by side: RK_GEMM_KERNELS, the panel GEMM and rk_matmul_f32 (cpp_panel_gemm.h, GCC's
// vector extensions only); RK_CONV_KERNELS, the conv GEMM on it (cpp_conv_gemm.h, intrinsics)
// with the panel GEMM's other kernel shapes; RK_WINOGRAD_KERNELS, 3x3 convs by Winograd;
// RK_FEW_CHANNELS_KERNELS (stride), convs of few input channels; RK_DEPTHWISE_KERNEL (taps, stride, activation), one
// depthwise conv kernel; RK_GROUPED_KERNEL (channels a group, stride), one grouped conv kernel; RK_POOL_KERNELS, max pooling. In one unit the
// convolutions were 4.3 s of compile on the critical path of every graph with a conv, most graphs needing a part.
#if defined(RK_GEMM_KERNELS) || defined(RK_CONV_KERNELS) || defined(RK_WINOGRAD_KERNELS)
#include "cpp_panel_gemm.h"
#endif
#ifdef RK_CONV_KERNELS
#include "cpp_conv_gemm.h"
#endif
#ifdef RK_WINOGRAD_KERNELS
#include "cpp_conv_winograd.h"
#endif
#ifdef RK_FEW_CHANNELS_KERNELS
#include "cpp_conv_few_channels.h"
#endif
#ifdef RK_DEPTHWISE_KERNEL
#include "cpp_conv_depthwise.h"
#endif
#ifdef RK_GROUPED_KERNEL
#include "cpp_conv_grouped.h"
#endif
#ifdef RK_POOL_KERNELS
#include "cpp_pool.h"
#endif

namespace {

// Float math the vectoriser can inline (std::expf and friends are opaque calls): the same kind of
// approximations PyTorch's vectorised CPU kernels use (exp within about 1 ulp; erf a rational
// function, within 5 ulp).
inline float rk_expf(float x) {
  // x where exp(x) is already inf (above 89) or 0 (below -104: under half the smallest
  // subnormal) clamped; a NaN goes through. No select after the polynomial: one on the NaN case
  // made GCC compute a sigmoid's division once for each arm (two vdivps a vector).
  const float xc = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
  // n = x / ln 2 rounded to nearest by adding and taking away 1.5 * 2^23. (floorf(v + 0.5), as
  // before, kept every loop calling this scalar: GCC vectorises floorf only under
  // -fno-trapping-math; gelu, softmax, sigmoid and tanh ran one element at a time.)
  const float t = xc * 1.44269504088896341f + 12582912.0f, n = t - 12582912.0f;
  const float r = (xc - n * 0.693359375f) + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * r * r + r + 1.0f;
  // 2^n as two powers of two, each a normal float for n in [-150, 128], so the product
  // overflows, or rounds into the subnormals, only where exp(x) does. n as an integer is t's low
  // mantissa bits (defined for any x, a NaN too, whose y makes the result NaN).
  uint32_t t_bits;
  std::memcpy(&t_bits, &t, 4);
  const int32_t ni = (int32_t)(t_bits - 0x4B400000u), n1 = ni >> 1, n2 = ni - n1;
  const uint32_t b1 = (uint32_t)(n1 + 127) << 23, b2 = (uint32_t)(n2 + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &b1, 4);
  std::memcpy(&s2, &b2, 4);
  return y * s1 * s2;
}
// erf(x) = x P(x^2) / Q(x^2) below 3.85 (P of degree 6, Q of 5: a weighted least-squares fit,
// relative error 1.6e-9 in exact arithmetic, under 5 ulp in float), 1 above, where erf rounds to
// 1 in float. Against Abramowitz and Stegun 7.1.26 with a series below 0.5 (both branches
// computed, a division and an exp an element), half the time: gelu is convnext_tiny's largest
// pass after its GEMMs.
inline float rk_erff(float x) {
  const float a = x < 0 ? -x : x, c = a > 3.85f ? 3.85f : a, z = c * c;
  // Horner's form, kept as written: one coefficient after another.
  // clang-format off
  const float p = 1.1283791689e+00f + z * (1.8500714434e-01f + z * (5.4154630563e-02f + z * (3.8242036360e-03f +
                  z * (3.7348815848e-04f + z * (4.5226358730e-06f + z * -1.2328623030e-08f)))));
  const float q = 1.0f + z * (4.9729171148e-01f + z * (1.1375676119e-01f + z * (1.5389519566e-02f + z * (1.2942453670e-03f +
                  z * 6.1588435704e-05f))));
  // clang-format on
  const float r = a >= 3.85f ? 1.0f : c * p / q;
  return x != x ? x : (x < 0 ? -r : r);
}
inline float rk_tanhf(float x) {
  // Near 0 an odd polynomial (Cephes), elsewhere 1 - 2 / (exp(2|x|) + 1).
  const float a = x < 0 ? -x : x, z = x * x;
  const float small =
      x + x * z * (((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z + 1.33314422036e-1f) * z - x * z * 3.33332819422e-1f;
  const float big = 1.0f - 2.0f / (rk_expf(2.0f * a) + 1.0f);
  return x != x ? x : (a < 0.625f ? small : (x < 0 ? -big : big));
}

// torch.clamp: NaN stays NaN; with min > max every value becomes max.
template <class T> inline T rk_clamp_min(T a, T lo) { return a < lo ? lo : a; }
template <class T> inline T rk_clamp_max(T a, T hi) { return a > hi ? hi : a; }
// A value the optimiser cannot see through (a clamp's bound, taken once before its loop).
template <class T> inline T rk_opaque(T v) {
  __asm__("" : "+m"(v));
  return v;
}
template <class T> inline T rk_relu(T a) { return a != a ? a : (a > T(0) ? a : T(0)); }
template <class T> inline T rk_abs(T a) { return a < T(0) ? -a : (a == T(0) ? T(0) : a); }
// The identity of amax / amin: -inf / inf for floats, the extremes for integers.
template <class T> inline T rk_lowest() {
  return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
}
template <class T> inline T rk_highest() {
  return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
}
// Integer power by squaring (wrapping: built with -fwrapv); a negative exponent truncates toward 0.
inline int64_t rk_ipow(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  int64_t r = 1;
  for (; b; b >>= 1, a *= a)
    if (b & 1) r *= a;
  return r;
}
// Float to integer as PyTorch's casts on x86: truncation; NaN and out of range give the minimum.
inline int64_t rk_f2i64(double x) { return (x >= -9223372036854775808.0 && x < 9223372036854775808.0) ? (int64_t)x : INT64_MIN; }
inline int32_t rk_f2i32(double x) { return (x > -2147483649.0 && x < 2147483648.0) ? (int32_t)x : INT32_MIN; }

// Fault injection helpers (only referenced when a test injects a fault).
volatile int* volatile rk_null_target = nullptr;
inline void rk_crash() { *rk_null_target = 1; }
inline void rk_spin_forever() {
  volatile int spin = 1;
  while (spin) {}
}
inline bool rk_flaky() {
  // Seeded from the nanosecond clock: a worker reloads the same code at the same address in the
  // same second, and a seed from time() and the pid alone then gave every run the same answer.
  static unsigned state = 0;
  if (state == 0) {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    state = ((unsigned)ts.tv_nsec ^ (unsigned)ts.tv_sec * 2654435761u ^ ((unsigned)getpid() << 16)) | 1u;
  }
  state = state * 1103515245u + 12345u;
  return (state >> 16) & 1u;
}
// A kernel's buffer too large for its stack frame, left uninitialised (a std::vector zeroes it
// first: a pass over the buffer for each plane of a direct conv).
template <class T> struct RkHeapBuffer {
  T* data;
  explicit RkHeapBuffer(int64_t n) : data((T*)std::malloc(sizeof(T) * (size_t)n)) {}
  ~RkHeapBuffer() { std::free(data); }
  RkHeapBuffer(const RkHeapBuffer&) = delete;
  RkHeapBuffer& operator=(const RkHeapBuffer&) = delete;
};
template <class T> inline T rk_perturb(T v) { return (T)(v * (T)1.01 + (T)0.01); }
// Graded faults (--inject OP:accuracy=REL, OP:accuracy_one=K): a relative error REL on every
// element; 1.01 v + 0.01 on one element in K, chosen by a hash of the value's bits.
template <class T> inline T rk_perturb_rel(double rel, T v) { return (T)((double)v * (1.0 + rel)); }
template <class T> inline T rk_perturb_one(long long k, T v) {
  double d = (double)v;
  unsigned long long b;
  std::memcpy(&b, &d, sizeof b);
  b += 0x9e3779b97f4a7c15ULL;  // so that 0.0 (bits 0, a fixed point of the mix) is not always chosen
  b ^= b >> 33;
  b *= 0xff51afd7ed558ccdULL;
  b ^= b >> 33;
  b *= 0xc4ceb9fe1a85ec53ULL;
  b ^= b >> 33;
  return b % (unsigned long long)k == 0 ? (T)(d * 1.01 + 0.01) : v;
}

inline void rk_error(char* err, int errlen, const char* msg) { std::snprintf(err, (size_t)errlen, "%s", msg); }
inline void rk_index_error(char* err, int errlen, const char* node, long long index, long long size) {
  std::snprintf(err, (size_t)errlen, "%s: index %lld is out of range for a dimension of size %lld", node, index, size);
}

}  // namespace

// Hidden: each graph's library links its own copy, and one library's must not answer for another's.
#ifdef RK_CONV_KERNELS
extern "C" __attribute__((visibility("hidden"))) void rk_conv_gemm_f32(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                                                                       const float* image, const RkConvWindow* window, float* panels, float* C,
                                                                       int64_t ldc, RkEpilogue epilogue) {
  rk_conv_gemm(M, N, K, A, lda, image, *window, panels, C, ldc, epilogue);
}
extern "C" __attribute__((visibility("hidden"))) void rk_channel_silu_rows(const void* ctx, int64_t m_lo, int64_t m_hi, int64_t n_lo, int64_t n_hi) {
  const RkChannelSiluRows& c = *static_cast<const RkChannelSiluRows*>(ctx);
  for (int64_t m = m_lo; m < m_hi; ++m) {
    float* row = c.rows + m * c.ldc;
    const float a = c.scale[m], b = c.shift[m];
#if defined(__AVX512F__)
    const __m512 av = _mm512_set1_ps(a), bv = _mm512_set1_ps(b);
    int64_t n = n_lo;
    for (; n + 16 <= n_hi; n += 16) _mm512_storeu_ps(row + n, rk_silu_lanes(_mm512_fmadd_ps(_mm512_loadu_ps(row + n), av, bv)));
    const __mmask16 rest = rk_lanes(0, n_hi - n);
    if (rest) _mm512_mask_storeu_ps(row + n, rest, rk_silu_lanes(_mm512_fmadd_ps(_mm512_maskz_loadu_ps(rest, row + n), av, bv)));
#else
    for (int64_t n = n_lo; n < n_hi; ++n) {
      const float v = row[n] * a + b;
      row[n] = v * (1.0f / (rk_expf(-v) + 1.0f));
    }
#endif
  }
}
#endif
#ifdef RK_WINOGRAD_KERNELS
extern "C" __attribute__((visibility("hidden"))) int rk_conv_winograd_f32(int64_t M, const float* A, int64_t lda, const float* image,
                                                                          const RkConvWindow* window, float* scratch, int64_t room, float* C,
                                                                          int64_t ldc, RkEpilogue epilogue) {
  return rk_winograd_pays(M, *window) && rk_conv_winograd(M, A, lda, image, *window, scratch, room, C, ldc, epilogue) ? 0 : 1;
}
#endif
#ifdef RK_FEW_CHANNELS_KERNELS
template <int S>
__attribute__((visibility("hidden"))) int rk_conv_few_channels_f32(int64_t M, const float* A, int64_t lda, const float* image,
                                                                   const RkConvWindow* window, float* C, int64_t ldc, RkEpilogue epilogue) {
#if defined(RK_FEW_CHANNELS_VECTORS)
  return rk_conv_few_channels<S>(M, A, lda, image, *window, C, ldc, epilogue) ? 0 : 1;
#else
  (void)M, (void)A, (void)lda, (void)image, (void)window, (void)C, (void)ldc, (void)epilogue;
  return 1;
#endif
}
template int rk_conv_few_channels_f32<RK_FEW_CHANNELS_KERNELS>(int64_t, const float*, int64_t, const float*, const RkConvWindow*, float*, int64_t,
                                                               RkEpilogue);
#endif
#ifdef RK_DEPTHWISE_KERNEL
// Hidden: each graph's library links its own copy.
template <int K, int S, RkActivation A>
__attribute__((visibility("hidden"))) int rk_depthwise_f32(int64_t images, const float* weights, const float* image, int64_t image_step,
                                                           const RkConvWindow* window, float* C, RkEpilogue epilogue, const RkChannelAffine* affine) {
#if defined(RK_DEPTHWISE_VECTORS)
  const RkConvWindow& d = *window;
  const bool taken = d.taps_h == K && d.taps_w == K && d.stride_h == S && d.stride_w == S && d.dilation_h == 1 && d.dilation_w == 1 &&
                     d.col_step == 1 && d.row_step == d.in_w;
#if !defined(__AVX512F__)
  if (d.in_w < 8) return 1;  // AVX2's windows of 8 columns lie in a row
#endif
  if (!taken) return 1;
  rk_depthwise_planes<K, S, A>(images, weights, image, image_step, d, C, epilogue, affine);
  return 0;
#else
  (void)images, (void)weights, (void)image, (void)image_step, (void)window, (void)C, (void)epilogue, (void)affine;
  return 1;
#endif
}
template int rk_depthwise_f32<RK_DEPTHWISE_KERNEL>(int64_t, const float*, const float*, int64_t, const RkConvWindow*, float*, RkEpilogue,
                                                   const RkChannelAffine*);
#endif
#ifdef RK_GROUPED_KERNEL
template <int G, int S>
__attribute__((visibility("hidden"))) int rk_grouped_conv_f32(int64_t images, const float* weights, const float* image, int64_t image_step,
                                                              const RkConvWindow* window, float* C, RkEpilogue epilogue, RkKeptPanels* packed,
                                                              const RkChannelAffine* affine) {
#if defined(__AVX512F__)
  const RkConvWindow& d = *window;
  int64_t pitch = 0, strip_rows = 0;
  if (d.channels % G != 0 || !rk_grouped_plan(d, S, &pitch, &strip_rows)) return 1;
  float* const to = reinterpret_cast<float*>(packed + 1);
  if (packed->source != weights) {
    rk_grouped_pack_weights<G>(d.channels, weights, 9, to);
    packed->source = weights;
  }
  rk_grouped_conv<G, S>(images, to, image, image_step, d, pitch, strip_rows, C, epilogue, affine);
  return 0;
#else
  (void)images, (void)weights, (void)image, (void)image_step, (void)window, (void)C, (void)epilogue, (void)packed, (void)affine;
  return 1;
#endif
}
template int rk_grouped_conv_f32<RK_GROUPED_KERNEL>(int64_t, const float*, const float*, int64_t, const RkConvWindow*, float*, RkEpilogue,
                                                    RkKeptPanels*, const RkChannelAffine*);
#endif
#ifdef RK_POOL_KERNELS
extern "C" __attribute__((visibility("hidden"))) int rk_max_pool_f32(int64_t images, const float* image, int64_t image_step,
                                                                     const RkConvWindow* window, float* out) {
#if defined(RK_POOL_VECTORS)
  const RkConvWindow& w = *window;
  const bool taken = w.dilation_h == 1 && w.dilation_w == 1 && w.stride_h >= 1 && (w.stride_w == 1 || w.stride_w == 2) && w.taps_h >= 1 &&
                     w.taps_w >= 1 && w.taps_w <= kRkPoolTaps && w.col_step == 1 && w.out_w >= 1 && w.out_w <= kRkPoolRowOutputs &&
                     w.plane % w.out_w == 0;
  if (!taken) return 1;
  if (w.stride_w == 1) rk_max_pool_planes<1>(images, image, image_step, w, out);
  else rk_max_pool_planes<2>(images, image, image_step, w, out);
  return 0;
#else
  (void)images, (void)image, (void)image_step, (void)window, (void)out;
  return 1;
#endif
}
#endif
#ifdef RK_GEMM_KERNELS
extern "C" __attribute__((visibility("hidden"))) void rk_matmul_f32(int ta, int tb, int64_t M, int64_t N, int64_t K, const float* a, int64_t lda,
                                                                    const float* b, int64_t ldb, float* C, int64_t ldc, float* panels,
                                                                    RkKeptPanels* kept) {
#if defined(__AVX512F__)
  if (kept && ta == RK_NO_TRANS) {  // B's panels as the kept region holds them
    const RkMatrix bm = tb == RK_TRANS ? RkMatrix{b, 1, ldb, K, N} : RkMatrix{b, ldb, 1, K, N};
    float* const packed = reinterpret_cast<float*>(kept + 1);
    if (kept->source != b) {
      rk_pack_matrix_panels(&bm, 0, (N + kRkPanelCols - 1) / kRkPanelCols, true, packed);
      kept->source = b;
    }
    rk_panel_gemm(M, N, K, a, lda, nullptr, nullptr, nullptr, 0, packed, RkOut{C, ldc, 1}, rk_full_panel_tile, true);
    return;
  }
  if (tb == RK_TRANS && ta == RK_NO_TRANS && M >= N) {
    // A linear layer over more rows than outputs (thousands of tokens, a batch of sequences): C = A (in place)
    // x W^T, W's rows packed into panels once (by 16 x 16 transposes) and read by every row of
    // A; stored as it is computed. Through C^T, each 8 x 32 block of C went out transposed, a
    // float at a time.
    const RkMatrix wt{b, 1, ldb, K, N};
    rk_panel_gemm(M, N, K, a, lda, rk_pack_matrix_panels, &wt, nullptr, 0, panels, RkOut{C, ldc, 1}, rk_full_panel_tile, true);
    return;
  }
  if (tb == RK_TRANS) {
    // A linear layer's x W^T: C^T [N x M] = B^T (W, rows ldb apart, read in place) x A^T, whose
    // panels are M's rows of A; stored transposed. A(m, k) = a[m ms + k ks].
    const RkMatrix at{a, ta == RK_TRANS ? lda : 1, ta == RK_TRANS ? 1 : lda, K, M};
    rk_panel_gemm(N, M, K, b, ldb, rk_pack_matrix_panels, &at, nullptr, 0, panels, RkOut{C, 1, ldc}, rk_full_panel_tile, true);
    return;
  }
  if (ta == RK_NO_TRANS) {  // C = A (in place) x B's panels, or B's rows in place (as a 1x1 conv)
    const RkMatrix bm{b, ldb, 1, K, N};
    const bool in_place = K >= 2 * M && N >= 2 * kRkPanelCols && rk_rows_in_place(ldb, K);
    rk_panel_gemm(M, N, K, a, lda, rk_pack_matrix_panels, &bm, in_place ? b : nullptr, ldb, panels, RkOut{C, ldc, 1}, rk_full_panel_tile, true);
    return;
  }
#endif
  (void)panels, (void)kept;
  rk_gemm(ta, tb, M, N, K, a, lda, b, ldb, C, ldc);
}
#endif
