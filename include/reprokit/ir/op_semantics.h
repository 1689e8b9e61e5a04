// What ops mean, beyond their types: the helpers every layer (inference, reference kernels,
// decompositions, backward rules, codegen, emitters) uses to read an op's attributes the same
// way. Each is the one place its rule is written.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "reprokit/ir/graph.h"

namespace reprokit {

// A possibly negative dim, normalised against rank (a 0-d tensor accepts 0 and -1, as torch).
// Throws VerifyError when out of range.
int64_t normalize_dim(int64_t dim, int64_t rank);

// Broadcasts two shapes as NumPy/PyTorch do; nullopt when incompatible.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);

// The dtype pointwise operands promote to (torch.result_type): tensors with dimensions promote with
// each other; a 0-d tensor only where its category (bool < integer < float) is above theirs
// (f32[2, 3] with an f64[] is f32; i32[2] with an f64[] is f64), and 0-d tensors alone promote
// with each other; a scalar literal only lifts the category (int tensor * 2.5 -> f32).
// `dtypes[k]` and `ranks[k]` are operand k's when it is a value (ignored for literals).
// VerifyError when no operand is a value.
DType promote_operands(const std::vector<Operand>& operands, const std::vector<DType>& dtypes, const std::vector<int64_t>& ranks);
bool is_comparison(Op op);  // eq ne lt le gt ge
// The type pointwise node n computes in: comparisons in the operands' promoted type, `to` in its
// source type, every other op in its result type (n.type.dtype).
DType compute_dtype(const Node& n, const std::vector<DType>& dtypes, const std::vector<int64_t>& ranks);
// The same, with the operands' dtypes and ranks read from graph g (a node of g).
DType compute_dtype(const Graph& g, const Node& n);

// The dims a reduction reduces, normalised and in the order given (all dims when the attribute is
// absent): `dims` for sum/mean/var/amax/amin, `dim` for argmax. Throws VerifyError on a repeat.
std::vector<int64_t> reduction_dims(const Node& n, int64_t rank);
// Number of elements folded into each result element.
int64_t reduction_count(const Shape& in, const std::vector<int64_t>& dims);
// The input shape with reduced dims set to 1 (keepdim=true), so a result broadcasts back.
Shape keepdim_shape(const Shape& in, const std::vector<int64_t>& dims);

// slice(dim, start, end, step) of an input shape, with PyTorch's clamping of start and end.
struct SliceBounds {
  int64_t dim = 0, start = 0, step = 1, length = 0;  // length: elements selected along dim
};
SliceBounds slice_bounds(const Node& n, const Shape& in);

// The source dim of each output dim of permute or transpose.
std::vector<int64_t> permutation(const Node& n, int64_t rank);

// The size of gather's indexed dim of an input of shape x: 1 for a 0-d input (its only element,
// which torch.gather accepts at index 0 or -1).
int64_t gather_dim_size(const Node& n, const Shape& x);

// The lines of a scan or sort (cumsum, cumprod, sort, argsort, topk, topk_indices) along its dim
// of an input of shape `in`: outer * inner lines of `length` elements; element j of line (o, i)
// is at flat index (o * length + j) * inner + i. A 0-d input is one line of one element.
struct ScanLines {
  int64_t dim = 0, outer = 1, length = 1, inner = 1;
};
ScanLines scan_lines(const Node& n, const Shape& in);
// topk's and topk_indices' k, checked against the length of the lines of an input of shape `in`
// (VerifyError when it is negative or longer; a 0-d input takes k = 1 only).
int64_t topk_k(const Node& n, const Shape& in);
// Whether sort, argsort, topk or topk_indices orders its values from the largest (descending /
// largest); NaN counts as the largest value.
bool orders_descending(const Node& n);

// The dims of layer_norm's normalized_shape within an input of rank `rank` (its last dims).
std::vector<int64_t> layer_norm_dims(const Node& n, int64_t rank);

// The number of groups group_norm (num_groups) or instance_norm (one per channel) normalizes an
// [N, C, ...] input of shape x over. VerifyError when num_groups is not positive or does not
// divide the channels, or when x has no channel dim.
int64_t norm_groups(const Node& n, const Shape& x);

// pixel_shuffle and pixel_unshuffle of an input of shape x ([*, C, H, W], rank >= 3): the factor
// r and the [lead..., C, r, r, H, W] (shuffle) or [lead..., C, H, r, W, r] (unshuffle) view the
// decomposition permutes. VerifyError for a factor below 1, a lower rank, or channels (shuffle) or
// H and W (unshuffle) that the factor does not divide.
struct PixelShuffle {
  int64_t factor = 1;
  Shape split;                // the input viewed with the factor's dims split out
  Shape result;               // the output shape
  std::vector<int64_t> perm;  // of `split`: the output's order before the final reshape
};
PixelShuffle pixel_shuffle_of(const Node& n, const Shape& x);

// grid_sample(x [N, C, H, W], grid [N, Ho, Wo, 2]) as F.grid_sample in 2-D: grid[..., 0] is the
// x (width) coordinate and grid[..., 1] the y, each in [-1, 1] across the input; the result is
// [N, C, Ho, Wo]. VerifyError for another rank, a grid whose last dim is not 2 or whose batch
// differs, an unknown mode or padding_mode, and bicubic (refused: no decomposition computes it).
enum class SampleMode { bilinear, nearest };
enum class SamplePadding { zeros, border, reflection };
struct GridSample {
  SampleMode mode = SampleMode::bilinear;
  SamplePadding padding = SamplePadding::zeros;
  bool align_corners = false;
  Shape result;
};
GridSample grid_sample_of(const Node& n, const Shape& x, const Shape& grid);
// affine_grid(theta [N, 2, 3]) as F.affine_grid in 2-D: its `size` attribute [N, C, H, W] (N must
// be theta's), the result [N, H, W, 2].
Shape affine_grid_shape(const Node& n, const Shape& theta);
// affine_grid's base coordinate of pixel i of an axis of `size` pixels, in float64 by PyTorch's
// formula: torch.linspace(-1, 1, size) (0 for one pixel), times (size - 1) / size unless
// align_corners.
double affine_grid_base(int64_t i, int64_t size, bool align_corners);

// einsum's equation over operands of the given shapes: each operand's subscripts, the output's
// (explicit after ->, else the letters used once, in alphabetical order) and each letter's size.
// Spaces are ignored. VerifyError saying what is wrong: a character other than a letter, comma or
// ->, an ellipsis, more than one ->, a term count other than the operand count, a term whose
// length is not its operand's rank, a letter repeated within a term (a diagonal), an output letter
// repeated or used by no operand, or a letter whose sizes differ between operands.
struct EinsumSpec {
  std::vector<std::string> inputs;
  std::string output;
  std::map<char, int64_t> sizes;
  std::string equation() const;  // the explicit form: inputs joined by commas, ->, output
};
EinsumSpec einsum_spec(const std::string& equation, const std::vector<Shape>& shapes);

// The window of conv2d, max_pool2d, avg_pool2d, their 3-D twins (conv3d, max_pool3d, avg_pool3d)
// and the pools' backward ops: kernel, stride, padding, dilation per spatial dim ((H, W) or
// (D, H, W)). Pools default stride to the kernel.
struct Window {
  int rank = 2;  // spatial dims: 2 for the 2-D ops, 3 for the 3-D ones
  int64_t kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1}, padding[3] = {0, 0, 0}, dilation[3] = {1, 1, 1};
  bool ceil_mode = false;
  // Output size along spatial dim d for an input of size `in` (PyTorch's rule, ceil_mode
  // included: the last window must start inside the input or its left padding).
  int64_t output_size(int d, int64_t in) const;
};
// The number of spatial dims of a convolution or pooling op: 3 for the 3-D ops, else 2.
int spatial_rank(Op op);
// conv2d_input_grad, conv2d_weight_grad and their 3-D twins.
bool is_conv_grad(Op op);
// The window of node n; for a convolution the kernel comes from the weight's spatial dims
// `weight_spatial`. VerifyError for non-positive kernel, stride or dilation, negative padding,
// or padding over half the (dilated) kernel of a pool.
Window window_of(const Node& n, const int64_t* weight_spatial = nullptr);

// A transposed convolution's output_padding per spatial dim (VerifyError unless each is in
// [0, max(stride, dilation)), PyTorch's rule) and its output size along spatial dim d for an
// input of size `in`.
std::vector<int64_t> output_padding_of(const Node& n, const Window& w);
int64_t transposed_output_size(const Window& w, const std::vector<int64_t>& output_padding, int d, int64_t in);

// Every window of a pool over one plane of spatial sizes `in` with `out` windows (win.rank
// dims each), in output order: calls tap(o, i) for each window element inside the plane (o and
// i flat indices into the output and input planes, last dim fastest), then done(o, divisor)
// with PyTorch's average divisor: the window clipped to the padded plane (count_include_pad) or
// the number of elements it covers.
template <class Tap, class Done>
void for_each_pool_window(const Window& win, bool count_include_pad, const int64_t* in, const int64_t* out, Tap tap, Done done) {
  const int r = win.rank;
  int64_t total = 1, taps = 1;
  for (int d = 0; d < r; ++d) {
    total *= out[d];
    taps *= win.kernel[d];
  }
  int64_t start[3] = {0, 0, 0}, k[3] = {0, 0, 0};
  for (int64_t o = 0; o < total; ++o) {
    int64_t rest = o, padded = 1;
    for (int d = r - 1; d >= 0; --d) {
      start[d] = rest % out[d] * win.stride[d] - win.padding[d];
      rest /= out[d];
      padded *= std::min(start[d] + win.kernel[d], in[d] + win.padding[d]) - start[d];
    }
    int64_t valid = 0;
    for (int64_t t = 0; t < taps; ++t) {
      int64_t tr = t;
      for (int d = r - 1; d >= 0; --d) {
        k[d] = tr % win.kernel[d];
        tr /= win.kernel[d];
      }
      int64_t i = 0;
      bool inside = true;
      for (int d = 0; d < r && inside; ++d) {
        const int64_t p = start[d] + k[d] * win.dilation[d];
        inside = p >= 0 && p < in[d];
        i = i * in[d] + p;
      }
      if (!inside) continue;
      ++valid;
      tap(o, i);
    }
    done(o, static_cast<double>(count_include_pad ? padded : valid));
  }
}

// adaptive_avg_pool2d: the input range [start, end) of output index i (of `out`) over `in`.
inline int64_t adaptive_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
inline int64_t adaptive_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

// pad's `pads`: pairs (before, after) from the last dim backwards, as torch.nn.functional.pad.
// Returns per dim of an input of rank `rank` the (before, after) amounts. VerifyError when odd
// in length, longer than 2 * rank, or negative.
std::vector<std::pair<int64_t, int64_t>> pad_amounts(const Node& n, int64_t rank);

}  // namespace reprokit
