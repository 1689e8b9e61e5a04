// Linear-algebra kernels. On the CPU, matmul and conv2d call BLAS (CBLAS sgemm/dgemm; f16/bf16
// through f32 with PyTorch's rounding on store): operands whose last two dims are row- or
// column-major go to BLAS as they are (a transposed weight is BLAS's Trans flag, not a copy);
// others are packed first. Float GEMMs worth threads run on the prelude's own panel GEMM
// (cpp_panel_gemm.h) instead: a float conv2d (cpp_conv_gemm.h: im2col into panels, weights
// read in place), and a float matmul whose operands it reads in place (rk_matmul_f32); f64,
// f16 and bf16 on BLAS. When each output of a conv reads only a few inputs (depthwise), a
// direct kernel over whole planes is faster. On CUDA both are generated loops (no cuBLAS
// measured yet).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

#include "codegen.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/op_semantics.h"

namespace reprokit::codegen_detail {

namespace {

constexpr double kGemmParallelFlops = 1 << 21;  // the prelude's kRkGemmParallelFlops: a GEMM below it runs on one thread
constexpr int64_t kBatchThreads = 8;            // threads sharing out a batched matmul's products, at most

// How BLAS reads one matrix operand of shape [..., R, C] (R rows, C columns).
struct BlasOperand {
  bool pack = false;   // copy to a contiguous (row-major) buffer first
  bool trans = false;  // column-major: BLAS's Trans flag
  int64_t ld = 0;      // leading dimension
};

BlasOperand blas_layout(const Access& a, int64_t rows, int64_t cols, bool low_precision) {
  const int64_t sr = a.strides[a.strides.size() - 2], sc = a.strides.back();
  if (!low_precision && (sc == 1 || cols == 1) && (sr >= cols || rows == 1)) return {false, false, std::max<int64_t>({sr, cols, 1})};
  if (!low_precision && (sr == 1 || rows == 1) && (sc >= rows || cols == 1)) return {false, true, std::max<int64_t>({sc, rows, 1})};
  return {true, false, std::max<int64_t>(cols, 1)};
}

}  // namespace

// Declares off, lo and hi for kernel column j: output columns ox in [lo, hi) read input column
// ox * stride + off inside [0, in_w); the rest read padding. 0 <= lo <= hi <= out_w.
std::string valid_columns(const Window& win, int64_t in_w, int64_t out_w) {
  return fmt::format(
      "const int64_t off = j * {} - {}, lo = rk_min<int64_t>({}, off >= 0 ? 0 : (-off + {} - 1) / {}), hi = rk_max<int64_t>(lo, rk_min<int64_t>({}, "
      "off >= {} ? 0 : ({} - 1 - off) / {} + 1));\n",
      win.dilation[1], win.padding[1], out_w, win.stride[1], win.stride[1], out_w, in_w, in_w, win.stride[1]);
}

bool direct_conv(const Shape& weight_shape) { return weight_shape[1] == 1 || weight_shape[1] * weight_shape[2] * weight_shape[3] < 8; }

std::string Codegen::matmul_kernel(int id) {
  const Node& n = g_.node(id);
  int a = n.operands[0].value, b = n.operands[1].value;
  const Shape &as = g_.node(a).type.shape, &bs = g_.node(b).type.shape, &os = n.type.shape;
  const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  Shape batch(os.begin(), os.end() - 2);
  const int64_t nb = numel(batch);
  const DType dt = n.type.dtype;
  const char* ct = compute_type(dt);
  // Batch offsets of an operand as index expressions over the batch index `bi`.
  auto batch_off = [&](const Access& acc, const Shape& shape) {
    Access bacc = acc;  // every dim but the matrix's two (a matmul's operands have both)
    bacc.strides.resize(std::max<size_t>(acc.strides.size(), 2) - 2);
    return index_of(bacc, Shape(shape.begin(), shape.end() - 2), batch, "bi");
  };
  Access aa = access(a), ba = access(b);
  if (!target_.blas) {  // a generated loop: one output row per thread
    std::string s = fmt::format("  {{\n  const int64_t M = {}, K = {}, N = {};\n", M, K, N);
    s += loop("bm", nb * M, N * K) + " {\n    const int64_t bi = bm / M, m = bm % M;\n";
    s += fmt::format("    const int64_t ao = {} + m * {}, bo = {};\n", batch_off(aa, as), aa.strides[aa.strides.size() - 2], batch_off(ba, bs));
    s += fmt::format("    for (int64_t j = 0; j < N; ++j) {{\n      {} acc = ({})0;\n", ct, ct);
    s += fmt::format("      for (int64_t k = 0; k < K; ++k) acc += ({}){} * ({}){};\n", ct,
                     load_expr(aa.dtype, ptr(aa), fmt::format("ao + k * {}", aa.strides.back())), ct,
                     load_expr(ba.dtype, ptr(ba), fmt::format("bo + k * {} + j * {}", ba.strides[ba.strides.size() - 2], ba.strides.back())));
    s += fmt::format("      {}[(bi * M + m) * N + j] = {};\n    }}\n  }}\n  }}\n", buf(id),
                     store_value(dt, perturbs(id) ? perturb_open(id) + "acc)" : "acc"));
    return s;
  }
  const bool low = dt == DType::f16 || dt == DType::bf16;
  const char* blas_t = dt == DType::f64 ? "double" : "float";
  // x [batch..., M, K] @ w [K, N] (a linear layer): one GEMM over batch * M rows when A's batch
  // and row dims walk as one dim and B is the same for every batch.
  int64_t rows = M, batches = nb;
  bool b_shared = true;
  for (size_t d = 0; d + 2 < ba.strides.size(); ++d) b_shared &= ba.strides[d] == 0 || bs[d] == 1;
  if (nb > 1 && b_shared && as.size() == os.size()) {
    Shape lead(as.begin(), as.end() - 1), lead_strides(aa.strides.begin(), aa.strides.end() - 1);
    if (auto one = view_strides(lead, lead_strides, {nb * M})) {
      rows = nb * M;
      batches = 1;
      aa.strides = {(*one)[0], aa.strides.back()};
      ba.strides = {ba.strides[ba.strides.size() - 2], ba.strides.back()};
    }
  }
  BlasOperand la = blas_layout(aa, rows, K, low), lb = blas_layout(ba, K, N, low);
  std::string s = "  {\n";
  // Packed operands: every batch of the operand, contiguous, in the BLAS type.
  auto pack = [&](const char* name, int v, const Access& acc, const Shape& shape) {
    const int64_t count = numel(shape);
    s += scratch(name, blas_t, count);
    s += loop("p", count, 1) + fmt::format(" {}[p] = {};\n", name, load(v, blas_t, shape, "p"));
    (void)acc;
  };
  if (la.pack) pack("pa", a, aa, as);
  if (lb.pack) pack("pb", b, ba, bs);

  std::string a_ptr = la.pack ? "pa" : ptr(aa), b_ptr = lb.pack ? "pb" : ptr(ba);
  // Offsets of batch `bi` in each operand: through its strides, or in its packed copy.
  auto offset = [&](const Access& acc, const Shape& shape, bool packed, int64_t matrix) {
    if (batches == 1) return packed ? std::string("0") : std::to_string(acc.offset);
    Shape bshape(shape.begin(), shape.end() - 2);
    if (!packed) return batch_off(acc, shape);
    return fmt::format("({}) * {}", index_of(Access{-1, dt, 0, contiguous_strides(bshape)}, bshape, batch, "bi"), matrix);
  };
  std::string a_off = offset(aa, as, la.pack, M * K), b_off = offset(ba, bs, lb.pack, K * N);
  // The result: straight into the output buffer, or through f32 for f16/bf16.
  std::string c_ptr = buf(id);
  if (low) {
    s += scratch("pc", "float", numel(os));
    c_ptr = "pc";
  }
  // Several batches (attention's heads): side by side, each a single-threaded GEMM; one: rk_gemm
  // cuts it into slabs for the threads.
  const std::string args = fmt::format("{}, {}, {}, {}, {}, ({}*){} + {}, {}, ({}*){} + {}, {}, ({}*){} + bi * {}, {}",
                                       la.trans ? "RK_TRANS" : "RK_NO_TRANS", lb.trans ? "RK_TRANS" : "RK_NO_TRANS", rows, N, K, blas_t, a_ptr, a_off,
                                       la.ld, blas_t, b_ptr, b_off, lb.ld, blas_t, c_ptr, rows * N, std::max<int64_t>(N, 1));
  // A float GEMM worth threads whose operands the panel GEMM reads in place (a linear layer's
  // transposed weight, or a row-major A) runs on it: it does not depend on which kernels
  // OpenBLAS picked (cpp_panel_gemm.h: rk_matmul_f32). Not with fewer than 16 rows or columns
  // (a classifier's single row): there its 8 x 32 blocks are mostly padding, and it took
  // 1.1-1.5x OpenBLAS's time (1 to 8 rows of 1280 -> 1000).
  const bool panel_shape = dt == DType::f32 && (lb.trans || !la.trans) && std::min(rows, N) >= 16;
  const bool panel_gemm = panel_shape && batches == 1 && 2.0 * double(rows) * double(N) * double(K) >= kGemmParallelFlops;
  // A frozen B (a model's weight; A read in place): its panels packed once into the kept region,
  // and C computed as A x B even where it has fewer rows than columns (a linear layer's x W^T over
  // a few hundred tokens), which without kept panels goes as C^T = W x^T to pack the smaller
  // operand. Packing its 9.4 MB weights on every run was a quarter of each of convnext_tiny's
  // last-stage matmuls; BERT's six linear layers as C^T (512 rows) were 2-7% slower than on kept
  // panels, each block of C stored transposed.
  const bool keep_b = panel_gemm && frozen(ba.base) && !lb.pack && !la.trans;
  // Batches of float matrices the panel GEMM reads in place (attention's heads: Q K^T, P V),
  // each on one thread with panels of its own: OpenBLAS copied both operands of every 128 x 128
  // x 64 product into its own panels and ran BERT's at half the rate the panel GEMM reaches.
  const bool batch_panels = panel_shape && batches > 1 && target_.openmp;
  if (batch_panels) {
    const int64_t room = K * ((std::max(rows, N) + 31) / 32 * 32), slots = std::min(batches, kBatchThreads);
    s += scratch("mp", "float", slots * room);
    if (double(batches) * double(rows) * double(N) * double(K) >= double(int64_t{1} << 17))
      s += fmt::format("  #pragma omp parallel for schedule(static) num_threads(rk_threads_at_most({}))\n", slots);
    s += fmt::format("  for (int64_t bi = 0; bi < {}; ++bi) rk_matmul_f32({}, mp + rk_thread_num() * {}, nullptr);\n", batches, args, room);
  } else if (batches > 1) s += loop("bi", batches, rows * N * K) + fmt::format(" {{ rk_blas_single_threaded(); rk_gemm1({}); }}\n", args);
  else if (panel_gemm) {
    // Kept panels need no scratch: the GEMM reads them where they lie.
    if (keep_b) s += kept("kb", 64 + K * ((N + 31) / 32 * 32) * 4);  // RkKeptPanels (64 bytes), then every panel of B
    else s += scratch("mp", "float", K * (((lb.trans ? rows : N) + 31) / 32 * 32));
    s += fmt::format("  {{ const int64_t bi = 0; rk_matmul_f32({}, {}); }}\n", args, keep_b ? "nullptr, (RkKeptPanels*)kb" : "mp, nullptr");
  } else s += fmt::format("  {{ const int64_t bi = 0; rk_gemm({}); }}\n", args);
  if (low || perturbs(id)) {
    std::string v = low ? "pc[i]" : fmt::format("{}[i]", buf(id));
    if (perturbs(id)) v = perturb_open(id) + v + ")";
    s += loop("i", numel(os), 1, true) + fmt::format(" {}[i] = {};\n", buf(id), store_value(dt, v));
  }
  return s + "  }\n";
}

// Direct convolution (CUDA): one (batch, output channel) plane per iteration of the outer loop.
std::string Codegen::conv2d_direct(int id) {
  const Node& n = g_.node(id);
  int x = n.operands[0].value, w = n.operands[1].value;
  const Shape &xs = g_.node(x).type.shape, &ws = g_.node(w).type.shape, &os = n.type.shape;
  Window win = window_of(n, &ws[2]);
  int64_t groups = attr_int(n, "groups"), cg = ws[1], og = os[1] / groups;
  const char* ct = compute_type(n.type.dtype);
  std::string bias = n.operands.size() > 2 ? load(n.operands[2].value, ct, {os[1]}, "oc") : fmt::format("({})0", ct);
  std::string v = perturbs(id) ? perturb_open(id) + "acc)" : "acc";
  std::string s = loop("nc", os[0] * os[1], os[2] * os[3] * cg * ws[2] * ws[3]) + " {\n";
  s += fmt::format("    const int64_t nb = nc / {0}, oc = nc % {0}, c0 = (oc / {1}) * {2};\n", os[1], og, cg);
  s += fmt::format("    for (int64_t oy = 0; oy < {}; ++oy) for (int64_t ox = 0; ox < {}; ++ox) {{\n", os[2], os[3]);
  s += fmt::format("      {} acc = {};\n", ct, bias);
  s += fmt::format("      for (int64_t ic = 0; ic < {}; ++ic) for (int64_t i = 0; i < {}; ++i) {{\n", cg, ws[2]);
  s += fmt::format("        const int64_t y = oy * {} - {} + i * {}; if (y < 0 || y >= {}) continue;\n", win.stride[0], win.padding[0],
                   win.dilation[0], xs[2]);
  s += fmt::format("        for (int64_t j = 0; j < {}; ++j) {{\n", ws[3]);
  s += fmt::format("          const int64_t xx = ox * {} - {} + j * {}; if (xx < 0 || xx >= {}) continue;\n", win.stride[1], win.padding[1],
                   win.dilation[1], xs[3]);
  s += fmt::format("          acc += {} * {};\n", load4(x, ct, "nb", "c0 + ic", "y", "xx"), load4(w, ct, "oc", "ic", "i", "j"));
  s += "        }\n      }\n";
  s += fmt::format("      {}[((nb * {} + oc) * {} + oy) * {} + ox] = {};\n", buf(id), os[1], os[2], os[3], store_value(n.type.dtype, v));
  s += "    }\n  }\n";
  return s;
}

// conv3d: one (batch, output channel) volume per iteration of the outer loop, each output
// summing its taps in (input channel, kD, kH, kW) order, then adding the bias.
std::string Codegen::conv3d_kernel(int id) {
  const Node& n = g_.node(id);
  int x = n.operands[0].value, w = n.operands[1].value;
  const Shape &xs = g_.node(x).type.shape, &ws = g_.node(w).type.shape, &os = n.type.shape;
  const Window win = window_of(n, &ws[2]);
  int64_t groups = attr_int(n, "groups"), cg = ws[1], og = os[1] / groups;
  const char* ct = compute_type(n.type.dtype);
  std::string acc = fmt::format("({})0", ct);
  std::string v = n.operands.size() > 2 ? fmt::format("acc + {}", load(n.operands[2].value, ct, {os[1]}, "oc")) : "acc";
  if (perturbs(id)) v = perturb_open(id) + v + ")";
  std::string s = loop("nc", os[0] * os[1], os[2] * os[3] * os[4] * cg * ws[2] * ws[3] * ws[4]) + " {\n";
  s += fmt::format("    const int64_t nb = nc / {0}, oc = nc % {0}, c0 = (oc / {1}) * {2};\n", os[1], og, cg);
  s += fmt::format("    for (int64_t oz = 0; oz < {}; ++oz) for (int64_t oy = 0; oy < {}; ++oy) for (int64_t ox = 0; ox < {}; ++ox) {{\n", os[2],
                   os[3], os[4]);
  s += fmt::format("      {} acc = {};\n", ct, acc);
  s += fmt::format("      for (int64_t ic = 0; ic < {}; ++ic) for (int64_t l = 0; l < {}; ++l) {{\n", cg, ws[2]);
  s += fmt::format("        const int64_t z = oz * {} - {} + l * {}; if (z < 0 || z >= {}) continue;\n", win.stride[0], win.padding[0],
                   win.dilation[0], xs[2]);
  s += fmt::format("        for (int64_t i = 0; i < {}; ++i) {{\n", ws[3]);
  s += fmt::format("          const int64_t y = oy * {} - {} + i * {}; if (y < 0 || y >= {}) continue;\n", win.stride[1], win.padding[1],
                   win.dilation[1], xs[3]);
  s += fmt::format("          for (int64_t j = 0; j < {}; ++j) {{\n", ws[4]);
  s += fmt::format("            const int64_t xx = ox * {} - {} + j * {}; if (xx < 0 || xx >= {}) continue;\n", win.stride[2], win.padding[2],
                   win.dilation[2], xs[4]);
  s += fmt::format("            acc += {} * {};\n", load_n(x, ct, {"nb", "c0 + ic", "z", "y", "xx"}), load_n(w, ct, {"oc", "ic", "l", "i", "j"}));
  s += "          }\n        }\n      }\n";
  s +=
      fmt::format("      {}[nc * {} + (oz * {} + oy) * {} + ox] = {};\n", buf(id), os[2] * os[3] * os[4], os[3], os[4], store_value(n.type.dtype, v));
  s += "    }\n  }\n";
  return s;
}

// conv_transpose2d/3d, gathered: one (batch, output channel) plane per iteration of the outer
// loop; each output sums, in (input channel, kernel index) order, the input elements whose taps
// land on it, then adds the bias.
std::string Codegen::conv_transpose_kernel(int id) {
  const Node& n = g_.node(id);
  int x = n.operands[0].value, w = n.operands[1].value;
  const Shape &xs = g_.node(x).type.shape, &ws = g_.node(w).type.shape, &os = n.type.shape;
  const Window win = window_of(n, &ws[2]);
  const int r = win.rank;
  const int64_t groups = attr_int(n, "groups"), cg = xs[1] / groups, og = os[1] / groups;
  const char* ct = compute_type(n.type.dtype);
  static const char* const out_var[3] = {"oz", "oy", "ox"};
  static const char* const in_var[3] = {"z", "y", "xx"};
  static const char* const tap_var[3] = {"l", "i", "j"};
  const int first = 3 - r;  // 2-D uses (oy, ox)
  int64_t plane = 1, taps = 1;
  for (int d = 0; d < r; ++d) {
    plane *= os[static_cast<size_t>(d) + 2];
    taps *= ws[static_cast<size_t>(d) + 2];
  }
  std::string v = n.operands.size() > 2 ? fmt::format("acc + {}", load(n.operands[2].value, ct, {os[1]}, "oc")) : "acc";
  if (perturbs(id)) v = perturb_open(id) + v + ")";
  std::string s = loop("nc", os[0] * os[1], plane * cg * taps) + " {\n";
  s += fmt::format("    const int64_t nb = nc / {0}, oc = nc % {0}, c0 = (oc / {1}) * {2}, ko = oc % {1};\n", os[1], og, cg);
  s += "    ";
  for (int d = 0; d < r; ++d) s += fmt::format("for (int64_t {0} = 0; {0} < {1}; ++{0}) ", out_var[first + d], os[static_cast<size_t>(d) + 2]);
  s += "{\n";
  s += fmt::format("      {} acc = ({})0;\n", ct, ct);
  s += fmt::format("      for (int64_t ic = 0; ic < {}; ++ic) {{\n", cg);
  std::vector<std::string> xi{"nb", "c0 + ic"}, wi{"c0 + ic", "ko"};
  for (int d = 0; d < r; ++d) {
    const size_t sd = static_cast<size_t>(d) + 2;
    const char *o = out_var[first + d], *i = in_var[first + d], *k = tap_var[first + d];
    s += fmt::format("      for (int64_t {0} = 0; {0} < {1}; ++{0}) {{\n", k, ws[sd]);
    s += fmt::format("        const int64_t {0}n = {1} + {2} - {3} * {4}; if ({0}n < 0 || {0}n % {5} != 0) continue;\n", i, o, win.padding[d], k,
                     win.dilation[d], win.stride[d]);
    s += fmt::format("        const int64_t {0} = {0}n / {1}; if ({0} >= {2}) continue;\n", i, win.stride[d], xs[sd]);
    xi.push_back(i);
    wi.push_back(k);
  }
  s += fmt::format("        acc += {} * {};\n", load_n(x, ct, xi), load_n(w, ct, wi));
  for (int d = 0; d <= r; ++d) s += "      }\n";
  std::string at = "0";
  for (int d = 0; d < r; ++d) at = fmt::format("({}) * {} + {}", at, os[static_cast<size_t>(d) + 2], out_var[first + d]);
  s += fmt::format("      {}[nc * {} + {}] = {};\n", buf(id), plane, at, store_value(n.type.dtype, v));
  s += "    }\n  }\n";
  return s;
}

namespace {
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
}  // namespace

// Direct convolution (CPU), for convs where each output reads one input channel (depthwise) or
// very few inputs: one output plane at a time, flattened. The input plane under the window is
// copied, zero-padded, into sub-planes by row and column phase modulo the stride (at stride 2:
// even and odd rows and columns), each `pitch` columns wide; then output (oy, ox) is computed at
// oy * pitch + ox and tap (i, j) reads its sub-plane at that index plus a constant, so all taps
// run in one vector pass over the whole plane (the few columns between rows are computed and
// dropped). The plane is then stored, or fed to the conv's epilogue (batch norm, clamp) on its
// way out. Stand-alone (3x3 stride 1 with mobilenet_v2's epilogue, 2 threads, hot caches),
// against the kernel before it, which added each tap over the whole plane and ran the epilogue
// as a pass of its own: 0.24-0.38x the time for planes of 7 x 7 to 28 x 28, 0.45-0.49x at
// 56 x 56 and 112 x 112. A row at a time (a row of 7 or 14 is one part-filled vector) was no
// faster than the old kernel on small planes. With a few channels, im2col + GEMM is faster:
// mobilenet_v2's first conv, 3 channels of 3x3 at stride 2, ran 2.5x faster as a GEMM.
std::string Codegen::conv2d_planes(int id) {
  const Node& n = g_.node(id);
  const int x = n.operands[0].value, w = n.operands[1].value;
  const Shape &xs = g_.node(x).type.shape, &ws = g_.node(w).type.shape, &os = n.type.shape;
  const Window win = window_of(n, &ws[2]);
  const int64_t groups = attr_int(n, "groups"), cg = ws[1], og = os[1] / groups, kh = ws[2], kw = ws[3], oh = os[2], ow = os[3];
  const int64_t sy = win.stride[0], sx = win.stride[1], dy = win.dilation[0], dx = win.dilation[1], py = win.padding[0], px = win.padding[1];
  const DType dt = n.type.dtype;
  const char* ct = compute_type(dt);
  const std::string simd = target_.openmp ? "#pragma omp simd\n" : "";  // each use indents it
  std::string bias = n.operands.size() > 2 ? load(n.operands[2].value, ct, {os[1]}, "oc") : fmt::format("({})0", ct);
  // Phases of the taps: kernel row i reads row phase (i dy) mod sy, sub-plane row oy + (i dy) / sy;
  // column j reads column phase (j dx) mod sx, column ox + (j dx) / sx.
  auto phases_of = [](int64_t taps, int64_t dil, int64_t stride) {
    std::vector<int64_t> ph;
    for (int64_t k = 0; k < taps; ++k)
      if (std::find(ph.begin(), ph.end(), (k * dil) % stride) == ph.end()) ph.push_back((k * dil) % stride);
    return ph;
  };
  // Up to 7 x 7 taps are unrolled into one pass; larger windows (the weight gradients of
  // depthwise convs, whose "kernel" is a whole output plane) loop over their taps at run time,
  // a pass each, with every phase present so that a tap's sub-plane is its phase's index.
  const bool unrolled = kh * kw <= 49;
  std::vector<int64_t> rps = phases_of(kh, dy, sy), cps = phases_of(kw, dx, sx);
  if (!unrolled) {
    rps.resize(static_cast<size_t>(sy)), cps.resize(static_cast<size_t>(sx));
    for (int64_t k = 0; k < sy; ++k) rps[static_cast<size_t>(k)] = k;
    for (int64_t k = 0; k < sx; ++k) cps[static_cast<size_t>(k)] = k;
  }
  auto index_in = [](const std::vector<int64_t>& ph, int64_t p) { return static_cast<int64_t>(std::find(ph.begin(), ph.end(), p) - ph.begin()); };
  const int64_t pitch = ((ow - 1) * sx + (kw - 1) * dx) / sx + 1, ncp = static_cast<int64_t>(cps.size());
  // A large plane goes a strip of `strip` output rows at a time (a divisor of oh, 8 to 16 rows),
  // so that its copy, sums and epilogue stay in L1: whole, a 112 x 112 plane's copy and sums are
  // 104 KiB, and each of the three passes over them went out to L2. The strips of every plane are
  // the loop's items; a strip copies the (kh - 1) dy / sy input rows under its edge again.
  const auto held = [&](int64_t out_rows) {
    return out_rows * pitch + static_cast<int64_t>(rps.size()) * ncp * (out_rows + ((kh - 1) * dy) / sy) * pitch;
  };
  int64_t strip = oh;
  for (int64_t d = 16; unrolled && d >= 8 && held(oh) * static_cast<int64_t>(sizeof(float)) > (int64_t{16} << 10); --d)
    if (oh % d == 0) {
      strip = d;
      break;
    }
  const int64_t strips = oh / std::max<int64_t>(strip, 1), rows = strip + ((kh - 1) * dy) / sy, sub = rows * pitch;
  const int64_t outs = (strip - 1) * pitch + ow, floats = held(strip);  // computed; held
  // (Divisors of at least 1: with an empty output the plane loop never runs, but is compiled.)
  std::string s = fmt::format("    const int64_t plane = nc / {0}, v0 = (nc % {0}) * {1};  // the plane, its strip's first row\n",
                              std::max<int64_t>(strips, 1), strip);
  s += fmt::format("    const int64_t nb = plane / {0}, oc = plane % {0}, c0 = (oc / {1}) * {2};\n", std::max<int64_t>(os[1], 1),
                   std::max<int64_t>(og, 1), cg);
  // Up to 64 KiB on the stack (planes up to about 60 x 60 at stride 1); larger planes on the heap.
  if (floats * static_cast<int64_t>(sizeof(double)) <= 65536) s += fmt::format("    alignas(64) {} acc[{}];\n", ct, floats);
  else s += fmt::format("    RkHeapBuffer<{0}> planev({1}); {0}* acc = planev.data;\n", ct, floats);
  s += fmt::format("    {}* in = acc + {};  // the input's sub-planes\n", ct, strip * pitch);
  // With one input channel an output (depthwise), the taps' pass starts each output from the bias
  // instead of reading it back from a pass that wrote it (the same sums, in the same order).
  const bool one_pass = unrolled && cg == 1;
  if (one_pass) s += fmt::format("    const {} bias = {};\n", ct, bias);
  else s += (simd.empty() ? "" : "    " + simd) + fmt::format("    for (int64_t t = 0; t < {}; ++t) acc[t] = {};\n", outs, bias);
  s += fmt::format("    for (int64_t ic = 0; ic < {}; ++ic) {{\n", cg);
  Access xa = access(x);
  // Sub-plane row v of row phase ry is input row v sy + ry - py (zero outside the input). Row v of
  // every phase in turn, so the input is read in order: one phase's rows after another read the
  // plane sy times, a row apart (at stride 2, 96 channels at 112 x 112 with a clamp, one thread:
  // 406-411 -> 368-370 us).
  s += fmt::format("      for (int64_t v = 0; v < {}; ++v) {{\n", rows);
  for (size_t a = 0; a < rps.size(); ++a) {
    s += fmt::format("        {{ {}* to = in + {} + v * {};\n", ct, static_cast<int64_t>(a) * ncp * sub, pitch);
    s += fmt::format("        const int64_t y = (v0 + v) * {} + {};\n", sy, rps[a] - py);
    s += fmt::format(
        "        if (y < 0 || y >= {}) {{ for (int64_t b = 0; b < {}; ++b) for (int64_t u = 0; u < {}; ++u) to[b * {} + u] = ({})0; }} else {{\n",
        xs[2], ncp, pitch, sub, ct);
    s += fmt::format("        const int64_t row = {} + nb * {} + (c0 + ic) * {} + y * {};\n", xa.offset, xa.strides[0], xa.strides[1], xa.strides[2]);
    for (int64_t b = 0; b < ncp; ++b) {
      // Column u of column phase cx is input column u sx + cx - px: inside [0, in_w) for u in [lo, hi).
      const int64_t cx = cps[static_cast<size_t>(b)], at = b * sub;
      const int64_t lo = std::clamp<int64_t>(floor_div(px - cx + sx - 1, sx), 0, pitch);
      const int64_t hi = std::clamp<int64_t>(floor_div(xs[3] - 1 + px - cx, sx) + 1, lo, pitch);
      if (lo > 0) s += fmt::format("        for (int64_t u = 0; u < {}; ++u) to[{} + u] = ({})0;\n", lo, at, ct);
      s += (simd.empty() ? "" : "        " + simd) +
           fmt::format("        for (int64_t u = {}; u < {}; ++u) to[{} + u] = ({}){};\n", lo, hi, at, ct,
                       load_expr(xa.dtype, ptr(xa), fmt::format("row + (u * {} + {}) * {}", sx, cx - px, xa.strides[3])));
      if (hi < pitch) s += fmt::format("        for (int64_t u = {}; u < {}; ++u) to[{} + u] = ({})0;\n", hi, pitch, at, ct);
    }
    s += "        } }\n";
  }
  s += "      }\n";
  if (!unrolled) {
    s += fmt::format("      for (int64_t i = 0; i < {}; ++i) for (int64_t j = 0; j < {}; ++j) {{\n", kh, kw);
    s += fmt::format("        const {} wv = {};\n", ct, load4(w, ct, "oc", "ic", "i", "j"));
    s += fmt::format("        const {0}* src = in + (((i * {1}) % {2}) * {3} + (j * {4}) % {5}) * {6} + ((i * {1}) / {2}) * {7} + (j * {4}) / {5};\n",
                     ct, dy, sy, ncp, dx, sx, sub, pitch);
    s += (simd.empty() ? "" : "        " + simd) +
         fmt::format("        for (int64_t t = 0; t < {}; ++t) acc[t] += wv * src[t];\n      }}\n    }}\n", outs);
  } else {  // every tap of the window in one pass over the flattened plane
    std::string taps;
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j) {
        const int64_t at = (index_in(rps, (i * dy) % sy) * ncp + index_in(cps, (j * dx) % sx)) * sub + ((i * dy) / sy) * pitch + (j * dx) / sx;
        s += fmt::format("      const {} w{}_{} = {};\n", ct, i, j, load4(w, ct, "oc", "ic", std::to_string(i), std::to_string(j)));
        taps += fmt::format(" v += w{}_{} * in[{} + t];", i, j, at);
      }
    // 16-float vectors where the pass (a plane, or a strip of one) is long enough that the loop's
    // scalar remainder is a small part of it: at 14 x 14 (222 outputs, 14 left over) and 7 x 7
    // they took 1.2-1.4x the time.
    const std::string pragma = outs >= 512 ? "      RK_SIMD_WIDE\n" : "      " + simd;
    s += (simd.empty() ? "" : pragma) +
         fmt::format("      for (int64_t t = 0; t < {}; ++t) {{ {} v = {};{} acc[t] = v; }}\n    }}\n", outs, ct, one_pass ? "bias" : "acc[t]", taps);
  }
  // Output (oy, ox) of the plane, as the epilogue's rows (r, j) see it.
  std::string v = fmt::format("acc[(r % {}) * {} + j]", std::max<int64_t>(strip, 1), pitch);
  if (perturbs(id)) v = perturb_open(id) + v + ")";
  const int64_t work = cg * kh * kw;
  if (auto epilogue = epilogue_of_.find(id); epilogue != epilogue_of_.end()) {
    ComputedOperand conv{id, s, store_value(dt, v), work, std::max<int64_t>(strip, 1)};
    return pointwise_kernel(epilogue->second, &conv);
  }
  s += fmt::format("    for (int64_t r = nc * {0}; r < (nc + 1) * {0}; ++r) {{\n", strip);
  s += (simd.empty() ? "" : "      " + simd) +
       fmt::format("      for (int64_t j = 0; j < {}; ++j) {}[r * {} + j] = {};\n    }}\n", ow, buf(id), ow, store_value(dt, v));
  return loop("nc", os[0] * os[1] * strips, strip * ow * work) + " {\n" + s + "  }\n";
}

std::string Codegen::conv2d_kernel(int id) {
  if (!target_.blas) return conv2d_direct(id);
  const Node& n = g_.node(id);
  int x = n.operands[0].value, w = n.operands[1].value;
  const Shape &xs = g_.node(x).type.shape, &ws = g_.node(w).type.shape, &os = n.type.shape;
  if (direct_conv(ws) && !depthwise_rows(id) && !grouped_vectors(id)) return conv2d_planes(id);
  const Window win = window_of(n, &ws[2]);
  const int64_t groups = attr_int(n, "groups"), cg = ws[1], og = os[1] / groups, kk = cg * ws[2] * ws[3], plane = os[2] * os[3];
  const DType dt = n.type.dtype;
  const char* ct = compute_type(dt);
  const bool low = dt == DType::f16 || dt == DType::bf16;
  std::string bias = n.operands.size() > 2 ? load(n.operands[2].value, ct, {os[1]}, "oc") : fmt::format("({})0", ct);
  // im2col + GEMM per (batch, group): col[kk, plane] = the input under each kernel tap.
  const char* blas_t = dt == DType::f64 ? "double" : "float";
  Access wa = access(w);
  bool w_direct = !low && wa.strides == contiguous_strides(ws);
  bool pointwise_conv = ws[2] == 1 && ws[3] == 1 && win.stride[0] == 1 && win.stride[1] == 1 && win.padding[0] == 0 && win.padding[1] == 0;
  Access xa = access(x);
  bool x_direct = pointwise_conv && !low && xa.strides[3] == 1 && xa.strides[2] == xs[3] && xa.strides[1] == xs[2] * xs[3];
  std::string s = "  {\n";
  if (!w_direct) {
    s += scratch("pw", blas_t, numel(ws));
    s += loop("p", numel(ws), 1) + fmt::format(" pw[p] = {};\n", load(w, blas_t, ws, "p"));
  }
  std::string w_ptr = w_direct ? fmt::format("(const {}*){} + {}", blas_t, ptr(wa), wa.offset) : "pw";
  // Where the GEMM writes: the output; with an epilogue, its last node's buffer when that has the
  // conv's dtype (each element is read, then overwritten, in the same pass); else scratch.
  auto epilogue = epilogue_of_.find(id);
  std::string c_ptr;
  if (epilogue != epilogue_of_.end() && g_.node(epilogue->second.back()).type.dtype == dt) c_ptr = buf(epilogue->second.back());
  else if (epilogue == epilogue_of_.end() && !low) c_ptr = buf(id);
  else {
    s += scratch("pc", blas_t, numel(os));
    c_ptr = "pc";
  }
  const std::string c_at = fmt::format("({}*){} + (nb * {} + g * {}) * {}", blas_t, c_ptr, os[1], og, plane);
  if (depthwise_rows(id)) return s + conv2d_depthwise(id, w_ptr, c_ptr, bias) + "  }\n";
  if (grouped_vectors(id)) return s + conv2d_grouped(id, w_ptr, c_at, c_ptr, bias) + "  }\n";
  if (panel_conv(id)) return s + conv2d_panels(id, w_ptr, c_at, c_ptr, bias) + "  }\n";
  if (!x_direct) s += scratch("col", blas_t, kk * plane);
  s += fmt::format("  for (int64_t nb = 0; nb < {}; ++nb) for (int64_t g = 0; g < {}; ++g) {{\n", os[0], groups);
  if (!x_direct) {
    // One row of col per (channel, tap): per output row, zeros where the tap falls in the
    // padding and the input row's valid span copied between them (ox in [lo, hi)).
    s += loop("r", kk, plane) + " {\n";
    s += fmt::format("    const int64_t ic = r / {0}, i = (r / {1}) % {2}, j = r % {1};\n", ws[2] * ws[3], ws[3], ws[2]);
    s += "    " + valid_columns(win, xs[3], os[3]);
    s += fmt::format("    for (int64_t oy = 0; oy < {}; ++oy) {{\n", os[2]);
    s += fmt::format("      {}* dst = col + r * {} + oy * {};\n", blas_t, plane, os[3]);
    s += fmt::format("      const int64_t y = oy * {} - {} + i * {};\n", win.stride[0], win.padding[0], win.dilation[0]);
    s += fmt::format("      if (y < 0 || y >= {}) {{ for (int64_t ox = 0; ox < {}; ++ox) dst[ox] = ({})0; continue; }}\n", xs[2], os[3], blas_t);
    s += fmt::format("      const int64_t row = {} + nb * {} + (g * {} + ic) * {} + y * {};\n", xa.offset, xa.strides[0], cg, xa.strides[1],
                     xa.strides[2]);
    s += fmt::format("      for (int64_t ox = 0; ox < lo; ++ox) dst[ox] = ({})0;\n", blas_t);
    s += "      #pragma omp simd\n";
    s += fmt::format("      for (int64_t ox = lo; ox < hi; ++ox) dst[ox] = ({}){};\n", blas_t,
                     load_expr(xa.dtype, ptr(xa), fmt::format("row + (ox * {} + off) * {}", win.stride[1], xa.strides[3])));
    s += fmt::format("      for (int64_t ox = hi; ox < {}; ++ox) dst[ox] = ({})0;\n", os[3], blas_t);
    s += "    }\n  }\n";
  }
  std::string b_ptr =
      x_direct ? fmt::format("(const {}*){} + {} + nb * {} + g * {} * {}", blas_t, ptr(xa), xa.offset, xa.strides[0], cg, xa.strides[1]) : "col";
  s += fmt::format("    rk_gemm(RK_NO_TRANS, RK_NO_TRANS, {}, {}, {}, ({}*){} + g * {}, {}, ({}*){}, {}, {}, {});\n", og, plane, kk,
                   "const " + std::string(blas_t), w_ptr, og * kk, kk, "const " + std::string(blas_t), b_ptr, plane, c_at, plane);
  s += "  }\n";
  return s + conv2d_output_pass(id, c_ptr, bias) + "  }\n";
}

// float convolutions whose input the panel packer can address (int32 offsets within a channel,
// strides not negative) run on the prelude's conv GEMM; others on im2col + BLAS.
bool Codegen::panel_conv(int id) const {
  const Node& n = g_.node(id);
  const int x = n.operands[0].value;
  const Access xa = access(x);
  const Shape& xs = g_.node(x).type.shape;
  if (n.type.dtype != DType::f32 || xa.dtype != DType::f32) return false;
  for (int64_t st : xa.strides)
    if (st < 0) return false;
  return (xs[2] - 1) * xa.strides[2] + (xs[3] - 1) * xa.strides[3] < (int64_t{1} << 31);
}

// The scratch a 3x3 conv on Winograd needs to run on kWinogradThreads threads (the prelude's
// rk_winograd_pays and rk_conv_winograd, cpp_conv_winograd.h: the weights' 16 planes, then each
// thread's planes of a panel of 32 tiles), or 0 where it does not run on Winograd. Sized from the
// conv GEMM's panels alone, a conv of many channels on a small plane (squeezenet1_0's at 27 x 27)
// had room for one thread, and the other waited. Less room than this only means fewer threads.
namespace {
constexpr int64_t kWinogradThreads = 8;
constexpr int64_t kConvImageThreads = 8;  // threads sharing out a conv's images and groups, at most

// The prelude's kRkFewChannels (on any machine) and kRkFewChannelsTaps (cpp_conv_few_channels.h):
// input channels a group, and channels x taps, that the few-channel conv holds at most.
constexpr int64_t kFewChannels = 16, kFewChannelsTaps = 484;

// Whether the prelude's few-channel conv (rk_conv_few_channels_f32, cpp_conv_few_channels.h) may
// take a conv of `channels` inputs a group: the window shapes it takes (kRkFewChannels inputs at
// most, up to 11 x 11 taps and kRkFewChannelsTaps channels x taps, stride 1 or 2 alike, no
// dilation, rows read along). Whether it does is its own decision at run time. Not a 1x1 window:
// it has no im2col to save (a squeeze-excite's 1x1 conv of 8 channels on one pixel had a kernels
// unit compiled for it, 1.2 s).
bool few_channels_may_take(int64_t channels, const Window& win, const Shape& ws, int64_t col_step) {
  return channels <= kFewChannels && ws[2] * ws[3] > 1 && channels * ws[2] * ws[3] <= kFewChannelsTaps && ws[2] <= 11 && ws[3] <= 11 &&
         win.stride[0] == win.stride[1] && (win.stride[0] == 1 || win.stride[0] == 2) && win.dilation[0] == 1 && win.dilation[1] == 1 &&
         col_step == 1;
}
int64_t winograd_room(int64_t m, int64_t channels, int64_t out_h, int64_t out_w, const Window& win, const Shape& ws) {
  const int64_t tiles = ((out_h + 1) / 2) * ((out_w + 1) / 2);
  const bool pays = ws[2] == 3 && ws[3] == 3 && win.stride[0] == 1 && win.stride[1] == 1 && win.dilation[0] == 1 && win.dilation[1] == 1 &&
                    channels >= 16 && m >= 16 && tiles >= 128 && m * channels <= (int64_t{1} << 18);
  if (!pays) return 0;
  const auto plane = [](int64_t floats) { return floats + 16; };
  return 16 * plane(m * channels) + kWinogradThreads * 16 * (plane(channels * 32) + plane(m * 32));
}
}  // namespace

// A window as the prelude's kernels read it (RkConvWindow, cpp_base.h), a constant of the
// generated code: `channels` input channels of x (of a group, for the conv GEMM; all of them, for
// the depthwise kernel and the max pool), the window's taps, x's and the output's sizes, stride,
// padding, dilation and x's strides.
std::string Codegen::window_constant(int x, const Window& win, const Shape& os, int64_t channels) const {
  const Shape& xs = g_.node(x).type.shape;
  const Access xa = access(x);
  return fmt::format("    static const RkConvWindow window = {{{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}}};\n", channels,
                     win.kernel[0], win.kernel[1], xs[2], xs[3], os[3], os[2] * os[3], win.stride[0], win.stride[1], win.padding[0], win.padding[1],
                     win.dilation[0], win.dilation[1], xa.strides[1], xa.strides[2], xa.strides[3]);
}

// float: im2col straight into the 32-column panels of the prelude's conv GEMM (cpp_conv_gemm.h).
// Panel p, row r = (channel, tap) holds the input under that tap for output pixels 32p..32p+31
// (rk_pack_conv_panel); the window is a constant of the generated code.
std::string Codegen::conv2d_panels(int id, const std::string& w_ptr, const std::string& c_at, const std::string& gemm_out, const std::string& bias) {
  const Node& n = g_.node(id);
  int x = n.operands[0].value, w = n.operands[1].value;
  const Shape &ws = g_.node(w).type.shape, &os = n.type.shape;
  const Window win = window_of(n, &ws[2]);
  const int64_t groups = attr_int(n, "groups"), cg = ws[1], og = os[1] / groups, kk = cg * ws[2] * ws[3], plane = os[2] * os[3];
  Access xa = access(x);
  if (plane == 1 && ws[2] == 1 && ws[3] == 1 && win.padding[0] == 0 && win.padding[1] == 0 && xa.strides[1] == 1)
    return conv2d_one_pixel(id, w_ptr, c_at, gemm_out, bias);
  const int64_t panels = (plane + 31) / 32, wino = winograd_room(og, cg, os[2], os[3], win, ws), room = std::max(panels * 32 * kk, wino);
  // Images and groups whose GEMMs are each too small for threads (the prelude's
  // kRkGemmParallelFlops; regnet_y_400mf's 3x3 convs of 8 channels a group, a batch of small
  // images) are shared out between the threads, each GEMM on one, with panels of its own: one
  // after the other, every GEMM ran on one thread while the others waited.
  const int64_t images = os[0] * groups;
  const bool by_images = target_.openmp && images >= 2 && wino == 0 && 2.0 * double(og) * double(plane) * double(kk) < kGemmParallelFlops &&
                         images * og * plane * kk >= (int64_t{1} << 17);
  // A batch norm then SiLU (efficientnet's, after its 1x1 convs and its first conv) on each block
  // by the conv kernels unit's rk_channel_silu_rows, a SiLU in 17 vector operations where the
  // generated one has 28; other epilogues stay generated.
  const std::optional<ChannelAffine> plan = target_.separate_units ? plan_channel_affine(id, gemm_out, bias, true) : std::nullopt;
  const bool silu_rows = plan && plan->silu;
  std::string s = silu_rows ? channel_affine(id, *plan) : "";
  if (by_images) {
    const int64_t slots = std::min(images, kConvImageThreads);
    s += scratch("col", "float", room * slots);
    s += fmt::format("  #pragma omp parallel for schedule(dynamic) num_threads(rk_threads_at_most({}))\n", slots);
    s += fmt::format("  for (int64_t ng = 0; ng < {}; ++ng) {{\n", images);
    s += fmt::format("    const int64_t nb = ng / {0}, g = ng % {0};\n", groups);
    s += fmt::format("    float* panels = col + rk_thread_num() * {};\n", room);
  } else {
    s += scratch("col", "float", room);
    s += fmt::format("  for (int64_t nb = 0; nb < {}; ++nb) for (int64_t g = 0; g < {}; ++g) {{\n", os[0], groups);
    s += "    float* panels = col;\n";
  }
  s += window_constant(x, win, os, cg);
  s += fmt::format("    const float* image = (const float*){} + {} + nb * {} + g * {};\n", ptr(xa), xa.offset, xa.strides[0], cg * xa.strides[1]);
  BlockEpilogue epilogue;
  if (silu_rows) {
    s += fmt::format(
        "    const RkChannelSiluRows silu_rows = {{(float*){} + (nb * {} + g * {}) * {}, {}, affine.scale + g * {}, affine.shift + g * {}}};\n",
        gemm_out, os[1], og, plane, plane, og, og);
    epilogue.arg = "RkEpilogue{rk_channel_silu_rows, &silu_rows}";
  } else {
    epilogue = conv_block_epilogue(id, gemm_out, bias, fmt::format("nb * {} + g * {} + m", os[1], og), fmt::format("g * {} + m", og));
  }
  s += epilogue.code;
  // The kernels that may take this conv before the conv GEMM, each a kernels unit of its own and
  // returning nonzero where it does not: the few-channel conv, then Winograd.
  const std::string a = fmt::format("(const float*){} + g * {}, {}", w_ptr, og * kk, kk), ep = epilogue.arg.empty() ? "RkEpilogue{}" : epilogue.arg;
  std::vector<std::string> before;
  if (few_channels_may_take(cg, win, ws, xa.strides[3]))
    before.push_back(fmt::format("rk_conv_few_channels_f32<{}>({}, {}, image, &window, {}, {}, {})", win.stride[1], og, a, c_at, plane, ep));
  if (wino) before.push_back(fmt::format("rk_conv_winograd_f32({}, {}, image, &window, panels, {}, {}, {}, {})", og, a, room, c_at, plane, ep));
  s += before.empty() ? "    " : fmt::format("    if ({}) ", fmt::join(before, " && "));
  s += fmt::format("rk_conv_gemm_f32({}, {}, {}, {}, image, &window, panels, {}, {}, {});\n", og, plane, kk, a, c_at, plane, ep);
  s += "  }\n";
  return epilogue.arg.empty() ? s + conv2d_output_pass(id, gemm_out, bias) : s;
}

// A 1x1 conv of one pixel (a squeeze-excite's, 110 -> 440 channels) as a matrix-vector product
// for each image and group: rk_gemm of one row (rk_gemv_rows, the weights' rows read 12 at a time,
// on every thread where they are 128 KiB or more), then the epilogue once on the column. The conv
// GEMM took them a few rows of dot products at a time: regnet_y_400mf's 32 such convs, one
// thread, 433-451 -> 289-300 us. A SiLU after one stays the generated epilogue
// (rk_channel_silu_rows is in the conv kernels unit, which a graph calling no conv GEMM does not
// compile).
std::string Codegen::conv2d_one_pixel(int id, const std::string& w_ptr, const std::string& c_at, const std::string& gemm_out,
                                      const std::string& bias) {
  const Node& n = g_.node(id);
  const Shape& os = n.type.shape;
  const Access xa = access(n.operands[0].value);
  const int64_t groups = attr_int(n, "groups"), og = os[1] / groups, cg = g_.node(n.operands[1].value).type.shape[1];
  std::string s = fmt::format("  for (int64_t nb = 0; nb < {}; ++nb) for (int64_t g = 0; g < {}; ++g) {{\n", os[0], groups);
  s += fmt::format("    const float* image = (const float*){} + {} + nb * {} + g * {};\n", ptr(xa), xa.offset, xa.strides[0], cg);
  const BlockEpilogue epilogue =
      conv_block_epilogue(id, gemm_out, bias, fmt::format("nb * {} + g * {} + m", os[1], og), fmt::format("g * {} + m", og));
  s += epilogue.code;
  s += fmt::format("    rk_gemm(RK_NO_TRANS, RK_TRANS, 1, {}, {}, image, {}, (const float*){} + g * {}, {}, {}, {});\n", og, cg, cg, w_ptr, og * cg,
                   cg, c_at, og);
  if (!epilogue.arg.empty()) s += fmt::format("    {{ const RkEpilogue e = {}; e.run(e.ctx, 0, {}, 0, 1); }}\n", epilogue.arg, og);
  s += "  }\n";
  return epilogue.arg.empty() ? s + conv2d_output_pass(id, gemm_out, bias) : s;
}

// Depthwise convs (one input channel an output channel, as many outputs as inputs) whose window
// the prelude's rk_depthwise_f32 takes run on it where the machine has AVX-512 or AVX2 with FMA
// and its form pays (depthwise_machines), and on the direct conv (conv2d_planes) elsewhere.
bool Codegen::depthwise_rows(int id) const { return !depthwise_machines(id).empty(); }

// The preprocessor condition under which the generated code calls the kernel; empty where no
// machine's form of it takes or pays for the conv.
std::string Codegen::depthwise_machines(int id) const {
  const Node& n = g_.node(id);
  if (!panel_conv(id)) return "";
  const int x = n.operands[0].value, w = n.operands[1].value;
  const Shape &xs = g_.node(x).type.shape, &ws = g_.node(w).type.shape, &os = n.type.shape;
  const Window win = window_of(n, &ws[2]);
  const Access xa = access(x);
  const bool taps = ws[2] == ws[3] && (ws[2] == 3 || ws[2] == 5 || ws[2] == 7) && win.dilation[0] == 1 && win.dilation[1] == 1;
  const bool stride = win.stride[0] == win.stride[1] && (win.stride[0] == 1 || win.stride[0] == 2);
  if (!(attr_int(n, "groups") == xs[1] && ws[1] == 1 && os[1] == xs[1] && taps && stride && xa.strides[3] == 1 && xa.strides[2] == xs[3] &&
        os[2] * os[3] > 0))
    return "";
  // AVX2's form reads windows of 8 columns from within a row. It pays for 5x5 and 7x7 at stride 1,
  // where the direct conv re-reads each input vector for every tap, and at stride 2 to rows of
  // one block (one thread, the conv with a batch norm and clamp, in turn with the direct conv,
  // best of 100 runs: 7x7 on 96 channels at 56 x 56 1.15 -> 0.81 ms, 5x5 on 672 at 14 x 14
  // 0.25-0.33 -> 0.23, on 240 at 28 x 28 0.297 -> 0.285, at stride 2 on 672 from 14 x 14 to 7 x 7
  // 0.16-0.23 -> 0.10). At stride 2 to rows of 14 and 28 its even and odd split cost more than it
  // saved (5x5 on 240 from 28 x 28 0.115-0.16 -> 0.13-0.19, on 144 from 56 x 56 0.26 -> 0.27-0.37);
  // on 3x3 it was no faster anywhere.
  const bool avx2 = xs[3] >= 8 && ws[2] >= 5 && (win.stride[0] == 1 || os[3] <= 8);
  const bool avx512 = depthwise_rows_on_avx512(id);
  if (avx512 && avx2) return "defined(RK_DEPTHWISE_VECTORS)";
  if (avx512) return "defined(__AVX512F__)";
  if (avx2) return "defined(RK_DEPTHWISE_VECTORS) && !defined(__AVX512F__)";
  return "";
}

// Whether the AVX-512 form of the kernel pays for a conv whose window it takes: a row of output one
// vector, of input one or two; wider rows in blocks of 16 columns for 5x5 and 7x7 (one thread,
// against conv2d_planes: 7x7 on 96 channels at 56 x 56 0.50 -> 0.30-0.34 ms, on 192 at 28 x 28
// 0.25 -> 0.15-0.17, 5x5 on 240 at 28 x 28 0.13-0.14 -> 0.11-0.12, 5x5 at stride 2 from 56 x 56
// on 144 0.14 -> 0.09-0.10). 3x3 alone was within 10% either way, but in mobilenet_v2 with its
// batch norm and clamp, per kernel (3 alternations, medians): 32 at 112 x 112 206 -> 154 us, 144
// at 56 x 56 206 -> 186, 192 at 28 x 28 64 -> 50, stride 2 from 56 x 56 to 28 x 28 83 -> 67;
// from 112 x 112 to 56 x 56 (rows of 56) it lost 2-14%, so stride 2 takes it up to rows of 32.
bool Codegen::depthwise_rows_on_avx512(int id) const {
  const Node& n = g_.node(id);
  const Shape &xs = g_.node(n.operands[0].value).type.shape, &ws = g_.node(n.operands[1].value).type.shape, &os = n.type.shape;
  const Window win = window_of(n, &ws[2]);
  const bool narrow = os[3] <= 16 && xs[3] <= 16 * win.stride[1];
  // Measured against conv2d_planes in a model (one thread, the conv with a clamp): 5x5 at
  // 14 x 14 1.4x, at 7 x 7 1.35x, at stride 2 to 7 x 7 1.5x as fast, 7x7 at 7 x 7 3x; 3x3 at
  // 14 x 14 1.05-1.1x. 3x3 to 7 x 7 paid only once the epilogue ran on a group of planes, not a
  // call a plane (with a batch norm and clamp: 960 channels at 7 x 7 46 -> 35-38 us, 576 at
  // stride 2 from 14 x 14 35 -> 27-29, 240 at stride 2 from 28 x 28 43 -> 37).
  return narrow || ws[2] >= 5 || win.stride[0] == 1 || os[3] <= 32;
}

std::string Codegen::conv2d_depthwise(int id, const std::string& w_ptr, const std::string& gemm_out, const std::string& bias) {
  const Node& n = g_.node(id);
  const int x = n.operands[0].value;
  const Shape &ws = g_.node(n.operands[1].value).type.shape, &os = n.type.shape;
  const Access xa = access(x);
  // The direct conv for the other machines, emitted first: the epilogue's kernel below starts
  // again from the same state.
  const std::set<int> before = in_kernel_;
  const std::string direct = conv2d_planes(id);
  in_kernel_ = before;
  // An epilogue of per-channel adds and muls and a clamp is the kernel's own (the weights scaled,
  // the sums started at the shift, the clamp as they are stored): run after each group of planes
  // it had been a quarter of a 3x3 conv's time. One thread, ten 3x3 convs on 576 channels at
  // 14 x 14 in a row, three alternations: with a bias and relu6 0.385 -> 0.336-0.347 ms, with
  // mobilenet_v2's batch norm and relu6 0.41 -> 0.335-0.348 (0.30 without an epilogue).
  // A SiLU after it too (efficientnet's), x / (1 + exp(-x)) on each vector as it is stored.
  const std::optional<ChannelAffine> plan = plan_channel_affine(id, gemm_out, bias, true);
  const bool silu = plan && plan->silu;
  const std::string affine = plan ? channel_affine(id, *plan) : "";
  std::string s = "#if " + depthwise_machines(id) + "\n" + affine + "  {\n";
  const Window win = window_of(n, &ws[2]);
  s += window_constant(x, win, os, os[1]);
  const BlockEpilogue epilogue = affine.empty() ? conv_block_epilogue(id, gemm_out, bias, "m", fmt::format("m % {}", os[1])) : BlockEpilogue{};
  s += epilogue.code;
  s += fmt::format(
      "    if (rk_depthwise_f32<{}, {}, RkActivation::{}>({}, (const float*){}, (const float*){} + {}, {}, &window, (float*){}, {}, {})) {}\n  }}\n",
      ws[2], win.stride[0], silu ? "silu" : "none", os[0], w_ptr, ptr(xa), xa.offset, xa.strides[0], gemm_out,
      epilogue.arg.empty() ? "RkEpilogue{}" : epilogue.arg, affine.empty() ? "nullptr" : "&affine",
      fail(fmt::format("{}: the depthwise conv kernel does not take this window", n.name)));
  if (epilogue.arg.empty() && affine.empty()) s += conv2d_output_pass(id, gemm_out, bias);
  return s + "#else\n" + scratch_read_only_above(affine) + direct + "#endif\n";
}

// Grouped convs of G = 4, 8 or 16 channels a group (as many out as in), 3x3 at stride 1 or 2, run
// on the prelude's rk_grouped_conv_f32 where the machine has AVX-512 (cpp_conv_grouped.h), 16
// output channels a vector. One thread, a stand-alone copy against the few-channel conv
// (cpp_conv_few_channels.h) on regnet_y_400mf's groups of 8: 440 channels at 7 x 7 97 -> 37 us,
// 208 at 14 x 14 112 -> 65, 104 at 28 x 28 166 -> 143, at stride 2 to 7 x 7 176 -> 51 and to
// 56 x 56 458 -> 373.
bool Codegen::grouped_vectors(int id) const {
  const Node& n = g_.node(id);
  if (!panel_conv(id) || !target_.separate_units) return false;
  const int x = n.operands[0].value, w = n.operands[1].value;
  const Shape &xs = g_.node(x).type.shape, &ws = g_.node(w).type.shape, &os = n.type.shape;
  const Window win = window_of(n, &ws[2]);
  const Access xa = access(x);
  const int64_t groups = attr_int(n, "groups"), cg = ws[1];
  return groups > 1 && os[1] == xs[1] && os[1] == groups * cg && (cg == 4 || cg == 8 || cg == 16) && ws[2] == 3 && ws[3] == 3 &&
         win.stride[0] == win.stride[1] && (win.stride[0] == 1 || win.stride[0] == 2) && win.dilation[0] == 1 && win.dilation[1] == 1 &&
         xa.strides[3] == 1 && xa.strides[2] == xs[3] && os[2] * os[3] > 0;
}

std::string Codegen::conv2d_grouped(int id, const std::string& w_ptr, const std::string& c_at, const std::string& gemm_out, const std::string& bias) {
  const Node& n = g_.node(id);
  const int x = n.operands[0].value, w = n.operands[1].value;
  const Shape &ws = g_.node(w).type.shape, &os = n.type.shape;
  const Access xa = access(x);
  const Window win = window_of(n, &ws[2]);
  const int64_t cg = ws[1], packed = (os[1] + 15) / 16 * 16 * cg * 9;  // floats of the weights as the kernel reads them
  // What machines without AVX-512 run, emitted first (the epilogue's kernel below starts again from
  // the same state): each group on the few-channel conv where it may take them, the conv GEMM where
  // it declines; else the direct conv. On AVX2 (one thread, regnet_y_400mf's groups of 8), the
  // few-channel conv against the direct one: 48 channels at stride 2 to 56 x 56 1250 -> 566 us,
  // 104 to 28 x 28 700 -> 422, 104 at 28 x 28 289 -> 266.
  const std::set<int> before = in_kernel_;
  const std::string without_avx512 =
      few_channels_may_take(cg, win, ws, xa.strides[3]) ? conv2d_panels(id, w_ptr, c_at, gemm_out, bias) : conv2d_planes(id);
  in_kernel_ = before;
  // Frozen weights (a model's) are packed once, into the kept region; others on every run. Declared
  // on every machine: the region's base is not left unused where the direct conv runs instead.
  std::string s;
  const Access wa = access(w);
  if (frozen(wa.base) && w_ptr != "pw") s += kept("gp", 64 + packed * 4);
  else {
    s += scratch("gs", "float", 16 + packed);
    s += "  unsigned char* gp = (unsigned char*)gs;\n  ((RkKeptPanels*)gp)->source = nullptr;\n";
  }
  // An epilogue of per-channel adds and muls and a clamp (regnet's batch norm and relu) is the
  // kernel's own, on each vector of sums as it is stored.
  const std::optional<ChannelAffine> plan = plan_channel_affine(id, gemm_out, bias, false);
  const std::string affine = plan ? channel_affine(id, *plan) : "";
  s += "#if defined(__AVX512F__)\n" + affine + "  {\n";
  s += window_constant(x, win, os, os[1]);
  const BlockEpilogue epilogue = affine.empty() ? conv_block_epilogue(id, gemm_out, bias, "m", fmt::format("m % {}", os[1])) : BlockEpilogue{};
  s += epilogue.code;
  s += fmt::format(
      "    if (rk_grouped_conv_f32<{}, {}>({}, (const float*){}, (const float*){} + {}, {}, &window, (float*){}, {}, (RkKeptPanels*)gp, {})) {}\n  "
      "}}\n",
      cg, win.stride[0], os[0], w_ptr, ptr(xa), xa.offset, xa.strides[0], gemm_out, epilogue.arg.empty() ? "RkEpilogue{}" : epilogue.arg,
      affine.empty() ? "nullptr" : "&affine", fail(fmt::format("{}: the grouped conv kernel does not take this window", n.name)));
  if (epilogue.arg.empty() && affine.empty()) s += conv2d_output_pass(id, gemm_out, bias);
  return s + "#else\n  (void)gp;\n" + scratch_read_only_above(affine) + without_avx512 + "#endif\n";
}

// Whether chain[at..] is the rest of the chain and a SiLU of `value` as it is decomposed (aot's
// silu and sigmoid, ONNX's x * Sigmoid(x)): neg, exp, add 1, reciprocal, and the product of
// `value` with that, each of the conv's shape in float.
bool Codegen::silu_tail(const std::vector<int>& chain, size_t at, int value) const {
  static constexpr Op kSteps[] = {Op::neg, Op::exp, Op::add, Op::reciprocal, Op::mul};
  if (chain.size() - at != std::size(kSteps)) return false;
  const auto reads = [](const Operand& o, int v) { return o.is_value() && o.value == v; };
  const auto one = [](const Operand& o) { return !o.is_value() && (o.literal.is_float() || o.literal.is_int()) && o.literal.as_float() == 1.0; };
  int previous = value;
  for (size_t i = 0; i < std::size(kSteps); ++i) {
    const Node& e = g_.node(chain[at + i]);
    if (e.op != kSteps[i] || e.type.dtype != DType::f32 || e.type.shape != g_.node(value).type.shape) return false;
    bool ok;
    if (e.op == Op::add)
      ok = e.operands.size() == 2 &&
           ((reads(e.operands[0], previous) && one(e.operands[1])) || (one(e.operands[0]) && reads(e.operands[1], previous)));
    else if (e.op == Op::mul)
      ok = e.operands.size() == 2 &&
           ((reads(e.operands[0], value) && reads(e.operands[1], previous)) || (reads(e.operands[0], previous) && reads(e.operands[1], value)));
    else ok = e.operands.size() == 1 && reads(e.operands[0], previous);
    if (!ok) return false;
    previous = chain[at + i];
  }
  return true;
}

// The conv's epilogue as per-channel scale and shift arrays (scratch, filled each run from the
// operands, C floats each) and clamp bounds, folded in the order the epilogue applies them:
// add t: shift += t; sub m: shift -= m; mul s: scale *= s, shift *= s; then a clamp or relu, or
// (where the caller takes one) a SiLU. The kernel then computes sum x scale + shift in one
// multiply-add where the reference rounds after each op: within float32 rounding of the largest
// intermediate.
std::optional<Codegen::ChannelAffine> Codegen::plan_channel_affine(int id, const std::string& gemm_out, const std::string& bias, bool silu) const {
  const Node& n = g_.node(id);
  const Shape& os = n.type.shape;
  if (perturbs(id) || n.type.dtype != DType::f32 || os.size() != 4) return std::nullopt;
  auto epilogue = epilogue_of_.find(id);
  const std::vector<int> chain = epilogue == epilogue_of_.end() ? std::vector<int>{} : epilogue->second;
  if ((chain.empty() && n.operands.size() <= 2) || (chain.empty() ? gemm_out != buf(id) : gemm_out != buf(chain.back()))) return std::nullopt;
  // An operand that is one value a channel: its shape, aligned right to the conv's, 1 but for C.
  const auto per_channel = [&](const Operand& o) {
    if (!o.is_value()) return false;
    const Node& v = g_.node(o.value);
    const Shape& vs = v.type.shape;
    if (vs.size() > 4 || !is_floating(v.type.dtype)) return false;
    for (size_t d = 0; d < vs.size(); ++d)
      if (vs[d] != 1 && !(d + 4 - vs.size() == 1 && vs[d] == os[1])) return false;
    return true;
  };
  ChannelAffine plan;
  plan.fold = fmt::format("    float a = 1.0f, b = {};\n", n.operands.size() > 2 ? bias : "0.0f");
  bool clamped = false;
  int value = id;  // the node whose value the chain has reached
  for (size_t at = 0; at < chain.size(); ++at) {
    const int k = chain[at];
    const Node& e = g_.node(k);
    if (clamped || e.type.dtype != DType::f32 || e.type.shape != os) return std::nullopt;
    if (silu && silu_tail(chain, at, value)) {
      plan.silu = true;
      break;
    }
    if ((e.op == Op::relu || e.op == Op::clamp) && e.operands.size() == 1 && e.operands[0].is_value() && e.operands[0].value == value) {
      clamped = true;
      if (e.op == Op::relu) plan.lo = "0.0f", plan.relu = true;
      if (auto v = attr_opt(e, "min"); e.op == Op::clamp && v) plan.lo = literal(*v, "float");
      if (auto v = attr_opt(e, "max"); e.op == Op::clamp && v) plan.hi = literal(*v, "float");
    } else if ((e.op == Op::add || e.op == Op::sub || e.op == Op::mul) && e.operands.size() == 2) {
      const bool first = e.operands[0].is_value() && e.operands[0].value == value;
      const bool second = e.operands[1].is_value() && e.operands[1].value == value;
      if (first == second || (e.op == Op::sub && !first) || !per_channel(e.operands[first ? 1 : 0])) return std::nullopt;
      const std::string o = load(e.operands[first ? 1 : 0].value, "float", {1, os[1], 1, 1}, "oc");
      if (e.op == Op::add) plan.fold += fmt::format("    b = b + {};\n", o);
      else if (e.op == Op::sub) plan.fold += fmt::format("    b = b - {};\n", o);
      else plan.fold += fmt::format("    a = a * {0};\n    b = b * {0};\n", o);
    } else {
      return std::nullopt;
    }
    value = k;
  }
  return plan;
}

// For the branch without AVX-512 of a kernel whose AVX-512 branch alone has `affine`: its
// scratch arena, which that branch alone may read in this unit, marked used.
std::string Codegen::scratch_read_only_above(const std::string& affine) const {
  return affine.empty() || !target_.separate_units ? "" : fmt::format("  (void){};\n", buf(scratch_id()));
}

std::string Codegen::channel_affine(int id, const ChannelAffine& plan) {
  const int64_t channels = g_.node(id).type.shape[1];
  std::string s = scratch("ea", "float", 2 * channels);
  s += fmt::format("  for (int64_t oc = 0; oc < {}; ++oc) {{\n{}    ea[oc] = a;\n    ea[{} + oc] = b;\n  }}\n", channels, plan.fold, channels);
  return s + fmt::format("  const RkChannelAffine affine = {{ea, ea + {}, {}, {}, {}}};\n", channels, plan.lo, plan.hi, plan.relu ? "true" : "false");
}

// The epilogue a conv kernel runs on each block of output planes [m_lo, m_hi) x pixels
// [n_lo, n_hi) it finishes (RkEpilogue): the flat elements of each plane's span
// (pointwise_kernel's span form). plane_of_m: the flat plane (image x channels + channel) of row
// m; channel_of_m: its channel. Empty where the conv has neither an epilogue nor a bias alone.
Codegen::BlockEpilogue Codegen::conv_block_epilogue(int id, const std::string& gemm_out, const std::string& bias, const std::string& plane_of_m,
                                                    const std::string& channel_of_m) {
  const Node& n = g_.node(id);
  const Shape& os = n.type.shape;
  const int64_t plane = os[2] * os[3];
  auto epilogue = epilogue_of_.find(id);
  // A bias alone (a conv whose batch norm was folded into it, read by another conv: efficientnet's
  // and regnet's projections) is added on each block as it is finished too, not in a pass of its
  // own over the whole output afterwards (one thread, a division per element for its channel: 3%
  // of efficientnet_b0's samples).
  const bool bias_on_blocks = epilogue == epilogue_of_.end() && n.operands.size() > 2 && !perturbs(id) && gemm_out == buf(id);
  if (epilogue == epilogue_of_.end() && !bias_on_blocks) return {};
  std::string s = "    const auto epilogue = [&](int64_t m_lo, int64_t m_hi, int64_t n_lo, int64_t n_hi) {\n";
  s += "    for (int64_t m = m_lo; m < m_hi; ++m) {\n";
  s += fmt::format("    const int64_t span_lo = ({}) * {} + n_lo, span_hi = span_lo + (n_hi - n_lo);\n", plane_of_m, plane);
  if (bias_on_blocks) {  // the output pass's element, on the span
    s += fmt::format("    const int64_t oc = {};\n    RK_SIMD_WIDE\n", channel_of_m);
    s += fmt::format("    for (int64_t i = span_lo; i < span_hi; ++i) {}[i] = {};\n", gemm_out, conv2d_element(id, gemm_out, bias, "i"));
  } else {
    ComputedOperand conv = conv2d_value(id, gemm_out, bias);
    conv.span = true;
    s += pointwise_kernel(epilogue->second, &conv);
  }
  s += "    }\n    };\n";
  return {s, "rk_epilogue_of(epilogue)"};
}

// The conv's value at flat `i` of its output, from where the GEMM wrote it: its bias (its channel
// `oc` from the row `r` of the last dim) and an injected error added.
std::string Codegen::conv2d_element(int id, const std::string& gemm_out, const std::string& bias, const char* flat) {
  std::string e = fmt::format("({}){}[{}]", compute_type(g_.node(id).type.dtype), gemm_out, flat);
  if (g_.node(id).operands.size() > 2) e = fmt::format("{} + {}", e, bias);
  if (perturbs(id)) e = perturb_open(id) + e + ")";
  return store_value(g_.node(id).type.dtype, e);
}

Codegen::ComputedOperand Codegen::conv2d_value(int id, const std::string& gemm_out, const std::string& bias) {
  const Shape& os = g_.node(id).type.shape;
  const bool has_bias = g_.node(id).operands.size() > 2;
  return {id, has_bias ? fmt::format("    const int64_t oc = (r / {}) % {};\n", os[2], os[1]) : "", conv2d_element(id, gemm_out, bias, "i")};
}

std::string Codegen::conv2d_output_pass(int id, const std::string& gemm_out, const std::string& bias) {
  const Node& n = g_.node(id);
  const Shape& os = n.type.shape;
  const bool has_bias = n.operands.size() > 2;
  auto epilogue = epilogue_of_.find(id);
  // The GEMM wrote the output (buf(id) is asked only without an epilogue: with one, the conv has
  // no buffer, and naming it would declare an unused pointer).
  if (epilogue == epilogue_of_.end() && !has_bias && !perturbs(id) && gemm_out == buf(id)) return "";
  if (epilogue == epilogue_of_.end()) {
    std::string s = loop("i", numel(os), 1, true) + " {\n";
    if (has_bias) s += fmt::format("    const int64_t oc = (i / {}) % {};\n", os[2] * os[3], os[1]);
    return s + fmt::format("    {}[i] = {};\n  }}\n", buf(id), conv2d_element(id, gemm_out, bias, "i"));
  }
  // The epilogue's pointwise kernel, row by row of the last dim, with the conv's value computed in
  // it (its channel once per row) instead of read.
  const ComputedOperand conv = conv2d_value(id, gemm_out, bias);
  return pointwise_kernel(epilogue->second, &conv);
}

}  // namespace reprokit::codegen_detail
