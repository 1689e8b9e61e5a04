// The importer's handlers for convolution, pooling, BatchNormalization, InstanceNormalization and
// Pad. reprokit's conv and pool ops are 2-D (NCHW) and 3-D (NCDHW): a 1-D ONNX op runs as 2-D over
// a plane of height 1, and pads that differ before and after (or that a pool cannot take) become
// an explicit pad op in front.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "handler_util.h"
#include "import_context.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/op_semantics.h"
#include "reprokit/ir/shape_check.h"

namespace reprokit::onnx_detail {

namespace {

// A window in ONNX's terms, over reprokit's two or three spatial dims (a 1-D op gets a leading
// dim of size 1).
struct OnnxWindow {
  int spatial = 2;  // 1, 2 or 3 in the model
  int rank = 2;     // 2 or 3 in reprokit
  int64_t kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1}, dilation[3] = {1, 1, 1};
  int64_t begin[3] = {0, 0, 0}, end[3] = {0, 0, 0};  // pads
  bool symmetric() const {
    for (int d = 0; d < rank; ++d)
      if (begin[d] != end[d]) return false;
    return true;
  }
  std::vector<int64_t> list(const int64_t* v) const { return std::vector<int64_t>(v, v + rank); }
};

// Reads kernel_shape, strides, dilations, pads and auto_pad. `weight_kernel` is the kernel a
// Conv's weight gives (kernel_shape must then agree); pools need kernel_shape.
OnnxWindow onnx_window(const NodeCtx& c, const Shape* weight_kernel) {
  const Shape& xs = c.shape(0);
  if (xs.size() < 3 || xs.size() > 5)
    c.unsupported(
        fmt::format("a {}-D input (reprokit has 1-D, 2-D and 3-D {}: [N, C, W], [N, C, H, W] or [N, C, D, H, W])", xs.size(), c.n.op_type()));
  OnnxWindow w;
  w.spatial = static_cast<int>(xs.size()) - 2;
  w.rank = std::max(w.spatial, 2);
  const size_t k = static_cast<size_t>(w.spatial);
  auto list = [&](const char* name, int64_t def) {
    auto v = c.attr_ints(name);
    if (!v) return std::vector<int64_t>(k, def);
    if (v->size() != k) c.bad(fmt::format("{} has {} values for {} spatial dims", name, v->size(), k));
    for (int64_t x : *v)
      if (x < 1 || x > (int64_t{1} << 20)) c.bad(fmt::format("{} {} must be in [1, 2^20]", name, shape_str(*v)));
    return *v;
  };
  std::vector<int64_t> kernel;
  auto ks = c.attr_ints("kernel_shape");
  if (weight_kernel) {
    kernel = *weight_kernel;
    if (ks && *ks != kernel) c.bad(fmt::format("kernel_shape {} differs from the weight's {}", shape_str(*ks), shape_str(kernel)));
  } else {
    if (!ks) c.bad("kernel_shape is required");
    kernel = list("kernel_shape", 1);
  }
  const std::vector<int64_t> stride = list("strides", 1), dilation = list("dilations", 1);
  std::vector<int64_t> pads(2 * k, 0);
  const std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    if (auto p = c.attr_ints("pads")) {
      if (p->size() != 2 * k) c.bad(fmt::format("pads has {} values for {} spatial dims", p->size(), k));
      for (int64_t x : *p)
        if (x < 0 || x > (int64_t{1} << 20)) c.unsupported(fmt::format("pads {} (negative or over 2^20)", shape_str(*p)));
      pads = *p;
    }
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t d = 0; d < k; ++d) {  // the output has ceil(in / stride) elements
      const int64_t in = xs[2 + d], out = (in + stride[d] - 1) / stride[d];
      const int64_t total = std::max<int64_t>((out - 1) * stride[d] + (kernel[d] - 1) * dilation[d] + 1 - in, 0);
      const int64_t small = total / 2, large = total - small;
      pads[d] = auto_pad == "SAME_UPPER" ? small : large;
      pads[d + k] = auto_pad == "SAME_UPPER" ? large : small;
    }
  } else if (auto_pad != "VALID") {
    c.bad(fmt::format("auto_pad '{}' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", auto_pad));
  }
  const size_t off = static_cast<size_t>(w.rank) - k;  // a 1-D window fills the second dim
  for (size_t d = 0; d < k; ++d) {
    w.kernel[off + d] = kernel[d];
    w.stride[off + d] = stride[d];
    w.dilation[off + d] = dilation[d];
    w.begin[off + d] = pads[d];
    w.end[off + d] = pads[d + k];
  }
  return w;
}

// x as [N, C, H, W] (a 1-D input gets H = 1); 2-D and 3-D inputs as they are.
int as_2d(NodeCtx& c, int x, int spatial) {
  if (spatial != 1) return x;
  Shape s = c.type_of(x).shape;
  s.insert(s.begin() + 2, 1);
  return c.reshape(x, s);
}
// y back to the model's rank.
int from_2d(NodeCtx& c, int y, int spatial) {
  if (spatial != 1) return y;
  Shape s = c.type_of(y).shape;
  s.erase(s.begin() + 2);
  return c.reshape(y, s);
}

// Pads x's spatial dims explicitly (before/after per dim) with `value`.
int pad_spatial(NodeCtx& c, int x, const OnnxWindow& w, double value) {
  std::vector<int64_t> pads;
  for (int d = w.rank - 1; d >= 0; --d) {  // pad's pairs run from the last dim backwards
    pads.push_back(w.begin[d]);
    pads.push_back(w.end[d]);
  }
  return c.emit1(Op::pad, x, {{"pads", AttrValue::ints(pads)}, {"value", AttrValue(value)}});
}

Attrs window_attrs(const OnnxWindow& w, bool padded_in_op, bool with_dilation) {
  Attrs a{{"stride", AttrValue::ints(w.list(w.stride))},
          {"padding", AttrValue::ints(padded_in_op ? w.list(w.begin) : std::vector<int64_t>(static_cast<size_t>(w.rank), 0))}};
  if (with_dilation) a["dilation"] = AttrValue::ints(w.list(w.dilation));
  return a;
}

void conv(NodeCtx& c) {
  c.allow({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
  require_float(c, 0);
  if (c.rank(1) != c.rank(0)) c.bad(fmt::format("W has rank {}, X rank {}", c.rank(1), c.rank(0)));
  if (c.dtype(1) != c.dtype(0)) c.bad(fmt::format("W is {}, X is {}", dtype_name(c.dtype(1)), dtype_name(c.dtype(0))));
  const Shape kernel(c.shape(1).begin() + 2, c.shape(1).end());
  OnnxWindow w = onnx_window(c, &kernel);
  int x = as_2d(c, c.value(0), w.spatial);
  if (!w.symmetric()) x = pad_spatial(c, x, w, 0.0);
  std::vector<Operand> ops{v(x), v(as_2d(c, c.value(1), w.spatial))};
  if (c.has(2)) ops.push_back(v(c.value(2)));
  Attrs a = window_attrs(w, w.symmetric(), true);
  a["groups"] = AttrValue(c.attr_int("group", 1));
  c.set(0, from_2d(c, c.emit(w.rank == 3 ? Op::conv3d : Op::conv2d, ops, a), w.spatial));
}

// ConvTranspose: weight [C_in, C_out / group, kernel...] as conv_transpose2d/3d's. Its pads
// (given, from output_shape, or SAME_UPPER/SAME_LOWER) crop the full output; when they are the
// same before and after the op crops itself, otherwise it makes the full output and slices.
void conv_transpose(NodeCtx& c) {
  c.allow({"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides"});
  require_float(c, 0);
  if (c.rank(1) != c.rank(0)) c.bad(fmt::format("W has rank {}, X rank {}", c.rank(1), c.rank(0)));
  if (c.dtype(1) != c.dtype(0)) c.bad(fmt::format("W is {}, X is {}", dtype_name(c.dtype(1)), dtype_name(c.dtype(0))));
  const Shape& xs = c.shape(0);
  if (xs.size() < 3 || xs.size() > 5)
    c.unsupported(fmt::format("a {}-D input (reprokit has 1-D, 2-D and 3-D ConvTranspose: [N, C, W], [N, C, H, W] or [N, C, D, H, W])", xs.size()));
  const size_t k = xs.size() - 2;
  const Shape kernel(c.shape(1).begin() + 2, c.shape(1).end());
  if (auto ks = c.attr_ints("kernel_shape"); ks && *ks != kernel)
    c.bad(fmt::format("kernel_shape {} differs from the weight's {}", shape_str(*ks), shape_str(kernel)));
  for (int64_t d : kernel)
    if (d < 1 || d > (int64_t{1} << 20)) c.bad(fmt::format("the weight's kernel {} must be in [1, 2^20]", shape_str(kernel)));
  auto list = [&](const char* name, int64_t def, int64_t lo) {
    auto v = c.attr_ints(name);
    if (!v) return std::vector<int64_t>(k, def);
    if (v->size() != k) c.bad(fmt::format("{} has {} values for {} spatial dims", name, v->size(), k));
    for (int64_t x : *v)
      if (x < lo || x > (int64_t{1} << 20)) c.bad(fmt::format("{} {} must be in [{}, 2^20]", name, shape_str(*v), lo));
    return *v;
  };
  const std::vector<int64_t> stride = list("strides", 1, 1), dilation = list("dilations", 1, 1), output_padding = list("output_padding", 0, 0);
  std::vector<int64_t> full(k), begin(k, 0), end(k, 0);
  for (size_t d = 0; d < k; ++d) full[d] = stride[d] * (xs[2 + d] - 1) + output_padding[d] + (kernel[d] - 1) * dilation[d] + 1;
  const std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" && auto_pad != "VALID")
    c.bad(fmt::format("auto_pad '{}' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", auto_pad));
  auto output_shape = c.attr_ints("output_shape");
  if (output_shape && output_shape->size() == k + 2) output_shape->erase(output_shape->begin(), output_shape->begin() + 2);  // [N, C, ...] given
  if (output_shape && output_shape->size() != k) c.bad(fmt::format("output_shape has {} values for {} spatial dims", output_shape->size(), k));
  if (output_shape || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t d = 0; d < k; ++d) {  // without output_shape, SAME makes in * stride outputs
      const int64_t want = output_shape ? (*output_shape)[d] : xs[2 + d] * stride[d];
      const int64_t total = full[d] - want;                              // negative: the output goes on past the last tap (bias only there)
      const int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2);  // floor(total / 2), as ONNX's reference
      begin[d] = auto_pad == "SAME_UPPER" ? half : total - half;
      end[d] = total - begin[d];
      if (want < 1 || want > kMaxTensorElements || begin[d] < 0)
        c.unsupported(fmt::format("an output size of {} along spatial dim {} (the transposed convolution gives {})", want, d, full[d]));
    }
  } else if (auto_pad == "NOTSET") {
    if (auto p = c.attr_ints("pads")) {
      if (p->size() != 2 * k) c.bad(fmt::format("pads has {} values for {} spatial dims", p->size(), k));
      for (int64_t x : *p)
        if (x < 0 || x > (int64_t{1} << 20)) c.unsupported(fmt::format("pads {} (negative or over 2^20)", shape_str(*p)));
      for (size_t d = 0; d < k; ++d) {
        begin[d] = (*p)[d];
        end[d] = (*p)[d + k];
        if (begin[d] + end[d] >= full[d])
          c.bad(fmt::format("pads {} leave nothing of an output of size {} along spatial dim {}", shape_str(*p), full[d], d));
      }
    }
  }
  // The op's padding crops both ends alike; output_padding must stay under the stride or the
  // dilation (PyTorch's rule), otherwise the op makes the full output and slices.
  bool in_op = true;
  for (size_t d = 0; d < k; ++d) in_op = in_op && begin[d] == end[d] && output_padding[d] < std::max(stride[d], dilation[d]);
  const size_t lift = k == 1 ? 1 : 0;  // a 1-D op runs as 2-D over a plane of height 1
  const size_t r = k + lift;
  std::vector<int64_t> a_stride(r, 1), a_padding(r, 0), a_output_padding(r, 0), a_dilation(r, 1);
  for (size_t d = 0; d < k; ++d) {
    a_stride[lift + d] = stride[d];
    a_dilation[lift + d] = dilation[d];
    if (in_op) {
      a_padding[lift + d] = begin[d];
      a_output_padding[lift + d] = output_padding[d];
    }
  }
  const int64_t groups = c.attr_int("group", 1);
  if (groups < 1 || c.shape(1)[0] % groups) c.bad(fmt::format("group {} does not divide W's {} input channels", groups, c.shape(1)[0]));
  std::vector<Operand> ops{v(as_2d(c, c.value(0), static_cast<int>(k))), v(as_2d(c, c.value(1), static_cast<int>(k)))};
  if (c.has(2)) ops.push_back(v(c.value(2)));
  Attrs a{{"stride", AttrValue::ints(a_stride)},
          {"padding", AttrValue::ints(a_padding)},
          {"output_padding", AttrValue::ints(a_output_padding)},
          {"dilation", AttrValue::ints(a_dilation)},
          {"groups", AttrValue(groups)}};
  if (!in_op)
    for (size_t d = 0; d < k; ++d) {  // an output past the last tap: the op's own output_padding makes it
      const int64_t extra = std::max<int64_t>(output_padding[d] - end[d], 0);
      if (extra >= std::max(stride[d], dilation[d]))
        c.unsupported(fmt::format("{} outputs past the last tap along spatial dim {} (at most the stride or the dilation less one)", extra, d));
      a_output_padding[lift + d] = extra;
    }
  a["output_padding"] = AttrValue::ints(a_output_padding);
  int y = c.emit(r == 3 ? Op::conv_transpose3d : Op::conv_transpose2d, ops, a);
  if (!in_op)
    for (size_t d = 0; d < k; ++d) {
      const int64_t made = c.type_of(y).shape[2 + lift + d], stop = full[d] - end[d];
      if (begin[d] == 0 && stop == made) continue;
      y = c.emit1(Op::slice, y, {{"dim", AttrValue(static_cast<int64_t>(2 + lift + d))}, {"start", AttrValue(begin[d])}, {"end", AttrValue(stop)}});
    }
  c.set(0, from_2d(c, y, static_cast<int>(k)));
}

// Whether reprokit's pool takes these pads itself (PyTorch allows at most half the window).
bool pool_takes_pads(const OnnxWindow& w) {
  for (int d = 0; d < w.rank; ++d)
    if (w.begin[d] * 2 > w.dilation[d] * (w.kernel[d] - 1) + 1) return false;
  return w.symmetric();
}

void max_pool(NodeCtx& c) {
  c.allow({"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"});
  if (c.wants(1)) c.unsupported("the Indices output (reprokit's max pools return the values only)");
  require_float(c, 0);
  OnnxWindow w = onnx_window(c, nullptr);
  int x = as_2d(c, c.value(0), w.spatial);
  const bool in_op = pool_takes_pads(w);
  if (!in_op) x = pad_spatial(c, x, w, -std::numeric_limits<double>::infinity());  // padding never wins a max
  Attrs a = window_attrs(w, in_op, true);
  a["kernel"] = AttrValue::ints(w.list(w.kernel));
  a["ceil_mode"] = AttrValue(c.attr_int("ceil_mode", 0) != 0);
  c.set(0, from_2d(c, c.emit1(w.rank == 3 ? Op::max_pool3d : Op::max_pool2d, x, a), w.spatial));
}

// The number of input elements each window covers, per output position (over the output's
// spatial dims `out`), for windows whose pads are explicit (begin/end per dim) over an input of
// spatial dims `in`.
std::vector<double> valid_counts(const OnnxWindow& w, const int64_t* in, const int64_t* out) {
  int64_t total = 1;
  for (int d = 0; d < w.rank; ++d) total *= out[d];
  std::vector<double> counts(static_cast<size_t>(total));
  auto covered = [](int64_t start, int64_t k, int64_t size) { return std::max<int64_t>(std::min(start + k, size) - std::max<int64_t>(start, 0), 0); };
  for (int64_t o = 0; o < total; ++o) {
    int64_t rest = o, count = 1;
    for (int d = w.rank - 1; d >= 0; --d) {
      count *= covered(rest % out[d] * w.stride[d] - w.begin[d], w.kernel[d], in[d]);
      rest /= out[d];
    }
    counts[static_cast<size_t>(o)] = static_cast<double>(count);
  }
  return counts;
}

void average_pool(NodeCtx& c) {
  c.allow({"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"});
  require_float(c, 0);
  OnnxWindow w = onnx_window(c, nullptr);
  const bool include_pad = c.attr_int("count_include_pad", 0) != 0;
  int x = as_2d(c, c.value(0), w.spatial);
  const Shape xs = c.type_of(x).shape;
  const bool in_op = pool_takes_pads(w);
  if (!in_op) x = pad_spatial(c, x, w, 0.0);
  Attrs a = window_attrs(w, in_op, false);
  a["kernel"] = AttrValue::ints(w.list(w.kernel));
  a["ceil_mode"] = AttrValue(c.attr_int("ceil_mode", 0) != 0);
  a["count_include_pad"] = AttrValue(include_pad || !in_op);
  int y = c.emit1(w.rank == 3 ? Op::avg_pool3d : Op::avg_pool2d, x, a);
  if (!in_op && !include_pad) {
    // The explicit zeros were counted: rescale each window by its padded size over the number of
    // input elements it covers.
    const Shape& ys = c.type_of(y).shape;
    const Shape& ps = c.type_of(x).shape;
    OnnxWindow padded = w;
    std::fill(padded.begin, padded.begin + 3, 0);
    std::vector<double> scale = valid_counts(w, &xs[2], &ys[2]);
    std::vector<double> counted = valid_counts(padded, &ps[2], &ys[2]);
    for (size_t k = 0; k < scale.size(); ++k) {
      if (scale[k] == 0) c.unsupported("a window that covers no input element");
      scale[k] = counted[k] / scale[k];
    }
    y = c.emit(Op::mul, {v(y), v(c.const_value(Tensor::from_doubles(c.dtype(0), Shape(ys.begin() + 2, ys.end()), scale)))});
  }
  c.set(0, from_2d(c, y, w.spatial));
}

// GlobalAveragePool / GlobalMaxPool: a keepdim reduction over every spatial dim.
template <Op op> void global_pool(NodeCtx& c) {
  c.allow({});
  require_float(c, 0);
  if (c.rank(0) < 3) c.bad(fmt::format("X must be [N, C, D1, ...], got {}", shape_str(c.shape(0))));
  std::vector<int64_t> dims;
  for (int64_t d = 2; d < c.rank(0); ++d) dims.push_back(d);
  c.set(0, c.emit1(op, c.value(0), {{"dims", AttrValue::ints(dims)}, {"keepdim", AttrValue(true)}}));
}

void batch_normalization(NodeCtx& c) {
  c.allow({"epsilon", "momentum", "training_mode", "spatial", "is_test", "consumed_inputs"});
  if (c.attr_int("training_mode", 0) != 0) c.unsupported("training_mode=1 (batch statistics and running-stat updates)");
  if (c.opset() < 7 && c.attr_int("is_test", 0) == 0) c.unsupported("is_test=0 (training mode)");
  if (c.attr_int("spatial", 1) != 1) c.unsupported("spatial=0 (per-element statistics)");
  for (int k = 1; k < c.n.output_size(); ++k)
    if (c.wants(k)) c.unsupported("the running-statistics outputs (training mode only)");
  require_float(c, 0);
  if (c.rank(0) < 2) c.bad(fmt::format("X must be [N, C, ...], got {}", shape_str(c.shape(0))));
  for (int i = 1; i <= 4; ++i)
    if (c.dtype(i) != c.dtype(0))
      c.unsupported(fmt::format("input {} of type {} with X of type {}", i + 1, dtype_name(c.dtype(i)), dtype_name(c.dtype(0))));
  // ONNX: X, scale, B, mean, var. reprokit: x, mean, var, weight, bias.
  c.set(0, c.emit(Op::batch_norm, {v(c.value(0)), v(c.value(3)), v(c.value(4)), v(c.value(1)), v(c.value(2))},
                  {{"eps", AttrValue(c.attr_float("epsilon", 1e-5))}}));
}

// InstanceNormalization: input, scale [C], B [C]. PyTorch's exporter writes nn.GroupNorm as a
// Reshape to [N, groups, rest], this with ones and zeros, a Reshape back, Mul and Add: each part
// imports on its own.
void instance_normalization(NodeCtx& c) {
  c.allow({"epsilon"});
  require_float(c, 0);
  if (c.rank(0) < 3) c.bad(fmt::format("input must be [N, C, D1, ...], got {}", shape_str(c.shape(0))));
  const int64_t ch = c.shape(0)[1];
  for (int i = 1; i <= 2; ++i) {
    if (c.shape(i) != Shape{ch}) c.bad(fmt::format("input {} has shape {}, expected [{}] (the channels)", i + 1, shape_str(c.shape(i)), ch));
    if (c.dtype(i) != c.dtype(0)) c.bad(fmt::format("input {} is {}, input 1 is {}", i + 1, dtype_name(c.dtype(i)), dtype_name(c.dtype(0))));
  }
  const double eps = c.attr_float("epsilon", 1e-5);
  if (!(eps >= 0) || !std::isfinite(eps)) c.bad(fmt::format("epsilon {} must be finite and non-negative", eps));
  c.set(0, c.emit(Op::instance_norm, {v(c.value(0)), v(c.value(1)), v(c.value(2))}, {{"eps", AttrValue(eps)}}));
}

// Pad in constant mode. ONNX's pads are [begin of each dim..., end of each dim...] and may be
// negative (cropping): positive amounts become a pad op, negative ones a slice after it.
void pad(NodeCtx& c) {
  std::vector<int64_t> pads;
  std::string mode;
  double value = 0.0;
  if (c.opset() < 11) {
    c.allow({"mode", "pads", "value", "paddings"});
    auto p = c.attr_ints("pads");
    if (!p) p = c.attr_ints("paddings");
    if (!p) c.bad("pads is required");
    pads = *p;
    mode = c.attr_string("mode", "constant");
    value = c.attr_float("value", 0.0);
  } else {
    c.allow({"mode"});
    mode = c.attr_string("mode", "constant");
    pads = c.need_ints(1, "pads");
    if (c.has(3)) c.unsupported("the axes input");
    if (c.has(2)) {
      Tensor k = c.need_constant(2, "constant_value");
      if (k.numel() != 1) c.bad("constant_value must hold one value");
      value = k.get(0);
    }
  }
  if (mode != "constant") c.unsupported(fmt::format("mode '{}' (reprokit's pad is constant)", mode));
  const int64_t r = c.rank(0);
  if (static_cast<int64_t>(pads.size()) != 2 * r) c.bad(fmt::format("pads has {} values for a tensor of rank {}", pads.size(), r));
  const DType dt = c.dtype(0);
  if (!is_floating(dt) && (std::isnan(value) || value != std::trunc(value))) c.unsupported(fmt::format("padding {} with {}", dtype_name(dt), value));
  std::vector<int64_t> rk_pads;  // (before, after) from the last dim backwards
  bool grows = false;
  for (int64_t d = r - 1; d >= 0; --d) {
    const int64_t b = pads[static_cast<size_t>(d)], e = pads[static_cast<size_t>(d + r)];
    rk_pads.push_back(std::max<int64_t>(b, 0));
    rk_pads.push_back(std::max<int64_t>(e, 0));
    grows = grows || b > 0 || e > 0;
  }
  int y = c.value(0);
  if (grows) y = c.emit1(Op::pad, y, {{"pads", AttrValue::ints(rk_pads)}, {"value", AttrValue(value)}});
  for (int64_t d = 0; d < r; ++d) {
    const int64_t b = pads[static_cast<size_t>(d)], e = pads[static_cast<size_t>(d + r)];
    if (b >= 0 && e >= 0) continue;
    const int64_t size = c.type_of(y).shape[static_cast<size_t>(d)];
    const int64_t start = std::max<int64_t>(-b, 0), end = size - std::max<int64_t>(-e, 0);
    if (end < start) c.bad(fmt::format("pads {} crop dim {} of size {} below zero", shape_str(pads), d, c.shape(0)[static_cast<size_t>(d)]));
    y = c.emit1(Op::slice, y, {{"dim", AttrValue(d)}, {"start", AttrValue(start)}, {"end", AttrValue(end)}});
  }
  c.set(0, y);
}

}  // namespace

const std::map<std::string, Handler, std::less<>>& conv_handlers() {
  static const std::map<std::string, Handler, std::less<>> table = {
      {"Conv", conv},
      {"ConvTranspose", conv_transpose},
      {"MaxPool", max_pool},
      {"AveragePool", average_pool},
      {"GlobalAveragePool", global_pool<Op::mean>},
      {"GlobalMaxPool", global_pool<Op::amax>},
      {"BatchNormalization", batch_normalization},
      {"InstanceNormalization", instance_normalization},
      {"Pad", pad},
  };
  return table;
}

}  // namespace reprokit::onnx_detail
