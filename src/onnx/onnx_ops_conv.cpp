// The importer's handlers for convolution, pooling, BatchNormalization, InstanceNormalization and
// Pad. reprokit's conv and pool ops are 2-D (NCHW): a 1-D ONNX op runs as 2-D over a plane of
// height 1, and pads that differ before and after (or that a pool cannot take) become an explicit
// pad op in front.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "handler_util.h"
#include "import_context.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/op_semantics.h"

namespace reprokit::onnx_detail {

namespace {

// A window in ONNX's terms, lifted to two spatial dims (a 1-D op gets a leading dim of size 1).
struct OnnxWindow {
  int spatial = 2;  // 1 or 2 in the model
  int64_t kernel[2] = {1, 1}, stride[2] = {1, 1}, dilation[2] = {1, 1};
  int64_t begin[2] = {0, 0}, end[2] = {0, 0};  // pads
  bool symmetric() const { return begin[0] == end[0] && begin[1] == end[1]; }
};

// Reads kernel_shape, strides, dilations, pads and auto_pad. `weight_kernel` is the kernel a
// Conv's weight gives (kernel_shape must then agree); pools need kernel_shape.
OnnxWindow onnx_window(const NodeCtx& c, const Shape* weight_kernel) {
  const Shape& xs = c.shape(0);
  if (xs.size() != 3 && xs.size() != 4)
    c.unsupported(fmt::format("a {}-D input (reprokit has 1-D and 2-D {}: [N, C, W] or [N, C, H, W])", xs.size(), c.n.op_type()));
  OnnxWindow w;
  w.spatial = static_cast<int>(xs.size()) - 2;
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
  const size_t off = 2 - k;  // a 1-D window fills the second dim
  for (size_t d = 0; d < k; ++d) {
    w.kernel[off + d] = kernel[d];
    w.stride[off + d] = stride[d];
    w.dilation[off + d] = dilation[d];
    w.begin[off + d] = pads[d];
    w.end[off + d] = pads[d + k];
  }
  return w;
}

// x as [N, C, H, W] (a 1-D input gets H = 1).
int as_2d(NodeCtx& c, int x, int spatial) {
  if (spatial == 2) return x;
  Shape s = c.type_of(x).shape;
  s.insert(s.begin() + 2, 1);
  return c.reshape(x, s);
}
// y back to the model's rank.
int from_2d(NodeCtx& c, int y, int spatial) {
  if (spatial == 2) return y;
  Shape s = c.type_of(y).shape;
  s.erase(s.begin() + 2);
  return c.reshape(y, s);
}

// Pads x's two spatial dims explicitly (before/after per dim) with `value`.
int pad_spatial(NodeCtx& c, int x, const OnnxWindow& w, double value) {
  return c.emit1(Op::pad, x, {{"pads", AttrValue::ints({w.begin[1], w.end[1], w.begin[0], w.end[0]})}, {"value", AttrValue(value)}});
}

Attrs window_attrs(const OnnxWindow& w, bool padded_in_op, bool with_dilation) {
  Attrs a{{"stride", AttrValue::ints({w.stride[0], w.stride[1]})},
          {"padding", AttrValue::ints(padded_in_op ? std::vector<int64_t>{w.begin[0], w.begin[1]} : std::vector<int64_t>{0, 0})}};
  if (with_dilation) a["dilation"] = AttrValue::ints({w.dilation[0], w.dilation[1]});
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
  c.set(0, from_2d(c, c.emit(Op::conv2d, ops, a), w.spatial));
}

// Whether reprokit's pool takes these pads itself (PyTorch allows at most half the window).
bool pool_takes_pads(const OnnxWindow& w) {
  for (int d = 0; d < 2; ++d)
    if (w.begin[d] * 2 > w.dilation[d] * (w.kernel[d] - 1) + 1) return false;
  return w.symmetric();
}

void max_pool(NodeCtx& c) {
  c.allow({"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"});
  if (c.wants(1)) c.unsupported("the Indices output (reprokit's max_pool2d returns the values only)");
  require_float(c, 0);
  OnnxWindow w = onnx_window(c, nullptr);
  int x = as_2d(c, c.value(0), w.spatial);
  const bool in_op = pool_takes_pads(w);
  if (!in_op) x = pad_spatial(c, x, w, -std::numeric_limits<double>::infinity());  // padding never wins a max
  Attrs a = window_attrs(w, in_op, true);
  a["kernel"] = AttrValue::ints({w.kernel[0], w.kernel[1]});
  a["ceil_mode"] = AttrValue(c.attr_int("ceil_mode", 0) != 0);
  c.set(0, from_2d(c, c.emit1(Op::max_pool2d, x, a), w.spatial));
}

// The number of input elements each window covers, per output position ([oh, ow]), for windows
// whose pads are explicit (begin/end per dim).
std::vector<double> valid_counts(const OnnxWindow& w, int64_t h, int64_t wd, int64_t oh, int64_t ow) {
  std::vector<double> counts(static_cast<size_t>(oh * ow));
  auto covered = [](int64_t start, int64_t k, int64_t size) { return std::max<int64_t>(std::min(start + k, size) - std::max<int64_t>(start, 0), 0); };
  for (int64_t y = 0; y < oh; ++y)
    for (int64_t x = 0; x < ow; ++x)
      counts[static_cast<size_t>(y * ow + x)] =
          static_cast<double>(covered(y * w.stride[0] - w.begin[0], w.kernel[0], h) * covered(x * w.stride[1] - w.begin[1], w.kernel[1], wd));
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
  a["kernel"] = AttrValue::ints({w.kernel[0], w.kernel[1]});
  a["ceil_mode"] = AttrValue(c.attr_int("ceil_mode", 0) != 0);
  a["count_include_pad"] = AttrValue(include_pad || !in_op);
  int y = c.emit1(Op::avg_pool2d, x, a);
  if (!in_op && !include_pad) {
    // The explicit zeros were counted: rescale each window by its padded size over the number of
    // input elements it covers.
    const Shape& ys = c.type_of(y).shape;
    const int64_t ph = c.type_of(x).shape[2], pw = c.type_of(x).shape[3];
    OnnxWindow padded = w;
    padded.begin[0] = padded.begin[1] = 0;
    std::vector<double> scale = valid_counts(w, xs[2], xs[3], ys[2], ys[3]);
    std::vector<double> counted = valid_counts(padded, ph, pw, ys[2], ys[3]);
    for (size_t k = 0; k < scale.size(); ++k) {
      if (scale[k] == 0) c.unsupported("a window that covers no input element");
      scale[k] = counted[k] / scale[k];
    }
    y = c.emit(Op::mul, {v(y), v(c.const_value(Tensor::from_doubles(c.dtype(0), {ys[2], ys[3]}, scale)))});
  }
  c.set(0, from_2d(c, y, w.spatial));
}

// GlobalAveragePool / GlobalMaxPool: a keepdim reduction over every spatial dim.
template <Op op>
void global_pool(NodeCtx& c) {
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
    if (c.dtype(i) != c.dtype(0)) c.unsupported(fmt::format("input {} of type {} with X of type {}", i + 1, dtype_name(c.dtype(i)), dtype_name(c.dtype(0))));
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
