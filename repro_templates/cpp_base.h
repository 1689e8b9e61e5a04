// reprokit generated code: what every unit of a graph compiled by the cpp backend shares with the
// GEMM and convolution kernels: standard headers, CBLAS, rk_gemm, the convolution's window,
// f16/bf16 conversions and NaN-propagating max/min. Part of cpp_prelude.h; the kernel headers
// include it too, so that each compiles on its own (the guard keeps one copy).
#ifndef RK_CPP_BASE_H
#define RK_CPP_BASE_H
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <unistd.h>
#include <limits>
#include <vector>

// Without AVX-512, GCC notes that a function returning a 16-float vector has another ABI than
// with it (-Wpsabi). Every such function here is internal to its unit (anonymous namespace), so
// no call crosses that boundary.
#pragma GCC diagnostic ignored "-Wpsabi"

// CBLAS (OpenBLAS): the matmul and convolution kernels call it. Declared here rather than
// included, so the generated code needs no BLAS headers.
extern "C" {
void cblas_sgemm(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb, float beta,
                 float* c, int ldc);
void cblas_dgemm(int order, int trans_a, int trans_b, int m, int n, int k, double alpha, const double* a, int lda, const double* b, int ldb,
                 double beta, double* c, int ldc);
void cblas_sgemv(int order, int trans, int m, int n, float alpha, const float* a, int lda, const float* x, int incx, float beta, float* y, int incy);
void cblas_dgemv(int order, int trans, int m, int n, double alpha, const double* a, int lda, const double* x, int incx, double beta, double* y,
                 int incy);
void openblas_set_num_threads(int);
}
#ifdef _OPENMP
#include <omp.h>
#endif
// A vector loop with a long body (a depthwise conv's nine taps an output, a conv epilogue) in the
// machine's widest vectors: GCC's tuning for AVX-512 CPUs keeps 8-float vectors unless a loop asks
// for 16. The taps of a 3x3 depthwise conv over planes of 28 x 28 to 112 x 112 ran in 0.8-0.9x the
// time with 16; efficientnet_b0, whose conv epilogues are SiLUs, in 0.95-0.97x.
#if defined(_OPENMP) && defined(__AVX512F__)
#define RK_SIMD_WIDE _Pragma("omp simd simdlen(16)")
#elif defined(_OPENMP)
#define RK_SIMD_WIDE _Pragma("omp simd")
#else
#define RK_SIMD_WIDE
#endif
// The machines the max pool kernel is written for (cpp_pool.h): AVX-512, and AVX2. The generated
// code tests it to choose between the kernel and its own rows.
#if defined(__AVX512F__) || defined(__AVX2__)
#define RK_POOL_VECTORS 1
#endif
// The machines the few-channel conv is written for (cpp_conv_few_channels.h): AVX-512, and AVX2
// with FMA.
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#define RK_FEW_CHANNELS_VECTORS 1
#endif
// The machines the depthwise conv kernel is written for (cpp_conv_depthwise.h): AVX-512, and AVX2
// with FMA. The generated code tests it to choose between the kernel and its own direct conv.
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#define RK_DEPTHWISE_VECTORS 1
#endif

// Where a convolution's panels read: one image's channels of one group, and the window.
struct RkConvWindow {
  int64_t channels, taps_h, taps_w;  // input channels of the group, kernel taps
  int64_t in_h, in_w, out_w, plane;  // input rows, columns; output columns, pixels
  int64_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  int64_t channel_step, row_step, col_step;  // input strides (elements)
};
// What runs on each block of C once the GEMM has finished it (a conv's batch norm, bias, clamp,
// residual add): rows [m_lo, m_hi), columns [n_lo, n_hi), on the thread that computed the block,
// while it is still in that core's cache. A separate pass over the whole output read it back from
// L3 (mobilenet_v2: 16 MB of 1x1-conv outputs a run; 7% of its time). run == nullptr: none.
struct RkEpilogue {
  void (*run)(const void* ctx, int64_t m_lo, int64_t m_hi, int64_t n_lo, int64_t n_hi);
  const void* ctx;
};
// A conv's epilogue where it is a per-channel affine map then a clamp (a bias, a batch norm, a
// relu or relu6): out = min(hi, max(lo, sum x scale[c] + shift[c])) for channel c, applied by the
// kernel to its sums in registers before it stores them. lo, hi: -inf, inf where there is no
// clamp; a NaN sum stays NaN, as the generated clamp and relu keep it. relu: lo is a relu's 0,
// which makes -0 +0 (a clamp keeps -0).
struct RkChannelAffine {
  const float* scale;
  const float* shift;
  float lo, hi;
  bool relu;
};
// What a depthwise kernel applies to each value after its RkChannelAffine: nothing more, or a
// SiLU, x / (1 + exp(-x)) (efficientnet's batch norm then SiLU; lo and hi then unbounded). A
// template argument of the kernel: each is a kernels unit of its own.
enum class RkActivation { none, silu };
// Rows m of a conv kernel's output blocks (RkEpilogue's m and n): row m at rows + m ldc, of the
// channel whose scale and shift are scale[m] and shift[m].
struct RkChannelSiluRows {
  float* rows;
  int64_t ldc;
  const float* scale;
  const float* shift;
};
// The RkEpilogue run of a conv whose epilogue is a per-channel affine map then a SiLU
// (efficientnet's batch norm and SiLU), ctx an RkChannelSiluRows: each v of the block becomes
// silu(v scale + shift), x / (1 + exp(-x)) as the generated decomposition computes it. In the conv
// kernels unit (RK_CONV_KERNELS), with AVX-512's rk_silu_lanes where the machine has it.
extern "C" void rk_channel_silu_rows(const void* ctx, int64_t m_lo, int64_t m_hi, int64_t n_lo, int64_t n_hi);
// Kernel timing (rk_graph_profile, reprokit run --profile): set by the entry point for the runs it
// times, null otherwise. Each kernel of a unit calls it with its index in the unit as it starts,
// and the unit with -1 as it returns: a load and a branch a kernel when not timing.
extern "C" __attribute__((visibility("hidden"))) void (*rk_profile_hook)(int kernel);
#define RK_PROFILE(k)                                                        \
  do {                                                                       \
    if (__builtin_expect(rk_profile_hook != nullptr, 0)) rk_profile_hook(k); \
  } while (0)
// C[M x N] (rows ldc apart) = A[M x K] (rows lda apart) x im2col(image) through panels: scratch
// for all of them (N rounded up to 32, by K). See cpp_conv_gemm.h. `epilogue` runs on each block
// of C as it is finished.
extern "C" void rk_conv_gemm_f32(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* image, const RkConvWindow* window,
                                 float* panels, float* C, int64_t ldc, RkEpilogue epilogue);
// The same conv, 3x3 at stride 1, by Winograd F(2x2, 3x3) (cpp_conv_winograd.h), on as many
// threads as its buffers fit in `scratch` (`room` floats), each thread running the epilogue on the
// pixels it computed once it has computed them all. Returns nonzero, computing nothing, where it
// does not pay or does not fit.
extern "C" int rk_conv_winograd_f32(int64_t M, const float* A, int64_t lda, const float* image, const RkConvWindow* window, float* scratch,
                                    int64_t room, float* C, int64_t ldc, RkEpilogue epilogue);
// The same conv of 1 to 8 input channels a group, 16 on AVX2 (a network's first, regnet's
// groups of 8) without im2col, at stride S (1 or 2), on AVX-512 or AVX2 (cpp_conv_few_channels.h). Returns
// nonzero, computing nothing, for a window it does not take or on a machine without
// RK_FEW_CHANNELS_VECTORS. Each S is a kernels unit of its own (most graphs need one: both were
// 1.85 s of compile, one 1.2).
template <int S>
int rk_conv_few_channels_f32(int64_t M, const float* A, int64_t lda, const float* image, const RkConvWindow* window, float* C, int64_t ldc,
                             RkEpilogue epilogue);
// A depthwise conv (window->channels channels in and out, one weight plane each; K x K taps at
// stride S without dilation, K 3, 5 or 7 and S 1 or 2; each input plane contiguous) over `images`
// images image_step floats apart, on AVX-512 or AVX2 with FMA (cpp_conv_depthwise.h): C[(n channels + c) plane + q]
// for output pixel q of channel c of image n, without bias. `epilogue` runs on each group of
// planes (rows m = n channels + c) as it is finished; `affine` (or nullptr), then A, on the sums
// before they are stored. Returns nonzero, computing nothing, for a window it does not take or on
// a machine without RK_DEPTHWISE_VECTORS. Each (K, S, A) is a kernels unit of its own.
template <int K, int S, RkActivation A>
int rk_depthwise_f32(int64_t images, const float* weights, const float* image, int64_t image_step, const RkConvWindow* window, float* C,
                     RkEpilogue epilogue, const RkChannelAffine* affine);
// 2-D max pooling of `images` images (image_step floats apart; window->channels planes each,
// channel_step apart) on AVX-512 or AVX2 (cpp_pool.h): out[(n channels + c) plane + q] for output
// pixel q, as the generated pool computes it (the first maximum and the first NaN win; -inf where
// a window is all padding). Returns nonzero, computing nothing, for a window it does not take or
// on a machine without RK_POOL_VECTORS.
extern "C" int rk_max_pool_f32(int64_t images, const float* image, int64_t image_step, const RkConvWindow* window, float* out);
// B's panels packed once and kept across runs, for a B that is a frozen input (a model's weight:
// the same tensor, unchanged, on every run): the header of a slice of the workspace's kept region,
// which the caller zeroes before the first run. `source` is the B the panels following it were
// packed from (nullptr before the first run); a call with another B packs them again.
struct alignas(64) RkKeptPanels {
  const float* source;
};
// C[M x N] (rows ldc apart) = A x B given as to rk_gemm (ta/tb: RK_TRANS for an operand stored
// transposed), on the panel GEMM (cpp_panel_gemm.h) where it has its AVX-512 kernel; else rk_gemm. panels: room
// for K x (M rounded up to 32) floats when tb is RK_TRANS, else K x (N rounded up to 32). kept:
// nullptr, or room for an RkKeptPanels and K x (N rounded up to 32) floats where the GEMM packs B
// (ta RK_NO_TRANS): B's panels are packed there once, not on every
// call, and `panels` is not used (it may be nullptr).
extern "C" void rk_matmul_f32(int ta, int tb, int64_t M, int64_t N, int64_t K, const float* a, int64_t lda, const float* b, int64_t ldb, float* C,
                              int64_t ldc, float* panels, RkKeptPanels* kept);
// A grouped conv of G = 4, 8 or 16 channels a group, as many out as in (window->channels in all),
// 3x3 taps at stride S without dilation, each input plane contiguous, over `images` images
// image_step floats apart, on AVX-512 (cpp_conv_grouped.h): C[(n channels + c) plane + q] for
// output pixel q of channel c of image n, without bias. `epilogue` runs on each block of planes
// (rows m = n channels + c) as it is finished; `affine` (or nullptr), on the sums before they are
// stored. packed: an RkKeptPanels then room for the weights
// in the kernel's order (channels rounded up to 16, x G x 9 floats), packed there from `weights`
// where its source is not `weights`. Returns nonzero, computing nothing, for a window it does not
// take or on a machine without AVX-512. Each (G, S) is a kernels unit of its own.
template <int G, int S>
int rk_grouped_conv_f32(int64_t images, const float* weights, const float* image, int64_t image_step, const RkConvWindow* window, float* C,
                        RkEpilogue epilogue, RkKeptPanels* packed, const RkChannelAffine* affine);

namespace {

// The machine's own vector (16 floats with AVX-512, else 8): the GEMMs' accumulators
// (cpp_panel_gemm.h) and the one-row GEMM's sums (rk_gemv_block).
#if defined(__AVX512F__)
typedef float rk_fvec __attribute__((vector_size(64), aligned(4), may_alias));
#else
typedef float rk_fvec __attribute__((vector_size(32), aligned(4), may_alias));
#endif
constexpr int kRkLanes = (int)(sizeof(rk_fvec) / sizeof(float));

enum { RK_ROW_MAJOR = 101, RK_NO_TRANS = 111, RK_TRANS = 112 };

// Which thread of a team this is, and a team of at most `cap` threads (one without OpenMP):
// for loops whose threads each take a slice of scratch planned for `cap`.
inline int rk_thread_num() {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}
inline int rk_threads_at_most(int cap) {
#ifdef _OPENMP
  return omp_get_max_threads() < cap ? omp_get_max_threads() : cap;
#else
  (void)cap;
  return 1;
#endif
}

// One thread pool: OpenBLAS runs single-threaded and the generated code spreads GEMMs over
// OpenMP's threads (batches side by side, one large GEMM in slabs), as it spreads its own loops.
// Two pools on the same cores (OpenBLAS's pthreads spinning in sched_yield after each GEMM,
// libgomp's after each loop) took each other's cores.
inline void rk_blas_single_threaded() {
  static const bool once = (openblas_set_num_threads(1), true);
  (void)once;
}
inline void rk_gemv1(int trans, int64_t m, int64_t n, const float* a, int64_t lda, const float* x, int64_t incx, float* y) {
  cblas_sgemv(RK_ROW_MAJOR, trans, (int)m, (int)n, 1.0f, a, (int)lda, x, (int)incx, 0.0f, y, 1);
}
inline void rk_gemv1(int trans, int64_t m, int64_t n, const double* a, int64_t lda, const double* x, int64_t incx, double* y) {
  cblas_dgemv(RK_ROW_MAJOR, trans, (int)m, (int)n, 1.0, a, (int)lda, x, (int)incx, 0.0, y, 1);
}
inline void rk_gemm1(int ta, int tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                     int64_t ldc) {
  cblas_sgemm(RK_ROW_MAJOR, ta, tb, (int)m, (int)n, (int)k, 1.0f, a, (int)lda, b, (int)ldb, 0.0f, c, (int)ldc);
}
inline void rk_gemm1(int ta, int tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b, int64_t ldb, double* c,
                     int64_t ldc) {
  cblas_dgemm(RK_ROW_MAJOR, ta, tb, (int)m, (int)n, (int)k, 1.0, a, (int)lda, b, (int)ldb, 0.0, c, (int)ldc);
}
// y[i] = w[i, :] . x for n rows of k floats, ldw apart: 12 rows at a time, each summed in a
// vector of 16 lanes. A classifier's weights come from memory, and 12 rows read side by side kept
// more of it in flight than sgemv did (1000 rows of 1280, cold, one thread on an AMD EPYC: 290 ->
// 192-197 us; warm in L3, 62 -> 64). GCC's vector extensions, not intrinsics: this header is in
// every unit, and the intrinsics header alone is 0.23 s of a unit's compile. The sums are the
// machine's own vector: without AVX-512, 12 rows of 16-float sums are 24 of AVX2's 16 registers,
// and GCC kept them on the stack (the same classifier warm in L3 on a Zen 3: 317 us, with
// 8-float sums 99).
template <int R> inline void rk_gemv_block(int64_t k, const float* w, int64_t ldw, const float* x, float* y) {
  rk_fvec s[R] = {};
  const int64_t kv = k / kRkLanes * kRkLanes;
  for (int64_t j = 0; j < kv; j += kRkLanes) {
    const rk_fvec xv = *(const rk_fvec*)(x + j);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) s[r] += *(const rk_fvec*)(w + r * ldw + j) * xv;
  }
  for (int r = 0; r < R; ++r) {
    float t = 0.0f;
    for (int l = 0; l < kRkLanes; ++l) t += s[r][l];
    for (int64_t j = kv; j < k; ++j) t += w[r * ldw + j] * x[j];
    y[r] = t;
  }
}
inline void rk_gemv_rows(int64_t n, int64_t k, const float* w, int64_t ldw, const float* x, float* y) {
  int64_t i = 0;
  for (; i + 12 <= n; i += 12) rk_gemv_block<12>(k, w + i * ldw, ldw, x, y + i);
  for (; i < n; ++i) rk_gemv_block<1>(k, w + i * ldw, ldw, x, y + i);
}
inline void rk_gemv_rows(int64_t n, int64_t k, const double* w, int64_t ldw, const double* x, double* y) {
  rk_gemv1(RK_NO_TRANS, n, k, w, ldw, x, 1, y);
}
// One row of output (a linear layer on one sample: a classifier's 1280 -> 1000) as a matrix-vector
// product, B read once along its rows: sgemm first copied all of B into its packed panels for the
// one row that used them (mobilenet_v2's classifier, one thread: 0.3 ms of its 8.5). Only where
// B's rows are as long as its leading dimension allows, which CBLAS checks.
template <class T>
inline void rk_row_gemm1(int ta, int tb, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc) {
  const int64_t inc_a = ta == RK_TRANS ? lda : 1;
  if (tb == RK_TRANS && ldb >= k && inc_a == 1) rk_gemv_rows(n, k, b, ldb, a, c);         // B^T stored, A's row contiguous
  else if (tb == RK_TRANS && ldb >= k) rk_gemv1(RK_NO_TRANS, n, k, b, ldb, a, inc_a, c);  // B^T stored: n rows of k
  else if (tb == RK_NO_TRANS && ldb >= n) rk_gemv1(RK_TRANS, k, n, b, ldb, a, inc_a, c);  // B stored: k rows of n
  else rk_gemm1(ta, tb, 1, n, k, a, lda, b, ldb, c, ldc);
}
// Below this many FLOPs a GEMM runs on one thread, unless its operands hold this many floats:
// then it waits on memory more than it computes (a classifier's row against 440 x 1000 weights,
// a squeeze-excite's 1x1 convs on one pixel), and a second thread's reads halve the wait.
constexpr double kRkGemmParallelFlops = 1 << 21;
constexpr int64_t kRkGemmParallelFloats = 1 << 15;
inline bool rk_gemm_worth_threads(int64_t m, int64_t n, int64_t k) {
  return 2.0 * (double)m * (double)n * (double)k >= kRkGemmParallelFlops || m * k + k * n >= kRkGemmParallelFloats;
}
// C = A x B (row-major; ta/tb: RK_TRANS when the operand is stored transposed). Worth more than
// kRkGemmParallelFlops, it is cut along its longer output side into one slab per thread
// (multiples of 16, the GEMM kernels' block), each a single-threaded GEMM.
template <class T>
inline void rk_gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc) {
  rk_blas_single_threaded();
#ifdef _OPENMP
  if (rk_gemm_worth_threads(m, n, k) && omp_get_max_threads() > 1 && !omp_in_parallel()) {
    const bool by_columns = n >= m;
    const int64_t length = by_columns ? n : m;
#pragma omp parallel
    {
      const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
      const int64_t chunk = ((length + nt - 1) / nt + 15) / 16 * 16, lo = t * chunk, hi = lo + chunk < length ? lo + chunk : length;
      if (lo < hi) {
        if (by_columns && m == 1) rk_row_gemm1(ta, tb, hi - lo, k, a, lda, tb == RK_TRANS ? b + lo * ldb : b + lo, ldb, c + lo, ldc);
        else if (by_columns) rk_gemm1(ta, tb, m, hi - lo, k, a, lda, tb == RK_TRANS ? b + lo * ldb : b + lo, ldb, c + lo, ldc);
        else rk_gemm1(ta, tb, hi - lo, n, k, ta == RK_TRANS ? a + lo : a + lo * lda, lda, b, ldb, c + lo * ldc, ldc);
      }
    }
    return;
  }
#endif
  if (m == 1 && n > 0 && k > 0) rk_row_gemm1(ta, tb, n, k, a, lda, b, ldb, c, ldc);
  else rk_gemm1(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
}

#define RK_HD
inline uint32_t rk_bits_of(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}
inline float rk_float_of(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
#include "rk_half.h"

// NaN-propagating max/min, as PyTorch's maximum/minimum/amax/amin.
template <class T> inline T rk_max(T a, T b) { return (a != a || b != b) ? (a != a ? a : b) : (a > b ? a : b); }
template <class T> inline T rk_min(T a, T b) { return (a != a || b != b) ? (a != a ? a : b) : (a < b ? a : b); }

// The epilogue that calls f(m_lo, m_hi, n_lo, n_hi) (a lambda of the kernel, which outlives the call).
template <class F> inline RkEpilogue rk_epilogue_of(const F& f) {
  return {[](const void* ctx, int64_t m_lo, int64_t m_hi, int64_t n_lo, int64_t n_hi) { (*static_cast<const F*>(ctx))(m_lo, m_hi, n_lo, n_hi); }, &f};
}

}  // namespace
#endif  // RK_CPP_BASE_H
