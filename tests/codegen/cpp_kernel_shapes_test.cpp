// The cpp backend's GEMM and convolution paths against the float64 reference across shapes: GEMMs
// cut into slabs by rows or by columns (odd sizes, transposed and batched operands), batched
// GEMMs side by side, im2col with padding, stride and dilation, the float conv GEMM's two ways of
// sharing work, Winograd F(2x2, 3x3), depthwise, few-input and grouped direct kernels, max pooling,
// size-1 dims, and inputs read through strides.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "backend_test_util.h"
#include "reprokit/aot/autodiff.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

struct Case {
  const char* name;
  const char* graph;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }  // ctest's names, not bytes

const Case kCases[] = {
    // rk_gemm: above 2 MFLOP (kRkGemmParallelFlops; each case here is 2.5 to 3 MFLOP), cut by columns (n >= m) or by rows; odd sizes leave a ragged
    // slab.
    {"gemm_by_columns", "graph g(%a: f32[67, 75], %b: f32[75, 301]) {\n  %c = matmul(%a, %b)\n  return (%c)\n}"},
    {"gemm_by_rows", "graph g(%a: f32[301, 75], %b: f32[75, 67]) {\n  %c = matmul(%a, %b)\n  return (%c)\n}"},
    {"gemm_transposed_by_rows",
     "graph g(%a: f32[301, 97] strides=[1, 301], %b: f32[97, 45] strides=[1, 97]) {\n  %c = matmul(%a, %b)\n  return (%c)\n}"},
    {"gemm_transposed_by_columns",
     "graph g(%a: f32[45, 97] strides=[1, 45], %b: f32[97, 301] strides=[1, 97]) {\n  %c = matmul(%a, %b)\n  return (%c)\n}"},
    {"gemm_f64", "graph g(%a: f64[129, 33], %b: f64[33, 257]) {\n  %c = matmul(%a, %b)\n  return (%c)\n}"},
    {"gemm_size_one", "graph g(%a: f32[1, 700], %b: f32[700, 1500]) {\n  %c = matmul(%a, %b)\n  return (%c)\n}"},
    // Batches side by side, each single-threaded; a shared weight folds the batch into rows.
    {"batched", "graph g(%a: f32[3, 5, 37, 41], %b: f32[3, 5, 41, 29]) {\n  %c = matmul(%a, %b)\n  return (%c)\n}"},
    {"batched_broadcast_weight", "graph g(%a: f32[4, 33, 65], %b: f32[65, 127]) {\n  %c = matmul(%a, %b)\n  return (%c)\n}"},
    // Float batches of 16 rows and columns or more on the panel GEMM, one thread each with panels
    // of its own: attention's heads read through their permutes (Q K^T with K^T a transposed
    // operand, then P V), a K^T product with fewer rows than columns (computed as its transpose),
    // and below 16 rows, on BLAS. The heads put back together: a copy by runs of 24.
    {"batched_panels_attention",
     "graph g(%q: f32[2, 40, 3, 24], %k: f32[2, 40, 3, 24], %v: f32[2, 40, 3, 24]) {\n  %qh = permute(%q, dims=[0, 2, 1, 3])\n"
     "  %kh = permute(%k, dims=[0, 2, 3, 1])\n  %vh = permute(%v, dims=[0, 2, 1, 3])\n  %s = matmul(%qh, %kh)\n  %c = matmul(%s, %vh)\n"
     "  %ct = permute(%c, dims=[0, 2, 1, 3])\n  %cr = reshape(%ct, shape=[2, 40, 72])\n  return (%cr)\n}"},
    {"batched_panels_fewer_rows_than_columns",
     "graph g(%a: f32[3, 20, 64], %b: f32[3, 100, 64]) {\n  %bt = permute(%b, dims=[0, 2, 1])\n  %c = matmul(%a, %bt)\n  return (%c)\n}"},
    {"batched_few_rows_on_blas", "graph g(%a: f32[4, 8, 50], %b: f32[4, 50, 70]) {\n  %c = matmul(%a, %b)\n  return (%c)\n}"},
    // rk_matmul_f32 (cpp_panel_gemm.h): float GEMMs above 2 MFLOP, 16 rows and columns or more.
    // A linear layer (B a transposed weight) as C^T = W x^T, stored transposed: 77 rows (two
    // panels and a last of 13), 200 outputs (not a multiple of 8), K = 300 (16 x 16 transposes
    // and a last 12); A read through a row stride past K; K over 8192 (slices added up, through
    // the transposed store) with 16 outputs; A column-major (its panels copied by rows).
    {"panel_gemm_linear", "graph g(%x: f32[77, 300], %w: f32[200, 300], %b: f32[200]) {\n  %y = linear(%x, %w, %b)\n  return (%y)\n}"},
    {"panel_gemm_linear_strided_rows", "graph g(%x: f32[100, 64] strides=[80, 1], %w: f32[190, 64]) {\n  %y = linear(%x, %w)\n  return (%y)\n}"},
    {"panel_gemm_linear_deep", "graph g(%x: f32[37, 8500], %w: f32[16, 8500]) {\n  %y = linear(%x, %w)\n  return (%y)\n}"},
    // More rows than outputs: C = x W^T directly, W's rows packed (45 outputs: a panel and a
    // last of 13; K = 75: 16 x 16 transposes and a last 11), x's rows read in place, also
    // through a row stride past K.
    {"panel_gemm_linear_rows_direct", "graph g(%x: f32[333, 75], %w: f32[45, 75], %b: f32[45]) {\n  %y = linear(%x, %w, %b)\n  return (%y)\n}"},
    {"panel_gemm_linear_rows_direct_strided",
     "graph g(%x: f32[420, 64] strides=[80, 1], %w: f32[40, 64]) {\n  %y = linear(%x, %w)\n  return (%y)\n}"},
    {"panel_gemm_both_transposed",
     "graph g(%a: f32[150, 97] strides=[1, 150], %b: f32[97, 45] strides=[1, 97]) {\n  %c = matmul(%a, %b)\n  return (%c)\n}"},
    // Row-major A and B: B's full panels read in place (K >= 2 M; N = 150, a last panel of 22),
    // or packed (K < 2 M; N = 90, a last of 26; or rows 1 KiB apart, more than the cache holds
    // in the sets they share); a batch folded into rows; A column-major with B row-major stays
    // on BLAS.
    {"panel_gemm_b_in_place", "graph g(%a: f32[40, 600], %b: f32[600, 150]) {\n  %c = matmul(%a, %b)\n  return (%c)\n}"},
    {"panel_gemm_b_rows_aliasing_packed", "graph g(%a: f32[27, 600], %b: f32[600, 256]) {\n  %c = matmul(%a, %b)\n  return (%c)\n}"},
    {"panel_gemm_b_packed", "graph g(%a: f32[300, 100], %b: f32[100, 90]) {\n  %c = matmul(%a, %b)\n  return (%c)\n}"},
    // Rows past the last whole block of 8 on a kernel of 2 or 4 rows: 49 (a last row alone), 51,
    // 44 (a last 4), 46 (a last 6, on the kernel of 8).
    {"panel_gemm_last_row_alone", "graph g(%a: f32[49, 300], %b: f32[300, 96]) {\n  %c = matmul(%a, %b)\n  return (%c)\n}"},
    {"panel_gemm_last_rows_3_4_6",
     "graph g(%a: f32[51, 200], %b: f32[200, 100], %c: f32[44, 200], %d: f32[46, 200]) {\n  %x = matmul(%a, %b)\n  %y = matmul(%c, %b)\n"
     "  %z = matmul(%d, %b)\n  return (%x, %y, %z)\n}"},
    {"panel_gemm_batch_as_rows", "graph g(%a: f32[3, 71, 80], %b: f32[80, 150]) {\n  %c = matmul(%a, %b)\n  return (%c)\n}"},
    // One row (a classifier's): a matrix-vector product, not the panel GEMM (its blocks would be
    // mostly padding), cut into slabs of outputs above 2 MFLOP; B stored transposed (a weight: 12
    // of its rows at a time, rk_gemv_rows; 77 rows of 90 leave 5 rows and 10 columns over) or not
    // (sgemv), A's row read through a stride (A stored transposed: sgemv).
    {"gemm_one_row_stays_on_blas", "graph g(%x: f32[1, 1280], %w: f32[1000, 1280], %b: f32[1000]) {\n  %y = linear(%x, %w, %b)\n  return (%y)\n}"},
    {"gemv_one_row_weight", "graph g(%x: f32[1, 90], %w: f32[77, 90], %b: f32[77]) {\n  %y = linear(%x, %w, %b)\n  return (%y)\n}"},
    {"gemv_one_row_b_row_major", "graph g(%a: f32[1, 50], %b: f32[50, 33]) {\n  %c = matmul(%a, %b)\n  return (%c)\n}"},
    {"gemv_one_row_a_strided", "graph g(%a: f32[1, 60] strides=[1, 2], %b: f32[60, 41]) {\n  %c = matmul(%a, %b)\n  return (%c)\n}"},
    {"gemv_one_row_f64", "graph g(%a: f64[1, 70], %b: f64[70, 45]) {\n  %c = matmul(%a, %b)\n  return (%c)\n}"},
    // Below 2 MFLOP but over 32K floats of operands (kRkGemmParallelFloats): memory-bound, on
    // two threads all the same (regnet_y_400mf's classifier, 440 -> 1000; an odd one), and a
    // 1x1 conv on one pixel with weights as large (a squeeze-excite's), by rows of its weights.
    {"gemv_one_row_memory_bound", "graph g(%x: f32[1, 440], %w: f32[1000, 440], %b: f32[1000]) {\n  %y = linear(%x, %w, %b)\n  return (%y)\n}"},
    {"gemv_one_row_memory_bound_odd", "graph g(%a: f32[1, 301], %b: f32[301, 111]) {\n  %c = matmul(%a, %b)\n  return (%c)\n}"},
    {"conv_1x1_one_pixel_memory_bound",
     "graph g(%x: f32[1, 110, 1, 1], %w: f32[441, 110, 1, 1], %b: f32[441]) {\n  %y = conv2d(%x, %w, %b)\n  %s = sigmoid(%y)\n  return (%s)\n}"},
    {"gemm_a_transposed_stays_on_blas", "graph g(%a: f32[45, 97] strides=[1, 45], %b: f32[97, 301]) {\n  %c = matmul(%a, %b)\n  return (%c)\n}"},
    // im2col: padding, stride, dilation, groups, a kernel larger than the padding, odd planes.
    {"conv_pad_stride",
     "graph g(%x: f32[2, 5, 23, 19], %w: f32[8, 5, 3, 3], %b: f32[8]) {\n  %y = conv2d(%x, %w, %b, stride=[2, 2], padding=[1, 1])\n  return (%y)\n}"},
    {"conv_7x7_stride2",
     "graph g(%x: f32[1, 3, 45, 37], %w: f32[16, 3, 7, 7], %b: f32[16]) {\n  %y = conv2d(%x, %w, %b, stride=[2, 2], padding=[3, 3])\n  return "
     "(%y)\n}"},
    {"conv_dilated_groups",
     "graph g(%x: f32[1, 8, 17, 21], %w: f32[12, 4, 3, 3], %b: f32[12]) {\n  %y = conv2d(%x, %w, %b, stride=[1, 2], padding=[2, 0], dilation=[2, 1], "
     "groups=2)\n  return (%y)\n}"},
    {"conv_1x1_stride2", "graph g(%x: f32[1, 40, 15, 15], %w: f32[24, 40, 1, 1]) {\n  %y = conv2d(%x, %w, stride=[2, 2])\n  return (%y)\n}"},
    {"conv_1x1_plane_of_one", "graph g(%x: f32[3, 64, 1, 1], %w: f32[10, 64, 1, 1], %b: f32[10]) {\n  %y = conv2d(%x, %w, %b)\n  return (%y)\n}"},
    {"conv_strided_input",
     "graph g(%x: f32[1, 6, 13, 11] strides=[858, 1, 66, 6], %w: f32[7, 6, 3, 3], %b: f32[7]) {\n  %y = conv2d(%x, %w, %b, padding=[1, 1])\n  return "
     "(%y)\n}"},
    // The float conv GEMM (cpp_conv_gemm.h) above 2 MFLOP, on two threads. Small weights: each
    // thread packs a group of panels and runs every row over it; 21 rows leave 5 below a block
    // of 8; 40-wide rows put 16-pixel halves on one row (a masked load) and across two (a gather).
    // (15 channels: below the Winograd path's 16.)
    {"conv_gemm_panel_groups",
     "graph g(%x: f32[1, 15, 40, 40], %w: f32[21, 15, 3, 3], %b: f32[21]) {\n  %y = conv2d(%x, %w, %b, padding=[1, 1])\n  return (%y)\n}"},
    // Weights over 1 MiB (133 x 2052 floats): panels packed first, tiles of rows shared out; 81
    // pixels leave a last panel of 17 columns.
    {"conv_gemm_row_tiles", "graph g(%x: f32[1, 228, 9, 9], %w: f32[133, 228, 3, 3]) {\n  %y = conv2d(%x, %w, padding=[1, 1])\n  return (%y)\n}"},
    // The last panel in its own shape (rk_tail_shape): N = 32 + 1, 4, 3 (columns dotted along K),
    // 9 (a vector, partly stored), 16, 18, 19, 20 (a vector and dotted columns), 25 (two vectors,
    // partly stored); N = 4 and 17 alone; 7 x 7 as resnet18's layer4. K = 45 (not a multiple of
    // 16), 13 rows (not a multiple of 8 or 4).
    {"conv_gemm_last_panel_shapes",
     "graph g(%x0: f32[1, 5, 1, 33], %x1: f32[1, 5, 6, 6], %x2: f32[1, 5, 5, 7], %x3: f32[1, 5, 1, 41], %x4: f32[1, 5, 6, 8], %x5: f32[1, 5, 5, 10], "
     "%x6: f32[1, 5, 3, 17], %x7: f32[1, 5, 4, 13], %x8: f32[1, 5, 3, 19], %x9: f32[1, 5, 2, 2], %x10: f32[1, 5, 1, 17], %x11: f32[1, 5, 7, 7], %w: "
     "f32[13, 5, 3, 3]) {\n"
     "  %y0 = conv2d(%x0, %w, padding=[1, 1])\n  %y1 = conv2d(%x1, %w, padding=[1, 1])\n  %y2 = conv2d(%x2, %w, padding=[1, 1])\n  %y3 = conv2d(%x3, "
     "%w, padding=[1, 1])\n  %y4 = conv2d(%x4, %w, padding=[1, 1])\n  %y5 = conv2d(%x5, %w, padding=[1, 1])\n  %y6 = conv2d(%x6, %w, padding=[1, "
     "1])\n  %y7 = conv2d(%x7, %w, padding=[1, 1])\n  %y8 = conv2d(%x8, %w, padding=[1, 1])\n  %y9 = conv2d(%x9, %w, padding=[1, 1])\n  %y10 = "
     "conv2d(%x10, %w, padding=[1, 1])\n  %y11 = conv2d(%x11, %w, padding=[1, 1])\n"
     "  return (%y0, %y1, %y2, %y3, %y4, %y5, %y6, %y7, %y8, %y9, %y10, %y11)\n}"},
    // Winograd F(2x2, 3x3) (cpp_conv_winograd.h: 3x3 stride 1, 16 channels and 16 outputs or
    // more, 128 tiles or more): odd output sizes (a last tile half outside, down and right), 21
    // rows (5 below a block of 8), a batch of 2, bias and relu after it; padding 0 with a last
    // panel of 8 tiles (the 16-wide kernel); padding 2 and 0 (asymmetric); one tile a row (32
    // runs a panel); an input read through channel-last strides.
    {"winograd_odd_sizes_epilogue",
     "graph g(%x: f32[2, 16, 23, 25], %w: f32[21, 16, 3, 3], %b: f32[21]) {\n  %y = conv2d(%x, %w, %b, padding=[1, 1])\n  %r = relu(%y)\n  return "
     "(%r)\n}"},
    {"winograd_last_panel_of_8", "graph g(%x: f32[1, 17, 18, 35], %w: f32[16, 17, 3, 3]) {\n  %y = conv2d(%x, %w)\n  return (%y)\n}"},
    {"winograd_padding_2_0", "graph g(%x: f32[1, 16, 24, 24], %w: f32[18, 16, 3, 3]) {\n  %y = conv2d(%x, %w, padding=[2, 0])\n  return (%y)\n}"},
    {"winograd_one_tile_a_row", "graph g(%x: f32[1, 16, 256, 1], %w: f32[16, 16, 3, 3]) {\n  %y = conv2d(%x, %w, padding=[1, 1])\n  return (%y)\n}"},
    // Convs whose scratch, were it the conv GEMM's panels alone (24 x 24 x 16: 18 panels of 144 x
    // 32 floats; 27 x 27 x 48), would hold U and one thread's panel only, or not even that: each
    // is given room for its threads (winograd_room in emit_linalg.cpp), squeezenet1_0's shape too.
    {"winograd_room_for_its_threads",
     "graph g(%x: f32[1, 16, 24, 24], %w: f32[64, 16, 3, 3]) {\n  %y = conv2d(%x, %w, padding=[1, 1])\n  return (%y)\n}"},
    {"winograd_room_for_320_outputs",
     "graph g(%x: f32[1, 16, 24, 24], %w: f32[320, 16, 3, 3]) {\n  %y = conv2d(%x, %w, padding=[1, 1])\n  return (%y)\n}"},
    {"winograd_many_channels_on_a_small_plane",
     "graph g(%x: f32[1, 48, 27, 27], %w: f32[192, 48, 3, 3], %b: f32[192]) {\n  %y = conv2d(%x, %w, %b, padding=[1, 1])\n  %r = relu(%y)\n  return "
     "(%r)\n}"},
    {"winograd_strided_input",
     "graph g(%x: f32[1, 16, 24, 22] strides=[8448, 1, 352, 16], %w: f32[24, 16, 3, 3], %b: f32[24]) {\n  %y = conv2d(%x, %w, %b, padding=[1, 1])\n  "
     "return (%y)\n}"},
    // Groups and images each too small a GEMM for threads, shared out between the threads with
    // panels of their own: regnet_y_400mf's groups of 8 channels with a bias and relu; a batch of
    // 3 small images with a per-channel scale; groups and a batch together at stride 2.
    {"conv_groups_shared_out",
     "graph g(%x: f32[1, 208, 28, 28], %w: f32[208, 8, 3, 3], %b: f32[208]) {\n  %y = conv2d(%x, %w, %b, padding=[1, 1], groups=26)\n  %r = "
     "relu(%y)\n  return (%r)\n}"},
    {"conv_images_shared_out",
     "graph g(%x: f32[3, 16, 12, 12], %w: f32[24, 16, 3, 3], %s: f32[1, 24, 1, 1]) {\n  %y = conv2d(%x, %w, padding=[1, 1])\n  %m = mul(%y, "
     "%s)\n  return (%m)\n}"},
    {"conv_groups_and_images_shared_out",
     "graph g(%x: f32[2, 32, 15, 15], %w: f32[32, 8, 3, 3]) {\n  %y = conv2d(%x, %w, stride=[2, 2], padding=[1, 1], groups=4)\n  return (%y)\n}"},
    // Few tiles (a 7 x 7 plane is two panels): rows cut evenly, two tiles a thread, in blocks of 8;
    // or one a thread where that leaves less on the busiest (112 rows: two tiles of 56, not four
    // of 32; 72 rows and a batch norm: 40 and 32).
    {"conv_gemm_rows_cut_evenly", "graph g(%x: f32[1, 200, 7, 7], %w: f32[164, 200, 1, 1]) {\n  %y = conv2d(%x, %w)\n  return (%y)\n}"},
    {"conv_gemm_rows_in_one_tile_a_thread", "graph g(%x: f32[1, 96, 14, 14], %w: f32[112, 96, 1, 1]) {\n  %y = conv2d(%x, %w)\n  return (%y)\n}"},
    {"conv_gemm_rows_in_one_tile_a_thread_epilogue",
     "graph g(%x: f32[1, 160, 14, 14], %w: f32[72, 160, 1, 1], %s: f32[72, 1, 1]) {\n  %y = conv2d(%x, %w)\n  %z = mul(%y, %s)\n  return (%z)\n}"},
    // 1x1 stride-1 convs with K >= 2 M read their input in place, the last panel packed: N = 114
    // (3 x 32 + 18: a vector and two dotted columns), a batch of 2 and 2 groups; 900 -> 300
    // (weights over 1 MiB: tiles of rows, two threads) with N = 72 (a last panel of 8); the same
    // conv over channel-last strides is packed.
    {"conv_1x1_in_place_groups",
     "graph g(%x: f32[2, 80, 6, 19], %w: f32[20, 40, 1, 1], %b: f32[20]) {\n  %y = conv2d(%x, %w, %b, groups=2)\n  return (%y)\n}"},
    {"conv_1x1_in_place_row_tiles", "graph g(%x: f32[1, 900, 8, 9], %w: f32[300, 900, 1, 1]) {\n  %y = conv2d(%x, %w)\n  return (%y)\n}"},
    // ... and N = 95 (a last panel of 31 columns, in the 32-wide kernel: read from its packed
    // copy, not in place past N).
    {"conv_1x1_in_place_last_panel_of_31", "graph g(%x: f32[1, 40, 5, 19], %w: f32[16, 40, 1, 1]) {\n  %y = conv2d(%x, %w)\n  return (%y)\n}"},
    {"conv_1x1_channels_last_packed",
     "graph g(%x: f32[1, 40, 6, 19] strides=[4560, 1, 760, 40], %w: f32[16, 40, 1, 1]) {\n  %y = conv2d(%x, %w)\n  return (%y)\n}"},
    // K at most 128 with an epilogue: 16 rows at a time across each chunk of panels (20 rows:
    // 16 and 4; 56: three of 16 and 8), groups of panels on two threads (48 and 67 panels), each
    // packed into its thread's own slot; read in place with a short last panel (13 columns), or
    // packed (a last of 3: dotted columns).
    {"conv_1x1_in_place_rows_of_16_relu",
     "graph g(%x: f32[1, 40, 37, 41], %w: f32[20, 40, 1, 1], %b: f32[20]) {\n  %y = conv2d(%x, %w, %b)\n  %r = relu(%y)\n  return (%r)\n}"},
    {"conv_1x1_shallow_rows_of_16_clamp",
     "graph g(%x: f32[1, 16, 45, 47], %w: f32[56, 16, 1, 1], %b: f32[56]) {\n  %y = conv2d(%x, %w, %b)\n  %c = clamp(%y, min=0, max=6)\n  return "
     "(%c)\n}"},
    // Fewer panels than 4 a thread (14 x 14: six and a last of 4 columns, dotted) with an
    // epilogue: on two threads, tiles of rows across all the panels; on one, groups of 3.
    {"conv_1x1_seven_panels_relu",
     "graph g(%x: f32[1, 64, 14, 14], %w: f32[200, 64, 1, 1], %b: f32[200]) {\n  %y = conv2d(%x, %w, %b)\n  %r = relu(%y)\n  return (%r)\n}"},
    // Planes narrower than 16 pixels: each 16 pixels of a panel read as runs along an output row
    // (masked loads), up to four a half (5 x 5: runs of 5, 5, 5, 1), more gathered (6 x 3: six
    // rows in 16 pixels), and at stride 2 (7 x 7 out of 14 x 14).
    {"conv_gemm_runs_of_five", "graph g(%x: f32[1, 20, 5, 5], %w: f32[24, 20, 3, 3]) {\n  %y = conv2d(%x, %w, padding=[1, 1])\n  return (%y)\n}"},
    {"conv_gemm_runs_of_three", "graph g(%x: f32[1, 20, 6, 3], %w: f32[24, 20, 3, 3]) {\n  %y = conv2d(%x, %w, padding=[1, 1])\n  return (%y)\n}"},
    {"conv_gemm_runs_stride2",
     "graph g(%x: f32[1, 24, 14, 14], %w: f32[40, 24, 3, 3], %b: f32[40]) {\n  %y = conv2d(%x, %w, %b, stride=[2, 2], padding=[1, 1])\n  return "
     "(%y)\n}"},
    // K deeper than a slice (AVX2 multiplies K 256 at a time, 1024 from K = 2048) and a last short
    // slice, under last panels of 17 and 4 columns, with padding, stride and dilation in the pack:
    // the first two GEMMs in tiles, the third in groups of panels; then K = 2070 (1024 + 1024 +
    // 22) on a 7 x 7 plane with a bias and relu.
    {"conv_gemm_deep_k_slices",
     "graph g(%x: f32[1, 40, 9, 9], %w: f32[24, 40, 3, 3], %x2: f32[1, 36, 11, 11], %w2: f32[20, 36, 3, 3], %x3: f32[1, 30, 24, 24], %w3: "
     "f32[8, 30, 3, 3]) {\n  %y = conv2d(%x, %w, padding=[1, 1])\n  %y2 = conv2d(%x2, %w2, stride=[2, 2], padding=[2, 2], dilation=[2, 2])\n"
     "  %y3 = conv2d(%x3, %w3, padding=[1, 1])\n  return (%y, %y2, %y3)\n}"},
    {"conv_gemm_deeper_k_slices",
     "graph g(%x: f32[1, 230, 7, 7], %w: f32[20, 230, 3, 3], %b: f32[20]) {\n  %y = conv2d(%x, %w, %b, padding=[1, 1])\n  %r = relu(%y)\n"
     "  return (%r)\n}"},
    // A last panel's 1 to 4 columns past its vectors as dot products along K where there is no
    // AVX-512 (rk_dot_block): N = 50 and 51 (48 + 2, 48 + 3), K = 207 (steps of 8 and a tail of 7)
    // read inside the image (no padding) and 576 (slices added up), 200 and 100 rows (a short block
    // at the end of each).
    {"conv_gemm_dot_columns",
     "graph g(%x: f32[1, 23, 7, 12], %w: f32[200, 23, 3, 3], %x2: f32[1, 64, 3, 17], %w2: f32[100, 64, 3, 3]) {\n  %y = conv2d(%x, %w)\n"
     "  %y2 = conv2d(%x2, %w2, padding=[1, 1])\n  return (%y, %y2)\n}"},
    // Stride 2 and a batch of 2, above the threshold.
    {"conv_gemm_stride2_batch",
     "graph g(%x: f32[2, 24, 33, 31], %w: f32[32, 24, 3, 3], %b: f32[32]) {\n  %y = conv2d(%x, %w, %b, stride=[2, 2], padding=[1, 1])\n  return "
     "(%y)\n}"},
    // Direct kernels (conv2d_planes: a flattened output plane at a time over a padded copy of the
    // input plane, split by row and column phase modulo the stride): depthwise (stride 2, padding), a channel
    // multiplier, a 2-input-tap conv; the batch norm and clamp of mobilenet_v2 as its epilogue,
    // above the parallel threshold; stride 3 with dilation 2 (taps in all three phases) and
    // padding wider than the kernel (first rows all padding: the bias alone); channel-last
    // strides; one output column; a plane too large for the stack; a window of over 7 x 7 taps;
    // f64 with relu; the conv also returned (no epilogue).
    {"depthwise_stride2",
     "graph g(%x: f32[2, 16, 25, 25], %w: f32[16, 1, 3, 3], %b: f32[16]) {\n  %y = conv2d(%x, %w, %b, stride=[2, 2], padding=[1, 1], groups=16)\n  "
     "return (%y)\n}"},
    {"depthwise_multiplier",
     "graph g(%x: f32[1, 4, 9, 30], %w: f32[8, 1, 5, 5]) {\n  %y = conv2d(%x, %w, padding=[2, 2], groups=4)\n  return (%y)\n}"},
    {"few_taps", "graph g(%x: f32[1, 2, 31, 7], %w: f32[3, 2, 1, 3], %b: f32[3]) {\n  %y = conv2d(%x, %w, %b, padding=[0, 1])\n  return (%y)\n}"},
    {"depthwise_epilogue_batch_norm_clamp",
     "graph g(%x: f32[2, 32, 40, 37], %w: f32[32, 1, 3, 3], %m: f32[1, 32, 1, 1], %s: f32[1, 32, 1, 1], %t: f32[1, 32, 1, 1]) {\n"
     "  %y = conv2d(%x, %w, padding=[1, 1], groups=32)\n  %a = sub(%y, %m)\n  %b = mul(%a, %s)\n  %c = add(%b, %t)\n  %d = clamp(%c, min=0, max=6)\n "
     " return (%d)\n}"},
    {"depthwise_stride3_dilation2",
     "graph g(%x: f32[1, 3, 20, 29], %w: f32[3, 1, 3, 4], %b: f32[3]) {\n  %y = conv2d(%x, %w, %b, stride=[2, 3], padding=[5, 7], dilation=[2, 2], "
     "groups=3)\n  return (%y)\n}"},
    {"depthwise_channels_last",
     "graph g(%x: f32[1, 6, 11, 13] strides=[858, 1, 78, 6], %w: f32[6, 1, 3, 3], %b: f32[6]) {\n  %y = conv2d(%x, %w, %b, stride=[1, 2], "
     "padding=[1, 1], groups=6)\n  %r = relu(%y)\n  return (%r)\n}"},
    {"depthwise_one_column",
     "graph g(%x: f32[1, 4, 6, 2], %w: f32[4, 1, 3, 4], %b: f32[4]) {\n  %y = conv2d(%x, %w, %b, padding=[1, 1], groups=4)\n  return (%y)\n}"},
    // Planes whose copy and sums pass 16 KiB go a strip of 8 to 16 output rows at a time, each
    // strip copying the input rows under its edge again: 4 strips of 16 with a batch-norm scale
    // and clamp as the epilogue; stride 2 (3 strips of 16, a batch of 2, no epilogue); 5 x 5
    // (4 strips of 15, four rows under each edge) with a bias.
    {"depthwise_strips_epilogue",
     "graph g(%x: f32[1, 4, 64, 70], %w: f32[4, 1, 3, 3], %s: f32[1, 4, 1, 1]) {\n  %y = conv2d(%x, %w, padding=[1, 2], dilation=[1, 2], groups=4)\n "
     " "
     "%m = mul(%y, %s)\n  %c = clamp(%m, min=0, max=6)\n  return (%c)\n}"},
    {"depthwise_strips_stride2",
     "graph g(%x: f32[2, 3, 96, 90], %w: f32[3, 1, 3, 3]) {\n  %y = conv2d(%x, %w, stride=[2, 2], padding=[1, 1], groups=3)\n  return (%y)\n}"},
    {"depthwise_strips_5x5",
     "graph g(%x: f32[1, 2, 60, 60], %w: f32[2, 1, 5, 5], %b: f32[2]) {\n  %y = conv2d(%x, %w, %b, padding=[2, 2], groups=2)\n  return (%y)\n}"},
    {"depthwise_plane_on_the_heap",
     "graph g(%x: f32[1, 2, 3, 4500], %w: f32[2, 1, 3, 3]) {\n  %y = conv2d(%x, %w, stride=[2, 2], padding=[1, 1], groups=2)\n  return (%y)\n}"},
    {"depthwise_large_window",  // over 7 x 7 taps: a pass per tap, every phase present
     "graph g(%x: f32[1, 3, 20, 23], %w: f32[3, 1, 9, 8], %b: f32[3]) {\n  %y = conv2d(%x, %w, %b, stride=[2, 3], padding=[4, 6], dilation=[1, 2], "
     "groups=3)\n  return (%y)\n}"},
    {"depthwise_f64_relu",
     "graph g(%x: f64[1, 8, 15, 17], %w: f64[8, 1, 5, 5], %b: f64[8]) {\n  %y = conv2d(%x, %w, %b, padding=[2, 2], groups=8)\n  %r = relu(%y)\n  "
     "return (%r)\n}"},
    {"depthwise_also_returned",
     "graph g(%x: f32[1, 4, 9, 9], %w: f32[4, 1, 3, 3]) {\n  %y = conv2d(%x, %w, stride=[2, 2], groups=4)\n  %r = relu(%y)\n  return (%r, %y)\n}"},
    // Depthwise convs on AVX-512 a row of output a vector (cpp_conv_depthwise.h: rows up to 16
    // wide, 16 at a time (8 at stride 2), or two rows a vector up to 8 wide; 3x3, 5x5 and 7x7
    // taps; the epilogue on groups of up to 16 planes): 5x5 with mobilenet's batch norm and clamp
    // as the epilogue, a batch of 2 and 20 channels; 3x3 at stride 2 to pairs of rows of 7 with a
    // batch norm and clamp, a batch of 2 of 12 channels (groups of 16 planes across both images);
    // 3x3 on 20 rows of 12 (a block of 16 rows and a last of 4); 5x5 at stride 2 on an odd plane
    // (a last input row no window reaches; rows of 7 in pairs) and on rows of 32 (two vectors,
    // their even and odd lanes); 7x7 on a plane wider than high with a bias and relu; 7x7 on rows
    // of 7, 9 of them (a last pair of one row); 5x5 at stride 2 from rows of 16 to pairs of rows
    // of 8, a batch of 2; 3x3 on rows of 16 (9 rows: a block short of 16) with a bias alone; 5x5
    // without padding; input planes further apart than their size (a slice of channels); a plane
    // of one pixel.
    {"depthwise_rows_5x5_batch_norm_clamp",
     "graph g(%x: f32[2, 20, 14, 14], %w: f32[20, 1, 5, 5], %m: f32[1, 20, 1, 1], %s: f32[1, 20, 1, 1], %t: f32[1, 20, 1, 1]) {\n"
     "  %y = conv2d(%x, %w, padding=[2, 2], groups=20)\n  %a = sub(%y, %m)\n  %b = mul(%a, %s)\n  %c = add(%b, %t)\n  %d = clamp(%c, min=0, max=6)\n "
     " return (%d)\n}"},
    {"depthwise_rows_3x3_stride2_groups_across_images",
     "graph g(%x: f32[2, 12, 13, 13], %w: f32[12, 1, 3, 3], %m: f32[1, 12, 1, 1], %s: f32[1, 12, 1, 1], %t: f32[1, 12, 1, 1]) {\n"
     "  %y = conv2d(%x, %w, stride=[2, 2], padding=[1, 1], groups=12)\n  %a = sub(%y, %m)\n  %b = mul(%a, %s)\n  %c = add(%b, %t)\n"
     "  %d = clamp(%c, min=0, max=6)\n  return (%d)\n}"},
    {"depthwise_rows_3x3_two_blocks_of_rows",
     "graph g(%x: f32[1, 6, 20, 12], %w: f32[6, 1, 3, 3], %b: f32[6]) {\n  %y = conv2d(%x, %w, %b, padding=[1, 1], groups=6)\n  return (%y)\n}"},
    {"depthwise_rows_5x5_stride2_odd",
     "graph g(%x: f32[1, 17, 13, 13], %w: f32[17, 1, 5, 5], %b: f32[17]) {\n  %y = conv2d(%x, %w, %b, stride=[2, 2], padding=[2, 2], groups=17)\n  "
     "%r = relu(%y)\n  return (%r)\n}"},
    {"depthwise_rows_5x5_stride2_two_vectors",
     "graph g(%x: f32[1, 3, 11, 32], %w: f32[3, 1, 5, 5]) {\n  %y = conv2d(%x, %w, stride=[2, 2], padding=[2, 2], groups=3)\n  return (%y)\n}"},
    {"depthwise_rows_7x7_bias_relu",
     "graph g(%x: f32[1, 5, 9, 15], %w: f32[5, 1, 7, 7], %b: f32[5]) {\n  %y = conv2d(%x, %w, %b, padding=[3, 3], groups=5)\n  %r = relu(%y)\n  "
     "return (%r)\n}"},
    {"depthwise_rows_7x7_pairs_odd_rows",
     "graph g(%x: f32[1, 18, 9, 7], %w: f32[18, 1, 7, 7], %b: f32[18]) {\n  %y = conv2d(%x, %w, %b, padding=[3, 3], groups=18)\n  %r = relu(%y)\n  "
     "return (%r)\n}"},
    {"depthwise_rows_5x5_stride2_pairs_of_eight",
     "graph g(%x: f32[2, 5, 16, 16], %w: f32[5, 1, 5, 5]) {\n  %y = conv2d(%x, %w, stride=[2, 2], padding=[2, 2], groups=5)\n  return (%y)\n}"},
    {"depthwise_rows_3x3_sixteen_wide_bias",
     "graph g(%x: f32[2, 6, 9, 16], %w: f32[6, 1, 3, 3], %b: f32[6]) {\n  %y = conv2d(%x, %w, %b, padding=[1, 1], groups=6)\n  return (%y)\n}"},
    {"depthwise_rows_5x5_no_padding",
     "graph g(%x: f32[1, 4, 12, 12], %w: f32[4, 1, 5, 5], %b: f32[4]) {\n  %y = conv2d(%x, %w, %b, groups=4)\n  %r = relu(%y)\n  return (%r)\n}"},
    {"depthwise_rows_channel_slice",
     "graph g(%x: f32[1, 16, 10, 12] strides=[4000, 240, 12, 1], %w: f32[16, 1, 3, 3]) {\n  %y = conv2d(%x, %w, padding=[1, 1], groups=16)\n  "
     "%r = relu(%y)\n  return (%r)\n}"},
    // Wider planes at stride 1, 16 rows a block for 3x3 and 5x5: 37 rows (two blocks and 5 over)
    // of 29 (a block of 16 columns and 13), a batch of 2 of 40 columns.
    {"depthwise_wide_3x3_rows_in_blocks_of_16",
     "graph g(%x: f32[1, 5, 37, 29], %w: f32[5, 1, 3, 3], %b: f32[5]) {\n  %y = conv2d(%x, %w, %b, padding=[1, 1], groups=5)\n  %r = relu(%y)\n  "
     "return (%r)\n}"},
    {"depthwise_wide_5x5_batch",
     "graph g(%x: f32[2, 3, 20, 40], %w: f32[3, 1, 5, 5]) {\n  %y = conv2d(%x, %w, padding=[2, 2], groups=3)\n  return (%y)\n}"},
    {"depthwise_rows_one_pixel",
     "graph g(%x: f32[1, 8, 3, 3], %w: f32[8, 1, 5, 5], %b: f32[8]) {\n  %y = conv2d(%x, %w, %b, stride=[2, 2], padding=[1, 1], groups=8)\n  "
     "return (%y)\n}"},
    // 5x5 and 7x7 depthwise convs on planes wider than 16 (cpp_conv_depthwise.h, blocks of 16
    // columns, 8 rows at a time): 7x7 on rows of 20 (a block and a last of 4) and 19 rows (a
    // block short of 8) with a bias and relu; 5x5 at stride 2 from 40 x 37 (rows of 20 and 19)
    // with mobilenet's batch norm and clamp, a batch of 2; 7x7 at stride 2 (taps shifted 3
    // lanes, the row's third vector past the input); 5x5 without padding on rows of 24; one row
    // of 40; a slice of channels; 7x7 on a plane exactly 32 wide.
    {"depthwise_wide_7x7_bias_relu",
     "graph g(%x: f32[1, 6, 19, 20], %w: f32[6, 1, 7, 7], %b: f32[6]) {\n  %y = conv2d(%x, %w, %b, padding=[3, 3], groups=6)\n  %r = relu(%y)\n  "
     "return (%r)\n}"},
    {"depthwise_wide_5x5_stride2_batch_norm_clamp",
     "graph g(%x: f32[2, 10, 40, 37], %w: f32[10, 1, 5, 5], %m: f32[1, 10, 1, 1], %s: f32[1, 10, 1, 1], %t: f32[1, 10, 1, 1]) {\n"
     "  %y = conv2d(%x, %w, stride=[2, 2], padding=[2, 2], groups=10)\n  %a = sub(%y, %m)\n  %b = mul(%a, %s)\n  %c = add(%b, %t)\n"
     "  %d = clamp(%c, min=0, max=6)\n  return (%d)\n}"},
    {"depthwise_wide_7x7_stride2",
     "graph g(%x: f32[1, 5, 21, 35], %w: f32[5, 1, 7, 7], %b: f32[5]) {\n  %y = conv2d(%x, %w, %b, stride=[2, 2], padding=[3, 3], groups=5)\n  "
     "return (%y)\n}"},
    {"depthwise_wide_5x5_no_padding",
     "graph g(%x: f32[1, 4, 12, 24], %w: f32[4, 1, 5, 5]) {\n  %y = conv2d(%x, %w, groups=4)\n  %r = relu(%y)\n  return (%r)\n}"},
    {"depthwise_wide_7x7_one_row",
     "graph g(%x: f32[1, 3, 1, 40], %w: f32[3, 1, 7, 7], %b: f32[3]) {\n  %y = conv2d(%x, %w, %b, padding=[3, 3], groups=3)\n  return (%y)\n}"},
    {"depthwise_wide_5x5_channel_slice",
     "graph g(%x: f32[1, 8, 9, 30] strides=[9000, 270, 30, 1], %w: f32[8, 1, 5, 5]) {\n  %y = conv2d(%x, %w, padding=[2, 2], groups=8)\n  "
     "%r = relu(%y)\n  return (%r)\n}"},
    // AVX2's form (blocks of 8 columns, on rows of at least 8; at stride 2 to rows of one
    // block): 7x7 on rows of exactly 8 (each window the whole row, both ends in one block); 5x5
    // at stride 2 from rows of 9 (one block of 5, its windows past both ends) with a SiLU; 7x7 at
    // stride 2 from rows of 15 (one block of 8); rows of 7, which it leaves to the direct conv.
    {"depthwise_avx2_7x7_rows_of_eight",
     "graph g(%x: f32[1, 3, 10, 8], %w: f32[3, 1, 7, 7], %b: f32[3]) {\n  %y = conv2d(%x, %w, %b, padding=[3, 3], groups=3)\n  return (%y)\n}"},
    {"depthwise_avx2_5x5_stride2_rows_of_nine_silu",
     "graph g(%x: f32[2, 4, 11, 9], %w: f32[4, 1, 5, 5], %t: f32[1, 4, 1, 1]) {\n"
     "  %y = conv2d(%x, %w, stride=[2, 2], padding=[2, 2], groups=4)\n  %a = add(%y, %t)\n  %s = silu(%a)\n  return (%s)\n}"},
    {"depthwise_avx2_7x7_stride2_rows_of_fifteen",
     "graph g(%x: f32[1, 5, 13, 15], %w: f32[5, 1, 7, 7]) {\n  %y = conv2d(%x, %w, stride=[2, 2], padding=[3, 3], groups=5)\n  return (%y)\n}"},
    {"depthwise_avx2_5x5_rows_of_seven",
     "graph g(%x: f32[1, 6, 7, 7], %w: f32[6, 1, 5, 5], %b: f32[6]) {\n  %y = conv2d(%x, %w, %b, padding=[2, 2], groups=6)\n  %r = relu(%y)\n"
     "  return (%r)\n}"},
    // 3x3 on the same kernel: stride 1 on rows of 37 (two blocks and a last of 5) with the batch
    // norm and clamp; stride 2 to rows of 25 and to rows of exactly 32; to rows of 33, the
    // direct kernel's (rows over 32 at stride 2).
    {"depthwise_wide_3x3_batch_norm_clamp",
     "graph g(%x: f32[1, 12, 21, 37], %w: f32[12, 1, 3, 3], %m: f32[1, 12, 1, 1], %s: f32[1, 12, 1, 1], %t: f32[1, 12, 1, 1]) {\n"
     "  %y = conv2d(%x, %w, padding=[1, 1], groups=12)\n  %a = sub(%y, %m)\n  %b = mul(%a, %s)\n  %c = add(%b, %t)\n"
     "  %d = clamp(%c, min=0, max=6)\n  return (%d)\n}"},
    {"depthwise_wide_3x3_stride2",
     "graph g(%x: f32[2, 7, 19, 50], %w: f32[7, 1, 3, 3], %b: f32[7]) {\n  %y = conv2d(%x, %w, %b, stride=[2, 2], padding=[1, 1], groups=7)\n  "
     "return (%y)\n}"},
    {"depthwise_wide_3x3_stride2_thirty_two",
     "graph g(%x: f32[1, 5, 16, 64], %w: f32[5, 1, 3, 3]) {\n  %y = conv2d(%x, %w, stride=[2, 2], padding=[1, 1], groups=5)\n  %r = relu(%y)\n"
     "  return (%r)\n}"},
    {"depthwise_direct_3x3_stride2_rows_of_33",
     "graph g(%x: f32[1, 6, 14, 66], %w: f32[6, 1, 3, 3], %b: f32[6]) {\n  %y = conv2d(%x, %w, %b, stride=[2, 2], padding=[1, 1], groups=6)\n  "
     "return (%y)\n}"},
    {"depthwise_wide_7x7_thirty_two",
     "graph g(%x: f32[1, 4, 16, 32], %w: f32[4, 1, 7, 7], %b: f32[4]) {\n  %y = conv2d(%x, %w, %b, padding=[3, 3], groups=4)\n  return (%y)\n}"},
    // Convs of 2 to 8 input channels a group, 16 output pixels of a row a vector on AVX-512, 8 on
    // AVX2 (cpp_conv_few_channels.h; strips of output rows, 8 output channels at a time on
    // AVX-512 and 4 on AVX2, then 4, 2, 1): a network's first conv, 3x3 at stride 2 with mobilenet's batch norm and clamp, a batch
    // of 2 and 20 outputs (8, 8, 4) on rows of 18 (a vector and a last of 2); 7x7 at stride 2
    // with resnet's padding, 11 outputs (8, 2, 1), a bias and relu, rows of 25; 5x5 at stride 1
    // on 2 channels read through a channel slice, rows of exactly 3 vectors; 2 groups of 4
    // channels (6 outputs each); input rows further apart than their width, 3 outputs; a
    // column of output one pixel wide; rows so wide that a strip holds 2 output rows (7x7 on
    // 3 x 600); rows too wide for any strip (11 x 11 taps at stride 2 on rows of 700: the conv
    // GEMM). Groups of 8 channels at stride 2 with a bias and relu, 4 groups of 16 outputs on
    // rows of 15 (as many outputs as inputs a group go to cpp_conv_grouped.h); 7 channels, a
    // batch of 2, 13 outputs (8, 4, 1) and a scale and shift after; 8 channels of 9 x 9 taps,
    // more than the kernel holds (the conv GEMM).
    {"few_channels_stem_batch_norm_clamp",
     "graph g(%x: f32[2, 3, 37, 35], %w: f32[20, 3, 3, 3], %m: f32[1, 20, 1, 1], %s: f32[1, 20, 1, 1], %t: f32[1, 20, 1, 1]) {\n"
     "  %y = conv2d(%x, %w, stride=[2, 2], padding=[1, 1])\n  %a = sub(%y, %m)\n  %b = mul(%a, %s)\n  %c = add(%b, %t)\n"
     "  %d = clamp(%c, min=0, max=6)\n  return (%d)\n}"},
    {"few_channels_7x7_stride2_bias_relu",
     "graph g(%x: f32[1, 3, 40, 50], %w: f32[11, 3, 7, 7], %b: f32[11]) {\n  %y = conv2d(%x, %w, %b, stride=[2, 2], padding=[3, 3])\n"
     "  %r = relu(%y)\n  return (%r)\n}"},
    {"few_channels_5x5_channel_slice",
     "graph g(%x: f32[1, 2, 13, 52] strides=[2704, 1352, 52, 1], %w: f32[9, 2, 5, 5]) {\n  %y = conv2d(%x, %w)\n  return (%y)\n}"},
    {"few_channels_groups",
     "graph g(%x: f32[1, 8, 20, 21], %w: f32[12, 4, 3, 3], %b: f32[12]) {\n  %y = conv2d(%x, %w, %b, padding=[1, 1], groups=2)\n"
     "  return (%y)\n}"},
    {"few_channels_rows_apart",
     "graph g(%x: f32[1, 4, 12, 17] strides=[960, 240, 20, 1], %w: f32[3, 4, 3, 3]) {\n  %y = conv2d(%x, %w, stride=[2, 2])\n  return (%y)\n}"},
    {"few_channels_one_column",
     "graph g(%x: f32[1, 3, 9, 2], %w: f32[5, 3, 3, 2], %b: f32[5]) {\n  %y = conv2d(%x, %w, %b, padding=[1, 0])\n  return (%y)\n}"},
    {"few_channels_wide_rows",
     "graph g(%x: f32[1, 3, 9, 600], %w: f32[4, 3, 7, 7]) {\n  %y = conv2d(%x, %w, padding=[3, 3])\n  %r = relu(%y)\n  return (%r)\n}"},
    {"few_channels_rows_too_wide",
     "graph g(%x: f32[1, 3, 13, 700], %w: f32[2, 3, 11, 11]) {\n  %y = conv2d(%x, %w, stride=[2, 2], padding=[5, 5])\n  return (%y)\n}"},
    {"few_channels_groups_of_8_stride2_relu",
     "graph g(%x: f32[1, 32, 29, 30], %w: f32[64, 8, 3, 3], %b: f32[64]) {\n  %y = conv2d(%x, %w, %b, stride=[2, 2], padding=[1, 1], groups=4)\n"
     "  %r = relu(%y)\n  return (%r)\n}"},
    {"few_channels_7_channels_batch_scale",
     "graph g(%x: f32[2, 7, 15, 19], %w: f32[13, 7, 5, 5], %s: f32[1, 13, 1, 1], %t: f32[1, 13, 1, 1]) {\n"
     "  %y = conv2d(%x, %w, padding=[2, 2])\n  %a = mul(%y, %s)\n  %b = add(%a, %t)\n  return (%b)\n}"},
    {"few_channels_8_channels_too_many_taps",
     "graph g(%x: f32[1, 8, 20, 20], %w: f32[4, 8, 9, 9]) {\n  %y = conv2d(%x, %w, padding=[4, 4])\n  return (%y)\n}"},
    // 16 input channels (the few-channel conv on AVX2, Winograd or the conv GEMM on AVX-512): 3x3
    // on rows of 27 (three vectors of 8 and a last of 3) with a relu, 10 outputs (4, 4, 2); 5x5 at
    // stride 2 from an odd plane, 16 x 25 = 400 taps, a batch of 2 and 3 outputs (2, 1).
    {"few_channels_16_channels_relu",
     "graph g(%x: f32[1, 16, 13, 27], %w: f32[10, 16, 3, 3]) {\n  %y = conv2d(%x, %w, padding=[1, 1])\n  %r = relu(%y)\n  return (%r)\n}"},
    {"few_channels_16_channels_5x5_stride2",
     "graph g(%x: f32[2, 16, 19, 23], %w: f32[3, 16, 5, 5], %b: f32[3]) {\n  %y = conv2d(%x, %w, %b, stride=[2, 2], padding=[2, 2])\n"
     "  return (%y)\n}"},
    // On rows of at most 16, the strip's rows as one flat run at pitch out_w + (taps_w - 1) / S,
    // in sub-planes by row and column phase: 5 groups of 8 inputs and 16 outputs at 7 x 7 with a
    // bias and relu, a batch of 2 (4 vectors: a block of 3 and one); 5x5 on 4 channels on rows of exactly 16, 11 rows
    // (strips of 8 and 3), 13 outputs (8, 4, 1); 11 x 11 taps on 4 channels on rows of 10 (the
    // last vector's taps past the strip's rows); a plane of one row. At stride 2: 4 groups of 8
    // inputs and 16 outputs from 14 x 14 to 7 x 7 with a bias and relu; 5x5 on 6 channels from an
    // odd plane, a batch of 2, 5 outputs (4, 1); 7x7 without padding to rows of exactly 16.
    {"few_channels_flat_groups_of_8_7x7",
     "graph g(%x: f32[2, 40, 7, 7], %w: f32[80, 8, 3, 3], %b: f32[80]) {\n  %y = conv2d(%x, %w, %b, padding=[1, 1], groups=5)\n"
     "  %r = relu(%y)\n  return (%r)\n}"},
    {"few_channels_flat_sixteen_wide",
     "graph g(%x: f32[1, 4, 11, 16], %w: f32[13, 4, 5, 5]) {\n  %y = conv2d(%x, %w, padding=[2, 2])\n  return (%y)\n}"},
    {"few_channels_flat_11x11",
     "graph g(%x: f32[1, 4, 12, 14], %w: f32[3, 4, 11, 11], %b: f32[3]) {\n  %y = conv2d(%x, %w, %b, padding=[4, 3])\n  return (%y)\n}"},
    {"few_channels_flat_stride2_groups_of_8",
     "graph g(%x: f32[1, 32, 14, 14], %w: f32[64, 8, 3, 3], %b: f32[64]) {\n  %y = conv2d(%x, %w, %b, stride=[2, 2], padding=[1, 1], groups=4)\n"
     "  %r = relu(%y)\n  return (%r)\n}"},
    {"few_channels_flat_stride2_5x5_odd",
     "graph g(%x: f32[2, 6, 15, 13], %w: f32[5, 6, 5, 5]) {\n  %y = conv2d(%x, %w, stride=[2, 2], padding=[2, 2])\n  return (%y)\n}"},
    {"few_channels_flat_stride2_7x7_sixteen_wide",
     "graph g(%x: f32[1, 3, 21, 37], %w: f32[4, 3, 7, 7], %b: f32[4]) {\n  %y = conv2d(%x, %w, %b, stride=[2, 2])\n  return (%y)\n}"},
    {"few_channels_flat_one_row",
     "graph g(%x: f32[1, 6, 1, 9], %w: f32[5, 6, 3, 3]) {\n  %y = conv2d(%x, %w, padding=[1, 1])\n  %r = relu(%y)\n  return (%r)\n}"},
    // Grouped convs of 4, 8 or 16 channels a group, as many out as in, 3x3, on AVX-512 16 output
    // channels a vector (cpp_conv_grouped.h; 16 / G groups side by side, the input transposed
    // into pixels of 16 channels, 7 output pixels of a row summed at once, the epilogue on each
    // vector of channels x strip of rows), on AVX2 each group on the few-channel conv: groups of 8 at 7 x 7 with a bias and relu, a batch of
    // 2, 40 channels (vectors of 16, 16 and a last of 8); at stride 2 from 14 x 14 to 7 x 7
    // with regnet's batch norm unfolded; groups of 4 on rows of 11 (a block of 7 and 4 summed
    // from the padding) and 9 rows; groups of 16 at stride 2 without padding from an odd plane,
    // a batch of 2; rows of 58 in strips of 4 rows, 61 rows (a last strip of 1); stride 2 from
    // 113 x 112 (strips, the last input row past every window); padding of 2 (outputs wider
    // than the input); padding on the rows only; input planes further apart than their size.
    {"grouped_8_7x7_bias_relu_batch",
     "graph g(%x: f32[2, 40, 7, 7], %w: f32[40, 8, 3, 3], %b: f32[40]) {\n  %y = conv2d(%x, %w, %b, padding=[1, 1], groups=5)\n"
     "  %r = relu(%y)\n  return (%r)\n}"},
    {"grouped_8_stride2_batch_norm",
     "graph g(%x: f32[1, 32, 14, 14], %w: f32[32, 8, 3, 3], %m: f32[1, 32, 1, 1], %s: f32[1, 32, 1, 1], %t: f32[1, 32, 1, 1]) {\n"
     "  %y = conv2d(%x, %w, stride=[2, 2], padding=[1, 1], groups=4)\n  %a = sub(%y, %m)\n  %b = mul(%a, %s)\n  %c = add(%b, %t)\n"
     "  %d = relu(%c)\n  return (%d)\n}"},
    {"grouped_4_odd_plane",
     "graph g(%x: f32[1, 24, 9, 11], %w: f32[24, 4, 3, 3], %b: f32[24]) {\n  %y = conv2d(%x, %w, %b, padding=[1, 1], groups=6)\n"
     "  return (%y)\n}"},
    {"grouped_16_stride2_no_padding",
     "graph g(%x: f32[2, 48, 9, 11], %w: f32[48, 16, 3, 3]) {\n  %y = conv2d(%x, %w, stride=[2, 2], groups=3)\n  return (%y)\n}"},
    {"grouped_8_strips",
     "graph g(%x: f32[1, 16, 61, 58], %w: f32[16, 8, 3, 3], %b: f32[16]) {\n  %y = conv2d(%x, %w, %b, padding=[1, 1], groups=2)\n"
     "  %r = relu(%y)\n  return (%r)\n}"},
    {"grouped_8_stride2_strips",
     "graph g(%x: f32[1, 16, 113, 112], %w: f32[16, 8, 3, 3]) {\n  %y = conv2d(%x, %w, stride=[2, 2], padding=[1, 1], groups=2)\n"
     "  return (%y)\n}"},
    {"grouped_8_padding_2",
     "graph g(%x: f32[1, 16, 8, 8], %w: f32[16, 8, 3, 3]) {\n  %y = conv2d(%x, %w, padding=[2, 2], groups=2)\n  return (%y)\n}"},
    {"grouped_4_rows_padded_only",
     "graph g(%x: f32[1, 16, 6, 13], %w: f32[16, 4, 3, 3], %b: f32[16]) {\n  %y = conv2d(%x, %w, %b, padding=[1, 0], groups=4)\n"
     "  return (%y)\n}"},
    {"grouped_8_channel_slice",
     "graph g(%x: f32[1, 16, 10, 12] strides=[4000, 240, 12, 1], %w: f32[16, 8, 3, 3]) {\n  %y = conv2d(%x, %w, padding=[1, 1], groups=2)\n"
     "  %r = relu(%y)\n  return (%r)\n}"},
    // Epilogues: the pointwise kernel that alone reads a conv runs in the conv's output pass.
    {"epilogue_relu",
     "graph g(%x: f32[1, 6, 11, 9], %w: f32[10, 6, 3, 3], %b: f32[10]) {\n  %y = conv2d(%x, %w, %b, padding=[1, 1])\n  %r = relu(%y)\n  return "
     "(%r)\n}"},
    {"epilogue_batch_norm_clamp",
     "graph g(%x: f32[2, 4, 9, 9], %w: f32[8, 4, 3, 3], %m: f32[1, 8, 1, 1], %s: f32[1, 8, 1, 1], %t: f32[1, 8, 1, 1]) {\n"
     "  %y = conv2d(%x, %w, stride=[2, 2])\n  %a = sub(%y, %m)\n  %b = mul(%a, %s)\n  %c = add(%b, %t)\n  %d = clamp(%c, min=0, max=6)\n  return "
     "(%d)\n}"},
    {"epilogue_residual_of_two_convs",
     "graph g(%x: f32[1, 8, 10, 10], %w1: f32[8, 8, 3, 3], %w2: f32[8, 8, 1, 1]) {\n  %p = conv2d(%x, %w1, padding=[1, 1])\n  %q = conv2d(%x, %w2)\n"
     "  %s = add(%p, %q)\n  %r = relu(%s)\n  return (%r)\n}"},
    // SiLU after a 1x1 conv in groups of panels (N = 1073, a last panel of 17); a batch of 2 in
    // 2 groups with a per-channel scale and a residual read through channel-last strides;
    // weights over 1 MiB (tiles of rows) with a residual; an output of one row; an operand that
    // varies along the rows only.
    {"epilogue_silu_groups_of_panels",
     "graph g(%x: f32[1, 16, 37, 29], %w: f32[96, 16, 1, 1], %b: f32[96]) {\n  %y = conv2d(%x, %w, %b)\n  %s = silu(%y)\n  return (%s)\n}"},
    {"epilogue_groups_channel_scale_strided_residual",
     "graph g(%x: f32[2, 12, 13, 11], %w: f32[20, 6, 3, 3], %s: f32[1, 20, 1, 1], %r: f32[2, 20, 13, 11] strides=[2860, 1, 220, 20]) {\n"
     "  %y = conv2d(%x, %w, padding=[1, 1], groups=2)\n  %a = mul(%y, %s)\n  %c = add(%a, %r)\n  %d = relu(%c)\n  return (%d)\n}"},
    {"epilogue_row_tiles_residual",
     "graph g(%x: f32[1, 900, 8, 9], %w: f32[300, 900, 1, 1], %b: f32[300], %r: f32[1, 300, 8, 9]) {\n  %y = conv2d(%x, %w, %b)\n"
     "  %c = add(%y, %r)\n  %t = relu(%c)\n  return (%t)\n}"},
    {"epilogue_one_row",
     "graph g(%x: f32[1, 8, 1, 70], %w: f32[24, 8, 1, 3], %r: f32[1, 24, 1, 68]) {\n  %y = conv2d(%x, %w)\n  %c = sub(%y, %r)\n  return (%c)\n}"},
    {"epilogue_operand_along_rows",
     "graph g(%x: f32[1, 8, 14, 15], %w: f32[16, 8, 3, 3], %h: f32[1, 1, 14, 1]) {\n  %y = conv2d(%x, %w, padding=[1, 1])\n  %c = mul(%y, %h)\n"
     "  return (%c)\n}"},
    // The epilogue runs inside the conv GEMM on each block it finishes: mobilenet_v2's batch norm
    // and clamp on a 7 x 7 plane (two panels, tiles of rows; spans of a channel cut across rows of
    // 7); a batch of 2 in groups of panels, each group cut in chunks, with a residual.
    {"epilogue_in_the_gemm_on_a_7x7_plane",
     "graph g(%x: f32[1, 128, 7, 7], %w: f32[192, 128, 1, 1], %m: f32[1, 192, 1, 1], %s: f32[1, 192, 1, 1], %t: f32[1, 192, 1, 1]) {\n"
     "  %y = conv2d(%x, %w)\n  %a = sub(%y, %m)\n  %b = mul(%a, %s)\n  %c = add(%b, %t)\n  %d = clamp(%c, min=0, max=6)\n  return (%d)\n}"},
    {"epilogue_in_the_gemm_chunks_of_a_batch",
     "graph g(%x: f32[2, 24, 40, 40], %w: f32[48, 24, 1, 1], %b: f32[48], %r: f32[2, 48, 40, 40]) {\n  %y = conv2d(%x, %w, %b)\n"
     "  %c = add(%y, %r)\n  %t = relu(%c)\n  return (%t)\n}"},
    // A 5 x 5 plane (one panel): tiles of rows, each block of 8 rows finished across the panel.
    {"epilogue_in_the_gemm_blocks_of_rows",
     "graph g(%x: f32[1, 192, 5, 5], %w: f32[256, 192, 1, 1], %b: f32[256]) {\n  %y = conv2d(%x, %w, %b)\n  %r = relu(%y)\n  return (%r)\n}"},
    // A last node of another dtype: the GEMM writes scratch, the epilogue reads it block by block.
    {"epilogue_in_the_gemm_to_f16",
     "graph g(%x: f32[1, 24, 20, 20], %w: f32[64, 24, 1, 1]) {\n  %y = conv2d(%x, %w)\n  %r = relu(%y)\n  %h = to(%r, dtype=f16)\n  return (%h)\n}"},
    {"epilogue_value_also_returned",  // the conv is an output too: no epilogue
     "graph g(%x: f32[1, 3, 8, 8], %w: f32[5, 3, 3, 3]) {\n  %y = conv2d(%x, %w)\n  %r = relu(%y)\n  return (%r, %y)\n}"},
    {"epilogue_read_twice",  // two kernels read the conv: no epilogue
     "graph g(%x: f32[1, 3, 8, 8], %w: f32[5, 3, 3, 3]) {\n  %y = conv2d(%x, %w)\n  %r = relu(%y)\n  %s = sum(%y, dims=[1])\n  return (%r, %s)\n}"},
    {"epilogue_to_f16_then_f64",  // a last node of another dtype: the GEMM writes to scratch
     "graph g(%x: f64[1, 3, 8, 8], %w: f64[4, 3, 3, 3], %b: f64[4]) {\n  %y = conv2d(%x, %w, %b)\n  %h = to(%y, dtype=f16)\n  return (%h)\n}"},
    // A reduction over trailing dims whose pointwise prologue reads operands constant along them
    // (per channel, indexed once per output), one that varies along one of them (indexed per
    // element), one read through strides, and a max over the last dim of the same values.
    {"reduction_prologue_per_channel_operands",
     "graph g(%x: f32[2, 12, 7, 9], %m: f32[1, 12, 1, 1], %s: f32[12, 1, 1], %c: f32[1, 1, 7, 1], %w: f32[2, 12, 1, 1] strides=[1, 2, 1, 1]) {\n"
     "  %a = sub(%x, %m)\n  %b = mul(%a, %s)\n  %d = add(%b, %c)\n  %e = mul(%d, %w)\n  %r = clamp(%e, min=0, max=6)\n  %q = sum(%r, dims=[2, 3])\n"
     "  %t = mul(%x, %w)\n  %u = amax(%t, dims=[3])\n  return (%q, %u)\n}"},
    // Pointwise rows over as many last dims as every operand walks as one: per-channel parameters
    // over whole planes (rows of 63); a parameter that varies along H only keeps rows of W; a
    // permuted operand read with one stride over its last two dims, and one not; fewer than 16
    // rows keep rows of the last dim.
    {"pointwise_per_channel_over_planes",
     "graph g(%x: f32[2, 24, 7, 9], %s: f32[24, 1, 1], %t: f32[1, 24, 1, 1]) {\n  %a = mul(%x, %s)\n  %b = add(%a, %t)\n  %c = relu(%b)\n"
     "  return (%c)\n}"},
    {"pointwise_parameter_along_rows", "graph g(%x: f32[2, 24, 7, 9], %u: f32[24, 7, 1]) {\n  %a = mul(%x, %u)\n  %b = exp(%a)\n  return (%b)\n}"},
    {"pointwise_permuted_planes",
     "graph g(%x: f32[2, 24, 7, 9], %y: f32[2, 7, 9, 24], %z: f32[2, 24, 9, 7]) {\n  %p = permute(%y, dims=[0, 3, 1, 2])\n"
     "  %q = permute(%z, dims=[0, 1, 3, 2])\n  %a = add(%x, %p)\n  %b = mul(%a, %q)\n  %c = exp(%b)\n  return (%c)\n}"},
    // A permute fused into the kernel with rows enough to tile (convnext_tiny's layer scale and
    // residual): tiles of 16 rows by 256 columns, a last tile of 8 rows and one of 67 columns.
    {"pointwise_permuted_tiles",
     "graph g(%x: f32[1, 40, 19, 17], %y: f32[1, 19, 17, 40], %z: f32[1, 19, 17, 40], %s: f32[40, 1, 1]) {\n"
     "  %p = permute(%y, dims=[0, 3, 1, 2])\n  %q = permute(%z, dims=[0, 3, 1, 2])\n  %a = mul(%p, %s)\n  %b = add(%a, %q)\n"
     "  %c = add(%b, %x)\n  return (%c)\n}"},
    {"pointwise_few_rows", "graph g(%x: f32[1, 3, 40, 41], %s: f32[3, 1, 1]) {\n  %a = sub(%x, %s)\n  %b = exp(%a)\n  return (%b)\n}"},
    // Reductions over trailing dims of a permuted input, read r times one stride (the channels of
    // NCHW as the last dim; two dims whose strides nest), with a pointwise prologue, and a layer
    // norm over them.
    {"reduction_over_a_permute",
     "graph g(%x: f32[2, 6, 5, 7], %y: f32[3, 4, 5], %w: f32[6], %b: f32[6]) {\n  %p = permute(%x, dims=[0, 2, 3, 1])\n  %s = sum(%p, dims=[3])\n"
     "  %e = exp(%p)\n  %m = amax(%e, dims=[3])\n  %q = permute(%y, dims=[2, 0, 1])\n  %t = sum(%q, dims=[1, 2])\n"
     "  %n = layer_norm(%p, %w, %b, normalized_shape=[6])\n  return (%s, %m, %t, %n)\n}"},
    // Concatenation in place (plan_cats): a fire module (two convs with their relus written into
    // their slices); a cat whose buffer must live from its first operand on; an input, an operand read twice and one read by another kernel too, all
    // copied beside one written in place; a batch of 2 (slices not contiguous: copied); the same
    // operand twice; a cat of a cat; a cat along the last dim of f16 rows.
    {"cat_in_place_fire_module",
     "graph g(%x: f32[1, 8, 9, 9], %w1: f32[6, 8, 1, 1], %w3: f32[10, 8, 3, 3]) {\n  %a = conv2d(%x, %w1)\n  %ra = relu(%a)\n  %b = conv2d(%x, %w3, "
     "padding=[1, 1])\n"
     "  %rb = relu(%b)\n  %c = cat(%ra, %rb, dim=1)\n  %p = max_pool2d(%c, kernel=[3, 3], stride=[2, 2])\n  return (%p)\n}"},
    {"cat_in_place_beside_copies",
     "graph g(%x: f32[1, 3, 5, 4], %y: f32[1, 2, 5, 4]) {\n  %e = exp(%x)\n  %t = tanh(%y)\n  %s = sin(%y)\n  %c = cat(%e, %x, %t, %s, dim=1)\n  %q "
     "= sum(%s, dims=[1])\n"
     "  %m = mul(%c, %c)\n  return (%m, %q)\n}"},
    {"cat_in_place_lives_from_its_first_operand",  // the matmuls' buffers must not take %a's slice
     "graph g(%x: f32[4, 16], %y: f32[4, 16], %w: f32[16, 16]) {\n  %a = exp(%x)\n  %t1 = matmul(%y, %w)\n  %t2 = matmul(%t1, %w)\n  %t3 = "
     "matmul(%t2, %w)\n"
     "  %b = tanh(%t3)\n  %c = cat(%a, %b)\n  %m = mul(%c, %c)\n  return (%m)\n}"},
    {"cat_batch_of_two_copied",
     "graph g(%x: f32[2, 3, 4], %y: f32[2, 5, 4]) {\n  %e = exp(%x)\n  %t = tanh(%y)\n  %c = cat(%e, %t, dim=1)\n  %m = mul(%c, %c)\n  return "
     "(%m)\n}"},
    {"cat_same_operand_twice", "graph g(%x: f32[1, 3, 4]) {\n  %e = exp(%x)\n  %c = cat(%e, %e, dim=1)\n  %m = mul(%c, %c)\n  return (%m)\n}"},
    {"cat_of_a_cat",
     "graph g(%x: f32[4, 6], %y: f32[2, 6]) {\n  %e = exp(%x)\n  %t = tanh(%y)\n  %i = cat(%e, %t)\n  %s = sin(%y)\n  %o = cat(%i, %s)\n  %m = "
     "mul(%o, %o)\n  return (%m)\n}"},
    // Copied run by run: a run per (batch, row) read through a permutation's strides; four
    // batches of runs large enough to go parallel, one operand a graph input; along dim 0 one run
    // of a whole operand read through strides.
    {"cat_runs_of_a_permuted_operand",
     "graph g(%x: f32[3, 40, 64], %y: f32[3, 24, 64]) {\n  %p = permute(%x, dims=[0, 2, 1])\n  %q = permute(%y, dims=[0, 2, 1])\n  %e = exp(%q)\n  "
     "%c "
     "= cat(%p, %e, dim=2)\n  %m = mul(%c, %c)\n  return (%m)\n}"},
    {"cat_runs_in_parallel",
     "graph g(%x: f32[4, 96, 28, 28], %y: f32[4, 32, 28, 28]) {\n  %t = tanh(%y)\n  %c = cat(%x, %t, dim=1)\n  %m = mul(%c, %c)\n  return "
     "(%m)\n}"},
    {"cat_dim0_strided_input",
     "graph g(%x: f32[2, 3] strides=[1, 2], %y: f32[5, 3]) {\n  %e = exp(%y)\n  %c = cat(%x, %e)\n  %m = mul(%c, %c)\n  return (%m)\n}"},
    // Cats that begin a longer cat (DenseNet's): read as its first elements, its operands written
    // in place; a start after the longer cat's last reader, whose buffer must live until then; a
    // start whose first operand is a graph input copies it and reads the rest in place, after
    // the softmax's temporaries, which took the longer cat's bytes when its life ended at its own
    // last reader.
    {"cat_prefixes_of_a_longer_cat",
     "graph g(%x: f32[1, 4, 5, 5]) {\n  %a = relu(%x)\n  %f1 = tanh(%x)\n  %c2 = cat(%a, %f1, dim=1)\n  %f2 = sin(%c2)\n  %c3 = cat(%a, %f1, %f2, "
     "dim=1)\n  %f3 = exp(%c3)\n  %c4 = cat(%a, %f1, %f2, %f3, dim=1)\n  %m = mul(%c4, %c4)\n  return (%m)\n}"},
    {"cat_prefix_read_after_its_longer_cat",
     "graph g(%x: f32[1, 4, 6, 6]) {\n  %a = relu(%x)\n  %b = tanh(%x)\n  %f = cat(%a, %b, %x, dim=1)\n  %m = exp(%f)\n  %t = mul(%m, 2.0)\n  %p = "
     "cat(%a, %b, dim=1)\n  %s = sin(%p)\n  return (%t, %s)\n}"},
    {"cat_prefix_copied_beside_an_input",
     "graph g(%x: f32[1, 4, 6, 6]) {\n  %a = relu(%x)\n  %b = tanh(%x)\n  %f = cat(%x, %a, %b, dim=1)\n  %m = exp(%f)\n  %t = softmax(%m, "
     "dim=1)\n  %p = cat(%x, %a, dim=1)\n  %s = sin(%p)\n  %r = sum(%t, dims=[1])\n  return (%r, %s)\n}"},
    // An operand placed in a cat whose other reader is an output, through a view: copied out at
    // the end, from the cat's buffer, which must still hold it.
    {"cat_operand_returned_through_a_view",
     "graph g(%x: f32[1, 4, 6, 6]) {\n  %a = relu(%x)\n  %b = tanh(%x)\n  %f = cat(%a, %b, dim=1)\n  %m = exp(%f)\n  %t = softmax(%m, dim=1)\n  %r "
     "= reshape(%a, shape=[4, 36])\n  return (%t, %r)\n}"},
    {"cat_last_dim_f16",
     "graph g(%x: f16[1, 1, 7], %y: f16[1, 1, 9]) {\n  %e = exp(%x)\n  %t = tanh(%y)\n  %c = cat(%e, %t, dim=2)\n  %m = mul(%c, %c)\n  return "
     "(%m)\n}"},
    // Max pooling (on AVX-512 and AVX2 the prelude's kernel, cpp_pool.h; dilated or
    // channel-last, the generated rows): padding at both ends, stride, dilation, a window that is
    // partly padding, an input read through strides; rows of 3 vectors and a part from a slice
    // of channels, 2x2 at stride 2; a window wider than high at stride 1 along rows, 3 along
    // columns; a window of 17 columns (more than the kernel takes: the generated rows); input
    // rows shorter than an AVX2 vector (7, 6 and 3 columns: AVX2 reads them as the row's first
    // and last 4, or float by float) at stride 1 and 2, with padding and past the input's end.
    {"max_pool_pad_stride",
     "graph g(%x: f32[2, 3, 17, 19]) {\n  %y = max_pool2d(%x, kernel=[3, 3], stride=[2, 2], padding=[1, 1])\n  return (%y)\n}"},
    {"max_pool_dilated",
     "graph g(%x: f32[1, 4, 12, 15]) {\n  %y = max_pool2d(%x, kernel=[2, 3], stride=[1, 2], padding=[1, 1], dilation=[2, 2])\n  return (%y)\n}"},
    {"max_pool_strided_input",
     "graph g(%x: f32[1, 5, 9, 8] strides=[360, 1, 40, 5]) {\n  %y = max_pool2d(%x, kernel=[3, 3], stride=[1, 1], padding=[1, 1])\n  return (%y)\n}"},
    {"max_pool_channel_slice_2x2",
     "graph g(%x: f32[1, 3, 10, 105] strides=[5250, 1050, 105, 1]) {\n  %y = max_pool2d(%x, kernel=[2, 2], stride=[2, 2])\n  return (%y)\n}"},
    {"max_pool_wide_window",
     "graph g(%x: f32[2, 2, 11, 20]) {\n  %y = max_pool2d(%x, kernel=[2, 5], stride=[3, 1], padding=[1, 2], ceil_mode=true)\n  return (%y)\n}"},
    {"max_pool_seventeen_columns", "graph g(%x: f32[1, 2, 4, 40]) {\n  %y = max_pool2d(%x, kernel=[2, 17], stride=[1, 2])\n  return (%y)\n}"},
    {"max_pool_rows_shorter_than_a_vector",
     "graph g(%x: f32[2, 3, 7, 7], %y: f32[1, 4, 5, 6], %z: f32[1, 2, 3, 3]) {\n  %a = max_pool2d(%x, kernel=[3, 3], stride=[1, 1], padding=[1, 1])\n"
     "  %b = max_pool2d(%y, kernel=[3, 3], stride=[2, 2], padding=[1, 1], ceil_mode=true)\n  %c = max_pool2d(%z, kernel=[2, 2], stride=[1, 1], "
     "padding=[1, 1])\n  %d = max_pool2d(%z, kernel=[3, 3], stride=[2, 2], padding=[1, 1])\n  return (%a, %b, %c, %d)\n}"},
    // Views materialised by runs that stay contiguous in the source: two dims long, with a dim of
    // size 1 among them, in f16; runs under 16 stay a flat loop.
    {"copy_runs_of_two_dims",
     "graph g(%x: f32[4, 6, 5, 7]) {\n  %p = permute(%x, dims=[1, 0, 2, 3])\n  %r = reshape(%p, shape=[24, 35])\n  return (%r)\n}"},
    {"copy_runs_across_a_unit_dim",
     "graph g(%x: f32[3, 5, 1, 20]) {\n  %p = permute(%x, dims=[1, 0, 2, 3])\n  %r = reshape(%p, shape=[15, 20])\n  return (%r)\n}"},
    {"copy_runs_f16",
     "graph g(%x: f16[2, 3, 4, 16]) {\n  %p = permute(%x, dims=[0, 2, 1, 3])\n  %r = reshape(%p, shape=[2, 4, 48])\n  return (%r)\n}"},
    {"copy_short_runs_flat",
     "graph g(%x: f32[2, 3, 4, 5]) {\n  %p = permute(%x, dims=[0, 2, 1, 3])\n  %r = reshape(%p, shape=[2, 4, 15])\n  return (%r)\n}"},
    {"depthwise_f16", "graph g(%x: f16[1, 8, 12, 12], %w: f16[8, 1, 3, 3]) {\n  %y = conv2d(%x, %w, padding=[1, 1], groups=8)\n  return (%y)\n}"},
};

class CppKernelShapes : public ::testing::TestWithParam<Case> {};
// The same graphs through the cuda backend's generated loops, on a GPU only.
class CudaKernelShapes : public ::testing::TestWithParam<Case> {};

}  // namespace

TEST_P(CppKernelShapes, MatchTheReference) {
  Graph g = parse_graph(GetParam().graph);
  EXPECT_LT(max_error_vs_f64(g, cpp_options()), tolerance_for(g));
}

TEST_P(CudaKernelShapes, MatchTheReferenceOnTheGpu) {
  REQUIRE_GPU();
  Graph g = parse_graph(GetParam().graph);
  EXPECT_LT(max_error_vs_f64(g, cuda_options()), tolerance_for(g));
}

INSTANTIATE_TEST_SUITE_P(Shapes, CppKernelShapes, ::testing::ValuesIn(kCases), [](const auto& info) { return std::string(info.param.name); });
INSTANTIATE_TEST_SUITE_P(Shapes, CudaKernelShapes, ::testing::ValuesIn(kCases), [](const auto& info) { return std::string(info.param.name); });

// Under --train: the joint graph (forward and backward) of graph `text` against float64, on cpp
// and, with a GPU, on cuda.
static void expect_joint_graph_matches(const char* text) {
  JointGraph j = build_joint_graph(parse_graph(text));
  EXPECT_LT(max_error_vs_f64(j.graph, cpp_options()), 1e-5);
  if (have_gpu()) { EXPECT_LT(max_error_vs_f64(j.graph, cuda_options()), 1e-5) << "on the GPU"; }
}

// Under --train: the joint graph of a conv on the Winograd path. Its input gradient is itself a
// 3x3 stride-1 conv (the output gradient padded, the weights flipped: 24 channels to 16, 144
// tiles), so both directions run through cpp_conv_winograd.h; the weight gradient (a 24 x 24
// kernel) runs on the conv GEMM.
TEST(CppKernelShapesTrain, WinogradConvAndItsGradientsMatchTheReference) {
  expect_joint_graph_matches(
      "graph t(%x: f32[1, 16, 24, 24] grad, %w: f32[24, 16, 3, 3] grad, %b: f32[24] grad) {\n"
      "  %y = conv2d(%x, %w, %b, padding=[1, 1])\n  %r = relu(%y)\n  return (%r)\n}");
}

// Under --train: an MLP of two linear layers above 2 MFLOP each; forward, its gradients' matmuls
// (transposed operands of every kind) run on rk_matmul_f32 or BLAS as their layouts allow.
TEST(CppKernelShapesTrain, LinearLayersAndTheirGradientsMatchTheReference) {
  expect_joint_graph_matches(
      "graph t(%x: f32[70, 96] grad, %w1: f32[130, 96] grad, %b1: f32[130] grad, %w2: f32[90, 130] grad) {\n"
      "  %h = linear(%x, %w1, %b1)\n  %a = gelu(%h)\n  %y = linear(%a, %w2)\n  return (%y)\n}");
}

// Under --train: the joint graph of a 5x5 depthwise conv on AVX-512's row kernel
// (cpp_conv_depthwise.h) with its clamp as the epilogue; the input gradient is the same conv with
// the weights flipped, on that kernel too.
TEST(CppKernelShapesTrain, DepthwiseRowsConvAndItsGradientsMatchTheReference) {
  expect_joint_graph_matches(
      "graph t(%x: f32[2, 10, 14, 13] grad, %w: f32[10, 1, 5, 5] grad, %b: f32[10] grad) {\n"
      "  %y = conv2d(%x, %w, %b, padding=[2, 2], groups=10)\n  %r = clamp(%y, min=0, max=6)\n  return (%r)\n}");
}

// Under --train: the joint graph of a first conv of 3 channels at stride 2 on AVX-512's
// few-channel kernel (cpp_conv_few_channels.h) with its clamp as the epilogue; the weight gradient
// is a conv of the same 3 channels, the input gradient one of 8.
TEST(CppKernelShapesTrain, FewChannelsConvAndItsGradientsMatchTheReference) {
  expect_joint_graph_matches(
      "graph t(%x: f32[2, 3, 17, 19] grad, %w: f32[8, 3, 3, 3] grad, %b: f32[8] grad) {\n"
      "  %y = conv2d(%x, %w, %b, stride=[2, 2], padding=[1, 1])\n  %r = clamp(%y, min=0, max=6)\n  return (%r)\n}");
}

// Under --train: the joint graph of a grouped conv of 8 channels a group at stride 2 on AVX-512's
// grouped kernel (cpp_conv_grouped.h) with its relu as the epilogue; its gradients are whatever
// convs the backward rules make of them.
TEST(CppKernelShapesTrain, GroupedConvAndItsGradientsMatchTheReference) {
  expect_joint_graph_matches(
      "graph t(%x: f32[2, 24, 15, 14] grad, %w: f32[24, 8, 3, 3] grad, %b: f32[24] grad) {\n"
      "  %y = conv2d(%x, %w, %b, stride=[2, 2], padding=[1, 1], groups=3)\n  %r = relu(%y)\n  return (%r)\n}");
}

// Under --train: the joint graph of a depthwise conv at stride 2 on rows too wide for the row
// kernel (20 x 19 outputs) with its clamp, on the direct kernel (conv2d_planes) with the clamp as
// its epilogue; its gradients are whatever convs the backward rules make of them.
TEST(CppKernelShapesTrain, DepthwiseConvAndItsGradientsMatchTheReference) {
  expect_joint_graph_matches(
      "graph t(%x: f32[2, 12, 41, 38] grad, %w: f32[12, 1, 3, 3] grad, %b: f32[12] grad) {\n"
      "  %y = conv2d(%x, %w, %b, stride=[2, 2], padding=[1, 1], groups=12)\n  %r = clamp(%y, min=0, max=6)\n  return (%r)\n}");
}
