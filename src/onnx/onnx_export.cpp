// ONNX export (opset 17, IR version 8). See onnx_export.h for the mapping of each op.
#include "reprokit/onnx/onnx_export.h"

#include <fmt/format.h>
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>
#include <optional>
#include <set>

#include "onnx_op_names.h"
#include "proto_util.h"
#include "reprokit/ir/builder.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/op_semantics.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/onnx/onnx_tensor.h"

namespace reprokit {

namespace {

constexpr int kOpset = 17;

std::string onnx_type_str(DType dt) {
  switch (dt) {
    case DType::f16: return "tensor(float16)";
    case DType::bf16: return "tensor(bfloat16)";
    case DType::f32: return "tensor(float)";
    case DType::f64: return "tensor(double)";
    case DType::i32: return "tensor(int32)";
    case DType::i64: return "tensor(int64)";
    case DType::boolean: return "tensor(bool)";
    case DType::i8: return "tensor(int8)";
    case DType::u8: return "tensor(uint8)";
    case DType::i16: return "tensor(int16)";
    case DType::u16: return "tensor(uint16)";
  }
  return "";
}

// Whether opset 17's op_type accepts dtype for its input `index`.
bool onnx_accepts(const std::string& op_type, DType dt, size_t index = 0) {
  const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(op_type, kOpset, "");
  if (!s || s->inputs().empty()) return false;
  const auto& formal = s->inputs()[std::min(index, s->inputs().size() - 1)];
  const std::string& param = formal.GetTypeStr();
  for (const auto& tc : s->typeConstraintParams())
    if (tc.type_param_str == param) {
      for (const auto& t : tc.allowed_type_strs)
        if (t == onnx_type_str(dt)) return true;
      return false;
    }
  return param == onnx_type_str(dt);
}

using AttrFn = std::function<void(onnx::NodeProto&)>;

AttrFn a_int(const std::string& name, int64_t v) {
  return [=](onnx::NodeProto& n) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  };
}
AttrFn a_float(const std::string& name, double v) {
  return [=](onnx::NodeProto& n) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(static_cast<float>(v));
  };
}
AttrFn a_ints(const std::string& name, const std::vector<int64_t>& v) {
  return [=](onnx::NodeProto& n) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (auto x : v) a->add_ints(x);
  };
}

AttrFn a_string(const std::string& name, const std::string& v) {
  return [=](onnx::NodeProto& n) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  };
}

AttrFn tensor_attr(const std::string& name, const Tensor& t) {
  return [=](onnx::NodeProto& n) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::TENSOR);
    onnx_detail::tensor_to_proto(t, a->mutable_t());
  };
}

struct Val {
  std::string name;
  DType dtype;
};

class Exporter {
 public:
  Exporter(const Graph& g, const std::map<std::string, Tensor>& initializers) : g_(g), names_(g), given_(initializers) {}

  std::string run() {
    onnx::ModelProto model;
    model.set_ir_version(8);
    model.set_producer_name("reprokit");
    auto* op = model.add_opset_import();
    op->set_domain("");
    op->set_version(kOpset);
    gp_ = model.mutable_graph();
    gp_->set_name(g_.name);
    vals_.resize(g_.nodes.size());
    for (int id = 0; id < g_.size(); ++id) {
      const Node& n = g_.node(id);
      if (n.is_input()) {
        if (auto it = given_.find(n.name); it != given_.end()) {
          if (it->second.dtype() != n.type.dtype || it->second.shape() != n.type.shape)
            throw UserError(fmt::format("the value given for input %{} is not {}", n.name, n.type.str()));
          auto* p = gp_->add_initializer();
          onnx_detail::tensor_to_proto(it->second.contiguous(), p);
          p->set_name(n.name);
          initializer_inputs_.insert(n.name);
        } else {
          add_value_info(gp_->add_input(), n.name, n.type.dtype, n.type.shape);
        }
        vals_[static_cast<size_t>(id)] = {n.name, n.type.dtype};
        continue;
      }
      try {
        Val out = export_node(id);
        if (out.dtype != n.type.dtype) out = cast(out, n.type.dtype);
        // The value keeps the reprokit name: the node that made it is renamed, or an Identity added.
        auto* last = gp_->node_size() > 0 ? gp_->mutable_node(gp_->node_size() - 1) : nullptr;
        if (last && last->output(0) == out.name && !is_graph_input(out.name)) {
          last->set_output(0, n.name);
          last->set_name(n.name);
          out.name = n.name;
        } else {
          out = node("Identity", {out.name}, out.dtype, {}, n.name);
        }
        vals_[static_cast<size_t>(id)] = out;
      } catch (const UserError& e) {
        throw UserError(fmt::format("graph {}: node {}: cannot export to ONNX: {}", g_.name, print_node(g_, id), e.what()));
      }
    }
    std::set<std::string> returned;
    for (int o : g_.outputs) {
      Val v = vals_[static_cast<size_t>(o)];
      if (g_.node(o).is_input() || returned.count(v.name)) v = node("Identity", {v.name}, v.dtype, {}, names_.fresh(g_.node(o).name + ".out"));
      returned.insert(v.name);
      add_value_info(gp_->add_output(), v.name, v.dtype, g_.node(o).type.shape);
    }
    std::string bytes = model.SerializeAsString();
    validate(model);
    return bytes;
  }

 private:
  const Graph& g_;
  NameSet names_;
  const std::map<std::string, Tensor>& given_;  // inputs exported as initializers
  std::set<std::string> initializer_inputs_;
  onnx::GraphProto* gp_ = nullptr;
  std::vector<Val> vals_;
  std::string base_ = "v";  // the node being exported: new names derive from it

  bool is_graph_input(const std::string& name) const {
    if (initializer_inputs_.count(name)) return true;
    for (const auto& i : gp_->input())
      if (i.name() == name) return true;
    return false;
  }

  static void add_value_info(onnx::ValueInfoProto* vi, const std::string& name, DType dt, const Shape& shape) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx_elem_type(dt));
    auto* s = tt->mutable_shape();
    for (int64_t d : shape) s->add_dim()->set_dim_value(d);
  }

  static void validate(const onnx::ModelProto& model) {
    try {
      onnx::checker::check_model(model);
      onnx::ModelProto copy = model;
      onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(), onnx::ShapeInferenceOptions(true, 1, false));
    } catch (const std::exception& e) { throw InternalError(fmt::format("the exported ONNX model does not check: {}", e.what())); }
  }

  // A new ONNX node with one output of dtype `dt`; returns it.
  Val node(const std::string& op_type, const std::vector<std::string>& inputs, DType dt, const std::vector<AttrFn>& attrs = {},
           const std::string& out_name = "") {
    auto* n = gp_->add_node();
    n->set_op_type(op_type);
    std::string out = out_name.empty() ? names_.fresh(fmt::format("{}.{}", base_, op_type)) : out_name;
    names_.reserve(out);
    n->set_name(out);
    for (const auto& i : inputs) n->add_input(i);
    n->add_output(out);
    for (const auto& a : attrs) a(*n);
    return {out, dt};
  }

  std::string initializer(const Tensor& t) {
    auto* p = gp_->add_initializer();
    onnx_detail::tensor_to_proto(t, p);
    std::string name = names_.fresh(base_ + ".c");
    p->set_name(name);
    return name;
  }
  std::string ints(const std::vector<int64_t>& v) { return initializer(Tensor::from_int64s(DType::i64, {static_cast<int64_t>(v.size())}, v)); }
  std::string scalar(const AttrValue& a, DType dt) {
    Tensor t =
        a.is_float() ? Tensor::from_doubles(dt, {}, {a.as_float()}) : Tensor::from_int64s(dt, {}, {a.is_bool() ? int64_t{a.as_bool()} : a.as_int()});
    return initializer(t);
  }

  // A Reshape to a static shape. A 0 in ONNX's shape means "keep the input's dim" unless
  // allowzero=1: a value with a zero-size dim must say it (found by fuzzing: linear of a [4, 0, 2]
  // value made a model ONNX's checker refused).
  Val reshape(const std::string& x, const Shape& shape, DType dt) {
    const bool zero = std::find(shape.begin(), shape.end(), 0) != shape.end();
    std::vector<AttrFn> at;
    if (zero) at.push_back(a_int("allowzero", 1));
    return node("Reshape", {x, ints(shape)}, dt, at);
  }

  Val cast(const Val& v, DType to) {
    if (v.dtype == to) return v;
    return node("Cast", {v.name}, to, {a_int("to", onnx_elem_type(to))});
  }
  Val in(const Node& n, size_t k) { return vals_[static_cast<size_t>(n.operands[k].value)]; }
  // Operand k as an ONNX value of dtype dt (a literal becomes a 0-d initializer).
  std::string operand(const Node& n, size_t k, DType dt) {
    const Operand& o = n.operands[k];
    if (!o.is_value()) return scalar(o.literal, dt);
    return cast(vals_[static_cast<size_t>(o.value)], dt).name;
  }
  const TensorType& type(const Node& n, size_t k) const { return g_.node(n.operands[k].value).type; }

  // The dtype op_type runs in for a value of dtype `want`: want itself when opset 17 allows it,
  // else a wider one (f16/bf16 -> f32 as reprokit computes them; bool -> i32; i32 -> i64; the
  // small integers -> i32, where the cast back wraps as reprokit's arithmetic does).
  DType exec(const std::string& op_type, DType want, size_t index = 0) {
    if (onnx_accepts(op_type, want, index)) return want;
    std::vector<DType> alts;
    if (want == DType::f16 || want == DType::bf16) alts = {DType::f32};
    if (want == DType::boolean) alts = {DType::i32, DType::i64, DType::f32};
    if (want == DType::i32) alts = {DType::i64};
    if (want == DType::i8 || want == DType::u8 || want == DType::i16 || want == DType::u16) alts = {DType::i32, DType::i64};
    for (DType a : alts)
      if (onnx_accepts(op_type, a, index)) return a;
    throw UserError(fmt::format("ONNX's {} (opset {}) does not take {}", op_type, kOpset, dtype_name(want)));
  }

  Val unary(const std::string& op_type, const Val& x, DType dt) {
    DType e = exec(op_type, dt);
    return node(op_type, {cast(x, e).name}, e);
  }
  Val binary(const std::string& op_type, const Val& a, const Val& b) {
    DType e = exec(op_type, a.dtype);
    return node(op_type, {cast(a, e).name, cast(b, e).name}, e);
  }
  Val lit(double x, DType dt) { return {initializer(Tensor::from_doubles(dt, {}, {x})), dt}; }

  Val gelu(const Val& x0, bool tanh_form, DType dt) {
    Val x = cast(x0, dt);
    Val inner;
    if (tanh_form) {  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
      Val x3 = binary("Mul", binary("Mul", x, x), x);
      Val s = binary("Add", x, binary("Mul", x3, lit(0.044715, dt)));
      inner = unary("Tanh", binary("Mul", s, lit(std::sqrt(2.0 / std::numbers::pi), dt)), dt);
    } else {  // 0.5 x (1 + erf(x / sqrt 2))
      inner = unary("Erf", binary("Mul", x, lit(1.0 / std::sqrt(2.0), dt)), dt);
    }
    return binary("Mul", binary("Mul", x, lit(0.5, dt)), binary("Add", inner, lit(1.0, dt)));
  }

  Val reduce(const std::string& op_type, const Val& x, const std::vector<int64_t>& dims, bool keepdim, bool axes_as_input) {
    DType e = exec(op_type, x.dtype);
    Val xe = cast(x, e);
    if (axes_as_input) return node(op_type, {xe.name, ints(dims)}, e, {a_int("keepdims", keepdim)});
    return node(op_type, {xe.name}, e, {a_ints("axes", dims), a_int("keepdims", keepdim)});
  }

  // ---- pooling. ONNX's ceil_mode may count one more window than PyTorch (whose last window must
  // start inside the input or its left padding), so a pool exports with ceil_mode=0 and the end
  // pads that give PyTorch's window count: padding never wins a max, and an average pool's
  // divisor is kept exact by padding explicitly (count_include_pad) or not counting pads.
  struct PoolGeometry {
    Window w;
    int64_t extra[3] = {0, 0, 0};  // end pads beyond w.padding
  };
  PoolGeometry pool_geometry(const Node& n, const Shape& x, const Shape& y) const {
    PoolGeometry p{window_of(n)};
    for (int d = 0; d < p.w.rank; ++d) {
      const size_t sd = static_cast<size_t>(d);
      const int64_t span = p.w.dilation[d] * (p.w.kernel[d] - 1) + 1;
      p.extra[d] = std::max<int64_t>((y[2 + sd] - 1) * p.w.stride[d] + span - (x[2 + sd] + 2 * p.w.padding[d]), 0);
    }
    return p;
  }
  static std::vector<int64_t> per_dim(const Window& w, const int64_t* v) { return std::vector<int64_t>(v, v + w.rank); }
  std::vector<AttrFn> pool_attrs(const Window& w, const int64_t* begin, const int64_t* end, bool dilation) {
    std::vector<int64_t> pads = per_dim(w, begin);
    for (int d = 0; d < w.rank; ++d) pads.push_back(end[d]);
    std::vector<AttrFn> a{a_ints("kernel_shape", per_dim(w, w.kernel)), a_ints("strides", per_dim(w, w.stride)), a_ints("pads", pads)};
    if (dilation) a.push_back(a_ints("dilations", per_dim(w, w.dilation)));
    return a;
  }
  Val max_pool(const Node& n, DType od) {
    DType e = exec("MaxPool", od);
    PoolGeometry p = pool_geometry(n, type(n, 0).shape, n.type.shape);
    int64_t end[3];
    for (int d = 0; d < 3; ++d) end[d] = p.w.padding[d] + p.extra[d];
    return node("MaxPool", {operand(n, 0, e)}, e, pool_attrs(p.w, p.w.padding, end, true));
  }
  Val avg_pool(const Node& n, DType od) {
    DType e = exec("AveragePool", od);
    PoolGeometry p = pool_geometry(n, type(n, 0).shape, n.type.shape);
    const bool include_pad = attr_bool(n, "count_include_pad");
    std::string x = operand(n, 0, e);
    const int r = p.w.rank;
    int64_t begin[3], end[3];
    bool any_extra = false, any_begin = false;
    for (int d = 0; d < 3; ++d) {
      begin[d] = p.w.padding[d];
      end[d] = p.w.padding[d] + p.extra[d];
      any_extra = any_extra || (d < r && p.extra[d]);
      any_begin = any_begin || (d < r && begin[d]);
    }
    bool count_pads = include_pad;
    if (include_pad && any_extra && any_begin) {
      // PyTorch counts the real padding but not the windows' overhang past it.
      std::vector<int64_t> pads(static_cast<size_t>(4 + 2 * r), 0);
      for (int d = 0; d < r; ++d) pads[static_cast<size_t>(2 + d)] = pads[static_cast<size_t>(2 + r + 2 + d)] = begin[d];
      x = node("Pad", {x, ints(pads)}, e).name;
      for (int d = 0; d < r; ++d) {
        begin[d] = 0;
        end[d] = p.extra[d];
      }
      count_pads = false;
    } else if (any_extra) {
      count_pads = false;  // no real padding (or it is not counted): the overhang is never counted
    }
    auto a = pool_attrs(p.w, begin, end, false);
    a.push_back(a_int("count_include_pad", count_pads));
    return node("AveragePool", {x}, e, a);
  }
  // Adaptive average pooling is separable: y = A_h x A_w^T with A's rows averaging each range.
  Val adaptive_avg_pool(const Node& n, DType od) {
    DType e = exec("MatMul", od);
    const Shape& xs = type(n, 0).shape;
    const int64_t oh = n.type.shape[2], ow = n.type.shape[3];
    if (oh == 1 && ow == 1) return node("GlobalAveragePool", {operand(n, 0, exec("GlobalAveragePool", od))}, exec("GlobalAveragePool", od));
    auto averaging = [&](int64_t in, int64_t out, bool transposed) {
      std::vector<double> m(static_cast<size_t>(in * out), 0.0);
      for (int64_t i = 0; i < out; ++i) {
        const int64_t s = adaptive_start(i, in, out), t = adaptive_end(i, in, out);
        for (int64_t k = s; k < t; ++k) m[static_cast<size_t>(transposed ? k * out + i : i * in + k)] = 1.0 / static_cast<double>(t - s);
      }
      return initializer(Tensor::from_doubles(e, transposed ? Shape{in, out} : Shape{out, in}, m));
    };
    Val rows = node("MatMul", {operand(n, 0, e), averaging(xs[3], ow, true)}, e);
    return node("MatMul", {averaging(xs[2], oh, false), rows.name}, e);
  }
  // The pools' backward ops, written with ops the importer maps back (ONNX's scatter has no
  // reprokit counterpart): the gradient of each window goes to one element (max) or all of them
  // (average), tap by tap. Tap t of every window is a strided view of the padded input, so each
  // tap's share is g spread out by the stride (zeros between), shifted to the tap's offset.
  struct PoolFrame {
    Window w;
    Shape in, out;  // spatial sizes of the input and of the gradient
    Shape frame;    // the padded input, right pad grown to cover every window
    std::vector<int64_t> axes() const {
      std::vector<int64_t> a;
      for (int d = 0; d < w.rank; ++d) a.push_back(2 + d);
      return a;
    }
  };
  PoolFrame pool_frame(const Node& n) const {
    const Shape& xs = type(n, 1).shape;
    const Shape& gs = type(n, 0).shape;
    PoolFrame f{window_of(n), Shape(xs.begin() + 2, xs.end()), Shape(gs.begin() + 2, gs.end()), {}};
    for (int d = 0; d < f.w.rank; ++d) {
      const size_t sd = static_cast<size_t>(d);
      const int64_t last = (f.out[sd] - 1) * f.w.stride[d] + f.w.dilation[d] * (f.w.kernel[d] - 1) + 1;
      f.frame.push_back(std::max(f.in[sd] + 2 * f.w.padding[d], last));
    }
    return f;
  }
  // The offset in the frame of tap t of the window at output 0, per spatial dim.
  static std::vector<int64_t> tap_offset(const Window& w, int64_t t) {
    std::vector<int64_t> off(static_cast<size_t>(w.rank));
    for (int d = w.rank - 1; d >= 0; --d) {
      off[static_cast<size_t>(d)] = (t % w.kernel[d]) * w.dilation[d];
      t /= w.kernel[d];
    }
    return off;
  }
  // v [N, C, O1, ...] placed in the frame: element (i, j, ...) at (off[0] + i * s[0], ...).
  Val place(const Val& v, const PoolFrame& f, const std::vector<int64_t>& off, const Shape& nc) {
    const size_t r = static_cast<size_t>(f.w.rank);
    Shape split{nc[0], nc[1]}, spread{nc[0], nc[1]};
    std::vector<int64_t> gaps(4 + 4 * r, 0), shift(4 + 2 * r, 0);
    bool strided = false;
    for (size_t d = 0; d < r; ++d) {
      const int64_t sd = f.w.stride[d];
      split.push_back(f.out[d]);
      split.push_back(1);
      spread.push_back(f.out[d] * sd);
      gaps[2 + 2 * r + 2 + 2 * d + 1] = sd - 1;  // end pads of the unit dim after each spatial dim
      strided = strided || sd > 1;
      shift[2 + d] = off[d];
      shift[2 + r + 2 + d] = std::max<int64_t>(f.frame[d] - off[d] - f.out[d] * sd, 0);
    }
    Val u = reshape(v.name, split, v.dtype);
    if (strided) u = node("Pad", {u.name, ints(gaps)}, v.dtype);
    u = reshape(u.name, spread, v.dtype);
    u = node("Pad", {u.name, ints(shift)}, v.dtype);
    return node("Slice", {u.name, ints(std::vector<int64_t>(r, 0)), ints(f.frame), ints(f.axes())}, v.dtype);
  }
  // The sum of the taps' shares, cropped to the input.
  Val gather_taps(const std::vector<Val>& shares, const PoolFrame& f) {
    std::vector<std::string> names;
    for (const auto& s : shares) names.push_back(s.name);
    Val total = names.size() == 1 ? shares[0] : node("Sum", names, shares[0].dtype);
    std::vector<int64_t> begin, end;
    for (int d = 0; d < f.w.rank; ++d) {
      begin.push_back(f.w.padding[d]);
      end.push_back(f.w.padding[d] + f.in[static_cast<size_t>(d)]);
    }
    return node("Slice", {total.name, ints(begin), ints(end), ints(f.axes())}, total.dtype);
  }
  int64_t tap_count(const Window& w) {
    int64_t taps = 1;
    for (int d = 0; d < w.rank; ++d) taps *= w.kernel[d];
    if (taps > 1024)
      throw UserError(fmt::format("a pool backward with {} taps per window (the export writes a few nodes per tap; at most 1024)", taps));
    return taps;
  }
  Val max_pool_backward(const Node& n, DType od) {
    DType e = exec("MaxPool", od);
    const PoolFrame f = pool_frame(n);
    const Shape& xs = type(n, 1).shape;
    const int64_t taps = tap_count(f.w);
    const size_t r = static_cast<size_t>(f.w.rank);
    std::vector<int64_t> pads(4 + 2 * r, 0);
    for (size_t d = 0; d < r; ++d) {
      pads[2 + d] = f.w.padding[d];
      pads[2 + r + 2 + d] = f.frame[d] - f.in[d] - f.w.padding[d];
    }
    Val x = node("Pad", {operand(n, 1, e), ints(pads), scalar(AttrValue(-HUGE_VAL), e)}, e);
    const int64_t axis = static_cast<int64_t>(r) + 2;
    std::vector<std::string> stacked;  // tap t of every window, along a new last dim
    for (int64_t t = 0; t < taps; ++t) {
      const std::vector<int64_t> off = tap_offset(f.w, t);
      std::vector<int64_t> end, step;
      for (size_t d = 0; d < r; ++d) {
        end.push_back(off[d] + (f.out[d] - 1) * f.w.stride[d] + 1);
        step.push_back(f.w.stride[d]);
      }
      Val xt = node("Slice", {x.name, ints(off), ints(end), ints(f.axes()), ints(step)}, e);
      stacked.push_back(node("Unsqueeze", {xt.name, ints({axis})}, e).name);
    }
    Val windows = stacked.size() == 1 ? Val{stacked[0], e} : node("Concat", stacked, e, {a_int("axis", axis)});
    Val arg = node("ArgMax", {windows.name}, DType::i64, {a_int("axis", axis), a_int("keepdims", 0)});  // the first maximum
    Val g = cast(in(n, 0), e);
    std::vector<Val> shares;
    for (int64_t t = 0; t < taps; ++t) {
      Val hit = node("Cast", {node("Equal", {arg.name, initializer(Tensor::from_int64s(DType::i64, {}, {t}))}, DType::boolean).name}, e,
                     {a_int("to", onnx_elem_type(e))});
      shares.push_back(place(binary("Mul", g, hit), f, tap_offset(f.w, t), xs));
    }
    return gather_taps(shares, f);
  }
  Val avg_pool_backward(const Node& n, DType od) {
    DType e = exec("Mul", od);
    const PoolFrame f = pool_frame(n);
    const Shape& xs = type(n, 1).shape;
    const int64_t taps = tap_count(f.w);
    std::vector<double> inv(static_cast<size_t>(numel(f.out)));
    for_each_pool_window(
        f.w, attr_bool(n, "count_include_pad"), f.in.data(), f.out.data(), [](int64_t, int64_t) {},
        [&](int64_t o, double div) { inv[static_cast<size_t>(o)] = 1.0 / div; });
    Val g = binary("Mul", cast(in(n, 0), e), {initializer(Tensor::from_doubles(e, f.out, inv)), e});
    std::vector<Val> shares;
    for (int64_t t = 0; t < taps; ++t) shares.push_back(place(g, f, tap_offset(f.w, t), xs));
    return gather_taps(shares, f);
  }

 public:  // the rules, which the table after the class points to
  // ---- one rule per op, as the table below lists them. `onnx_type` is the row's ONNX op type, for
  // the rules several ops share.
  Val rule_unary(const Node& n, DType od, const char* onnx_type) { return unary(onnx_type, in(n, 0), od); }
  Val rule_rsqrt(const Node& n, DType od, const char*) { return unary("Reciprocal", unary("Sqrt", in(n, 0), od), od); }
  Val rule_silu(const Node& n, DType od, const char*) {  // x * sigmoid(x), in f32 for f16/bf16 as reprokit's decomposition
    DType e = is_floating(od) && dtype_size(od) == 2 ? DType::f32 : od;
    Val x = cast(in(n, 0), e);
    return binary("Mul", x, unary("Sigmoid", x, e));
  }
  Val rule_gelu(const Node& n, DType od, const char*) {
    DType e = dtype_size(od) == 2 ? DType::f32 : od;
    return gelu(in(n, 0), attr(n, "approximate").as_string() == "tanh", e);
  }
  // Elementwise binary ops and comparisons (ne is Equal, then Not).
  Val rule_binary(const Node& n, DType, const char* onnx_type) {
    const DType cd = compute_dtype(g_, n);
    DType e = exec(onnx_type, cd);
    Val y = node(onnx_type, {operand(n, 0, e), operand(n, 1, e)}, is_comparison(n.op) ? DType::boolean : e);
    if (n.op == Op::ne) y = node("Not", {y.name}, DType::boolean);
    return y;
  }
  Val rule_where(const Node& n, DType od, const char*) {
    DType e = exec("Where", od, 1);
    return node("Where", {operand(n, 0, DType::boolean), operand(n, 1, e), operand(n, 2, e)}, e);
  }
  Val rule_to(const Node& n, DType od, const char*) { return in(n, 0).dtype == od ? node("Identity", {in(n, 0).name}, od) : cast(in(n, 0), od); }
  Val rule_identity(const Node& n, DType, const char*) { return node("Identity", {in(n, 0).name}, in(n, 0).dtype); }
  // sum, amax, amin, mean: ReduceSum (axes as an input), ReduceMax, ReduceMin, ReduceMean.
  Val rule_reduce(const Node& n, DType od, const char* onnx_type) {
    const TensorType& xt = type(n, 0);
    std::vector<int64_t> dims = reduction_dims(n, xt.rank());
    Val x = cast(in(n, 0), od);
    if (dims.empty()) return node("Identity", {x.name}, od);
    return reduce(onnx_type, x, dims, attr_bool(n, "keepdim"), n.op == Op::sum);
  }
  Val rule_var(const Node& n, DType od, const char*) {
    const TensorType& xt = type(n, 0);
    std::vector<int64_t> dims = reduction_dims(n, xt.rank());
    const bool keep = attr_bool(n, "keepdim");
    DType e = dtype_size(od) == 2 ? DType::f32 : od;
    Val x = cast(in(n, 0), e);
    if (dims.empty()) {
      // Reduces nothing: every element is its own mean, so the variance is 0/(1 - correction).
      double denom = std::max(1.0 - static_cast<double>(attr_int(n, "correction")), 0.0);
      Val d = binary("Sub", x, x);
      return binary("Div", d, lit(denom, e));
    }
    Val m = reduce("ReduceMean", x, dims, true, false);
    Val d = binary("Sub", x, m);
    Val s = reduce("ReduceSum", binary("Mul", d, d), dims, keep, true);
    double count = static_cast<double>(reduction_count(xt.shape, dims));
    return binary("Div", s, lit(std::max(count - static_cast<double>(attr_int(n, "correction")), 0.0), e));
  }
  Val rule_argmax(const Node& n, DType, const char*) {
    const TensorType& xt = type(n, 0);
    Val x = in(n, 0);
    DType e = exec("ArgMax", x.dtype);
    x = cast(x, e);
    if (!attr_opt(n, "dim")) {
      Val flat = node("Reshape", {x.name, ints({-1})}, e);
      Val y = node("ArgMax", {flat.name}, DType::i64, {a_int("axis", 0), a_int("keepdims", 0)});
      if (n.type.shape.empty()) return y;
      return reshape(y.name, n.type.shape, DType::i64);
    }
    int64_t dim = normalize_dim(attr_int(n, "dim"), xt.rank());
    if (xt.rank() == 0)
      return node("Reshape",
                  {node("ArgMax", {node("Reshape", {x.name, ints({1})}, e).name}, DType::i64, {a_int("axis", 0), a_int("keepdims", 0)}).name,
                   ints(n.type.shape)},
                  DType::i64);
    return node("ArgMax", {x.name}, DType::i64, {a_int("axis", dim), a_int("keepdims", attr_bool(n, "keepdim"))});
  }
  // softmax, log_softmax: Softmax, LogSoftmax.
  Val rule_softmax(const Node& n, DType od, const char* onnx_type) {
    const TensorType& xt = type(n, 0);
    int64_t dim = normalize_dim(attr_int(n, "dim"), xt.rank());
    DType e = exec(onnx_type, od);
    if (xt.rank() == 0) {  // a softmax over one element
      Val x1 = node("Reshape", {cast(in(n, 0), e).name, ints({1})}, e);
      return node("Reshape", {node(onnx_type, {x1.name}, e, {a_int("axis", 0)}).name, ints({})}, e);
    }
    return node(onnx_type, {cast(in(n, 0), e).name}, e, {a_int("axis", dim)});
  }
  Val rule_layer_norm(const Node& n, DType od, const char*) {
    auto ns = attr_ints(n, "normalized_shape");
    DType e = exec("LayerNormalization", od);
    std::string scale =
        n.operands.size() > 1 ? operand(n, 1, e) : initializer(Tensor::from_doubles(e, ns, std::vector<double>(static_cast<size_t>(numel(ns)), 1.0)));
    std::vector<std::string> ins{cast(in(n, 0), e).name, scale};
    if (n.operands.size() > 2) ins.push_back(operand(n, 2, e));
    std::vector<AttrFn> attrs{a_int("axis", -static_cast<int64_t>(ns.size())), a_float("epsilon", attr_float(n, "eps"))};
    // The mean and variance are kept in float32 unless stash_type says otherwise (ONNX's default):
    // a float64 layer norm keeps them in float64, as reprokit computes it.
    if (e == DType::f64) attrs.push_back(a_int("stash_type", onnx_elem_type(DType::f64)));
    return node("LayerNormalization", ins, e, attrs);
  }
  Val rule_matmul(const Node& n, DType od, const char*) {
    DType e = exec("MatMul", od);
    return node("MatMul", {operand(n, 0, e), operand(n, 1, e)}, e);
  }
  Val rule_linear(const Node& n, DType od, const char*) {
    const TensorType& xt = type(n, 0);
    const TensorType& wt = type(n, 1);
    DType e = exec("Gemm", od);
    std::vector<std::string> ins{cast(in(n, 0), e).name, operand(n, 1, e)};
    if (n.operands.size() > 2) ins.push_back(operand(n, 2, e));
    if (xt.rank() == 2) return node("Gemm", ins, e, {a_int("transB", 1)});
    int64_t rows = 1;  // the leading dims as one: explicit, since -1 cannot be inferred beside a 0
    for (int64_t d = 0; d + 1 < xt.rank(); ++d) rows *= xt.shape[static_cast<size_t>(d)];
    ins[0] = reshape(ins[0], {rows, wt.shape[1]}, e).name;
    Val y = node("Gemm", ins, e, {a_int("transB", 1)});
    return reshape(y.name, n.type.shape, e);
  }
  Val rule_batch_norm(const Node& n, DType od, const char*) {  // ONNX: X, scale, B, mean, var
    DType e = dtype_size(od) == 2 ? DType::f32 : od;
    const int64_t ch = n.type.shape[1];
    std::string w =
        n.operands.size() > 3 ? operand(n, 3, e) : initializer(Tensor::from_doubles(e, {ch}, std::vector<double>(static_cast<size_t>(ch), 1.0)));
    std::string b =
        n.operands.size() > 4 ? operand(n, 4, e) : initializer(Tensor::from_doubles(e, {ch}, std::vector<double>(static_cast<size_t>(ch), 0.0)));
    return node("BatchNormalization", {operand(n, 0, e), w, b, operand(n, 1, e), operand(n, 2, e)}, e, {a_float("epsilon", attr_float(n, "eps"))});
  }
  // Per-channel weight and bias of an [N, C, ...] normalization, ones and zeros when absent.
  std::string channel_param(const Node& n, size_t k, int64_t channels, double fill, DType e) {
    if (n.operands.size() > k) return operand(n, k, e);
    return initializer(Tensor::from_doubles(e, {channels}, std::vector<double>(static_cast<size_t>(channels), fill)));
  }
  Val rule_instance_norm(const Node& n, DType od, const char*) {
    DType e = exec("InstanceNormalization", od);
    const int64_t ch = n.type.shape[1];
    return node("InstanceNormalization", {operand(n, 0, e), channel_param(n, 1, ch, 1.0, e), channel_param(n, 2, ch, 0.0, e)}, e,
                {a_float("epsilon", attr_float(n, "eps"))});
  }
  // Opset 17 has no GroupNormalization: the groups become the channels of an InstanceNormalization
  // over [N, groups, rest] (as PyTorch's exporter writes nn.GroupNorm), then the per-channel affine.
  Val rule_group_norm(const Node& n, DType od, const char*) {
    DType e = exec("InstanceNormalization", od);
    const Shape& xs = n.type.shape;
    const int64_t groups = norm_groups(n, xs);
    const int64_t rest = xs[1] / groups * numel(Shape(xs.begin() + 2, xs.end()));
    Val grouped = reshape(operand(n, 0, e), {xs[0], groups, rest}, e);
    Val y = node("InstanceNormalization",
                 {grouped.name, initializer(Tensor::from_doubles(e, {groups}, std::vector<double>(static_cast<size_t>(groups), 1.0))),
                  initializer(Tensor::from_doubles(e, {groups}, std::vector<double>(static_cast<size_t>(groups), 0.0)))},
                 e, {a_float("epsilon", attr_float(n, "eps"))});
    y = reshape(y.name, xs, e);
    Shape ps(xs.size() - 1, 1);  // [C, 1, ...]: broadcasts over N and the spatial dims
    ps[0] = xs[1];
    if (n.operands.size() > 1) y = node("Mul", {y.name, reshape(operand(n, 1, e), ps, e).name}, e);
    if (n.operands.size() > 2) y = node("Add", {y.name, reshape(operand(n, 2, e), ps, e).name}, e);
    return y;
  }
  // pixel_shuffle of [N, C, H, W] is DepthToSpace in CRD mode; other ranks and pixel_unshuffle
  // (whose channel order is not SpaceToDepth's) are their reshape, transpose, reshape.
  Val rule_pixel_shuffle(const Node& n, DType, const char*) {
    const Val x = in(n, 0);
    const PixelShuffle p = pixel_shuffle_of(n, type(n, 0).shape);
    if (n.op == Op::pixel_shuffle && type(n, 0).rank() == 4 && onnx_accepts("DepthToSpace", x.dtype, 0))
      return node("DepthToSpace", {x.name}, x.dtype, {a_int("blocksize", p.factor), a_string("mode", "CRD")});
    Val split = reshape(x.name, p.split, x.dtype);
    Val moved = node("Transpose", {split.name}, x.dtype, {a_ints("perm", p.perm)});
    return reshape(moved.name, p.result, x.dtype);
  }
  // grid_sample is GridSample (opset 16), its attributes as ONNX spells them.
  Val rule_grid_sample(const Node& n, DType od, const char*) {
    const DType e = exec("GridSample", od, 0), eg = exec("GridSample", od, 1);
    return node("GridSample", {operand(n, 0, e), operand(n, 1, eg)}, e,
                {a_string("mode", attr(n, "mode").as_string()), a_string("padding_mode", attr(n, "padding_mode").as_string()),
                 a_int("align_corners", attr_bool(n, "align_corners") ? 1 : 0)});
  }
  // affine_grid: AffineGrid needs opset 20, so it is what PyTorch computes, the constant base grid
  // [1, H * W, 3] (x, y, 1) MatMul theta transposed, reshaped to [N, H, W, 2].
  Val rule_affine_grid(const Node& n, DType od, const char*) {
    const Shape out = affine_grid_shape(n, type(n, 0).shape);
    const int64_t H = out[1], W = out[2];
    const bool align = attr_bool(n, "align_corners");
    const DType e = exec("MatMul", od);
    std::vector<double> base;
    for (int64_t h = 0; h < H; ++h)
      for (int64_t w = 0; w < W; ++w) base.insert(base.end(), {affine_grid_base(w, W, align), affine_grid_base(h, H, align), 1.0});
    const std::string grid = initializer(Tensor::from_doubles(e, {1, H * W, 3}, base));
    Val theta_t = node("Transpose", {operand(n, 0, e)}, e, {a_ints("perm", {0, 2, 1})});
    Val points = node("MatMul", {grid, theta_t.name}, e);
    return reshape(points.name, out, e);
  }
  Val rule_einsum(const Node& n, DType od, const char*) {  // in the explicit form
    std::vector<Shape> shapes;
    for (size_t k = 0; k < n.operands.size(); ++k) shapes.push_back(type(n, k).shape);
    DType e = exec("Einsum", od);
    std::vector<std::string> ins;
    for (size_t k = 0; k < n.operands.size(); ++k) ins.push_back(operand(n, k, e));
    return node("Einsum", ins, e, {a_string("equation", einsum_spec(attr(n, "equation").as_string(), shapes).equation())});
  }
  // Conv and ConvTranspose: x, w and the bias in the compute type; the window as ONNX's
  // kernel_shape, strides, dilations, pads (begins then ends) and group, with ConvTranspose's
  // output_padding besides.
  Val rule_conv(const Node& n, DType od, const char*) {
    const bool transposed = n.op == Op::conv_transpose2d || n.op == Op::conv_transpose3d;
    const char* op_type = transposed ? "ConvTranspose" : "Conv";
    DType e = exec(op_type, od);
    const Shape& ws = type(n, 1).shape;
    const Window w = window_of(n, &ws[2]);
    std::vector<std::string> ins{operand(n, 0, e), operand(n, 1, e)};
    if (n.operands.size() > 2) ins.push_back(operand(n, 2, e));
    std::vector<int64_t> pads = per_dim(w, w.padding);
    for (int d = 0; d < w.rank; ++d) pads.push_back(w.padding[d]);
    std::vector<AttrFn> attrs{a_ints("kernel_shape", Shape(ws.begin() + 2, ws.end())), a_ints("strides", per_dim(w, w.stride)),
                              a_ints("dilations", per_dim(w, w.dilation)), a_ints("pads", pads)};
    if (transposed) attrs.push_back(a_ints("output_padding", output_padding_of(n, w)));
    attrs.push_back(a_int("group", attr_int(n, "groups")));
    return node(op_type, ins, e, attrs);
  }
  // A convolution's gradients. Of the input: ConvTranspose of grad with the forward's weight and
  // window, output_padding reaching x's size. Of the weight: a Conv of x with its channels as the
  // batch and grad as the weight (the stride and dilation trade places), cut to the kernel and
  // transposed to [out, in / groups, kernel...].
  Val rule_conv_grad(const Node& n, DType od, const char*) {
    const bool of_input = n.op == Op::conv2d_input_grad || n.op == Op::conv3d_input_grad;
    DType e = exec(of_input ? "ConvTranspose" : "Conv", od);
    const Shape &gs = type(n, 0).shape, &xs = type(n, 1).shape, &ws = type(n, 2).shape;
    const Window w = window_of(n, &ws[2]);
    const int r = w.rank;
    const int64_t groups = attr_int(n, "groups");
    std::vector<int64_t> pads = per_dim(w, w.padding);
    for (int d = 0; d < r; ++d) pads.push_back(w.padding[d]);
    if (of_input) {
      std::vector<int64_t> output_padding;
      for (int d = 0; d < r; ++d) {
        const size_t sd = static_cast<size_t>(d) + 2;
        output_padding.push_back(xs[sd] - ((gs[sd] - 1) * w.stride[d] - 2 * w.padding[d] + w.dilation[d] * (w.kernel[d] - 1) + 1));
      }
      return node(
          "ConvTranspose", {operand(n, 0, e), operand(n, 2, e)}, e,
          {a_ints("kernel_shape", Shape(ws.begin() + 2, ws.end())), a_ints("strides", per_dim(w, w.stride)),
           a_ints("dilations", per_dim(w, w.dilation)), a_ints("pads", pads), a_ints("output_padding", output_padding), a_int("group", groups)});
    }
    const int64_t N = xs[0], cg = xs[1] / groups;
    Shape split{N, groups, cg}, merged{cg, groups * N};
    std::vector<int64_t> order{2, 1, 0}, swap{1, 0};
    for (int d = 0; d < r; ++d) {
      split.push_back(xs[static_cast<size_t>(d) + 2]);
      merged.push_back(xs[static_cast<size_t>(d) + 2]);
      order.push_back(d + 3);
      swap.push_back(d + 2);
    }
    Val xc = reshape(node("Transpose", {reshape(operand(n, 1, e), split, e).name}, e, {a_ints("perm", order)}).name, merged, e);
    Val gw = node("Transpose", {operand(n, 0, e)}, e, {a_ints("perm", swap)});
    Val dw = node("Conv", {xc.name, gw.name}, e,
                  {a_ints("kernel_shape", Shape(gs.begin() + 2, gs.end())), a_ints("strides", per_dim(w, w.dilation)),
                   a_ints("dilations", per_dim(w, w.stride)), a_ints("pads", pads), a_int("group", groups)});
    std::vector<int64_t> starts, ends, axes;
    for (int d = 0; d < r; ++d) starts.push_back(0), ends.push_back(w.kernel[d]), axes.push_back(d + 2);
    dw = node("Slice", {dw.name, ints(starts), ints(ends), ints(axes)}, e);
    return node("Transpose", {dw.name}, e, {a_ints("perm", swap)});
  }
  Val rule_max_pool(const Node& n, DType od, const char*) { return max_pool(n, od); }
  Val rule_avg_pool(const Node& n, DType od, const char*) { return avg_pool(n, od); }
  Val rule_adaptive_avg_pool(const Node& n, DType od, const char*) { return adaptive_avg_pool(n, od); }
  Val rule_max_pool_backward(const Node& n, DType od, const char*) { return max_pool_backward(n, od); }
  Val rule_avg_pool_backward(const Node& n, DType od, const char*) { return avg_pool_backward(n, od); }
  Val rule_clamp(const Node& n, DType od, const char*) {
    DType e = exec("Clip", od);
    std::vector<std::string> ins{operand(n, 0, e)};
    auto lo = attr_opt(n, "min"), hi = attr_opt(n, "max");
    ins.push_back(lo ? scalar(*lo, e) : "");
    if (hi) ins.push_back(scalar(*hi, e));
    return node("Clip", ins, e);
  }
  Val rule_reshape(const Node& n, DType, const char*) { return reshape(in(n, 0).name, n.type.shape, in(n, 0).dtype); }
  Val rule_transpose(const Node& n, DType, const char*) {  // permute and transpose
    // A 0-d tensor is its own transpose; ONNX's checker refuses a Transpose with an empty perm.
    if (type(n, 0).rank() == 0) return node("Identity", {in(n, 0).name}, in(n, 0).dtype);
    return node("Transpose", {in(n, 0).name}, in(n, 0).dtype, {a_ints("perm", permutation(n, type(n, 0).rank()))});
  }
  Val rule_expand(const Node& n, DType, const char*) { return node("Expand", {in(n, 0).name, ints(n.type.shape)}, in(n, 0).dtype); }
  Val rule_slice(const Node& n, DType, const char*) {
    SliceBounds b = slice_bounds(n, type(n, 0).shape);
    int64_t end = b.length > 0 ? b.start + (b.length - 1) * b.step + 1 : b.start;
    return node("Slice", {in(n, 0).name, ints({b.start}), ints({end}), ints({b.dim}), ints({b.step})}, in(n, 0).dtype);
  }
  Val rule_cat(const Node& n, DType od, const char*) {
    std::vector<std::string> ins;
    for (size_t k = 0; k < n.operands.size(); ++k) ins.push_back(operand(n, k, od));
    return node("Concat", ins, od, {a_int("axis", normalize_dim(attr_int(n, "dim"), type(n, 0).rank()))});
  }
  Val rule_squeeze(const Node& n, DType, const char*) {
    const TensorType& xt = type(n, 0);
    if (xt.shape == n.type.shape) return node("Identity", {in(n, 0).name}, in(n, 0).dtype);
    return node("Squeeze", {in(n, 0).name, ints({normalize_dim(attr_int(n, "dim"), xt.rank())})}, in(n, 0).dtype);
  }
  Val rule_pad(const Node& n, DType od, const char*) {  // ONNX's pads: every dim's begin, then every dim's end
    const int64_t r = type(n, 0).rank();
    if (r == 0) return node("Identity", {in(n, 0).name}, in(n, 0).dtype);  // no dim to pad; ONNX Runtime refuses a rank-0 Pad
    auto amounts = pad_amounts(n, r);
    std::vector<int64_t> pads(static_cast<size_t>(2 * r));
    for (int64_t d = 0; d < r; ++d) {
      pads[static_cast<size_t>(d)] = amounts[static_cast<size_t>(d)].first;
      pads[static_cast<size_t>(d + r)] = amounts[static_cast<size_t>(d)].second;
    }
    DType e = exec("Pad", od);
    return node("Pad", {operand(n, 0, e), ints(pads), scalar(attr(n, "value"), e)}, e, {});
  }
  Val rule_unsqueeze(const Node& n, DType, const char*) {
    const TensorType& xt = type(n, 0);
    return node("Unsqueeze", {in(n, 0).name, ints({normalize_dim(attr_int(n, "dim"), xt.rank() + 1)})}, in(n, 0).dtype);
  }
  Val rule_embedding(const Node& n, DType, const char*) { return node("Gather", {in(n, 0).name, in(n, 1).name}, in(n, 0).dtype, {a_int("axis", 0)}); }
  Val rule_gather(const Node& n, DType, const char*) {
    // Of a 0-d tensor every index is 0: the value, broadcast to the index's shape (GatherElements needs rank >= 1).
    if (type(n, 0).rank() == 0) return node("Expand", {in(n, 0).name, ints(n.type.shape)}, in(n, 0).dtype);
    // GatherElements wants the indices' shape to be the data's off the axis; gather takes indices
    // that are smaller there and reads only the data's leading part: cut the data to it first.
    const int64_t axis = normalize_dim(attr_int(n, "dim"), type(n, 0).rank());
    const Shape& xs = type(n, 0).shape;
    const Shape& is = type(n, 1).shape;
    std::vector<int64_t> axes, ends;
    for (size_t d = 0; d < xs.size(); ++d)
      if (static_cast<int64_t>(d) != axis && is[d] < xs[d]) axes.push_back(static_cast<int64_t>(d)), ends.push_back(is[d]);
    Val x = in(n, 0);
    if (!axes.empty()) x = node("Slice", {x.name, ints(std::vector<int64_t>(axes.size(), 0)), ints(ends), ints(axes)}, x.dtype);
    return node("GatherElements", {x.name, in(n, 1).name}, x.dtype, {a_int("axis", axis)});
  }
  // ScatterElements with reduction add; its updates have the indices' shape, so src is cut to it.
  Val rule_scatter_add(const Node& n, DType od, const char*) {
    DType e = exec("ScatterElements", od);
    if (type(n, 0).rank() == 0) return node("Add", {operand(n, 0, e), operand(n, 2, e)}, e);  // the only element
    const int64_t axis = normalize_dim(attr_int(n, "dim"), type(n, 0).rank());
    const Shape& is = type(n, 1).shape;
    const Shape& ss = type(n, 2).shape;
    std::vector<int64_t> axes, ends;
    for (size_t d = 0; d < ss.size(); ++d)
      if (is[d] < ss[d]) axes.push_back(static_cast<int64_t>(d)), ends.push_back(is[d]);
    std::string src = operand(n, 2, e);
    if (!axes.empty()) src = node("Slice", {src, ints(std::vector<int64_t>(axes.size(), 0)), ints(ends), ints(axes)}, e).name;
    return node("ScatterElements", {operand(n, 0, e), in(n, 1).name, src}, e, {a_int("axis", axis), a_string("reduction", "add")});
  }
  Val rule_full(const Node& n, DType od, const char*) {
    DType e = od == DType::bf16 ? DType::f32 : od;
    const AttrValue& value = attr(n, "value");
    Tensor one = value.is_float() ? Tensor::from_doubles(e, {1}, {value.as_float()})
                                  : Tensor::from_int64s(e, {1}, {value.is_bool() ? int64_t{value.as_bool()} : value.as_int()});
    return node("ConstantOfShape", {ints(n.type.shape)}, e, {tensor_attr("value", one)});
  }

  // ---- scans and sorts
  // A 0-d operand: the op's value is the operand itself (cumsum, cumprod, sort, topk) or the index 0.
  Val scalar_scan(const Node& n, DType od) {
    if (n.op == Op::argsort || n.op == Op::topk_indices) return node("Identity", {scalar(AttrValue(int64_t{0}), DType::i64)}, DType::i64);
    Val x = cast(in(n, 0), od);
    return x.name == in(n, 0).name ? node("Identity", {x.name}, od) : x;
  }
  Val rule_cumsum(const Node& n, DType od, const char*) {
    const TensorType& xt = type(n, 0);
    if (xt.rank() == 0) return scalar_scan(n, od);
    DType e = exec("CumSum", od);
    Val y = node("CumSum", {operand(n, 0, e), scalar(AttrValue(normalize_dim(attr_int(n, "dim"), xt.rank())), DType::i64)}, e);
    return cast(y, od);
  }
  // ONNX has no cumulative product: the running product of the axis's slices, concatenated.
  Val rule_cumprod(const Node& n, DType od, const char*) {
    const TensorType& xt = type(n, 0);
    if (xt.rank() == 0 || xt.numel() == 0) return scalar_scan(n, od);
    const int64_t dim = normalize_dim(attr_int(n, "dim"), xt.rank()), len = xt.shape[static_cast<size_t>(dim)];
    DType e = exec("Mul", od);
    std::string x = operand(n, 0, e), axis = ints({dim});
    std::vector<std::string> parts;
    std::string acc;
    for (int64_t j = 0; j < len; ++j) {
      std::string s = node("Slice", {x, ints({j}), ints({j + 1}), axis}, e).name;
      acc = j == 0 ? s : node("Mul", {acc, s}, e).name;
      parts.push_back(acc);
    }
    Val y = parts.size() == 1 ? node("Identity", {parts[0]}, e) : node("Concat", parts, e, {a_int("axis", dim)});
    return cast(y, od);
  }
  // sort and argsort: TopK with k the axis's length (ONNX's TopK puts equal values in index order,
  // as a stable sort); topk and topk_indices: TopK. The values are output 0, the indices output 1.
  Val rule_topk(const Node& n, DType od, const char*) {
    const TensorType& xt = type(n, 0);
    if (xt.rank() == 0) return scalar_scan(n, od);
    const int64_t dim = normalize_dim(attr_int(n, "dim"), xt.rank());
    const bool sort = n.op == Op::sort || n.op == Op::argsort, indices = n.op == Op::argsort || n.op == Op::topk_indices;
    const int64_t k = sort ? xt.shape[static_cast<size_t>(dim)] : attr_int(n, "k");
    const bool largest = sort ? attr_bool(n, "descending") : attr_bool(n, "largest");
    // ONNX's TopK takes a positive K: no ONNX form for an empty result along the dim.
    if (k < 1) throw UserError(fmt::format("ONNX's TopK takes K >= 1; this {} has {} along dim {}", op_name(n.op), k, dim));
    DType e = exec("TopK", xt.dtype);
    Val values = node("TopK", {cast(in(n, 0), e).name, ints({k})}, e, {a_int("axis", dim), a_int("largest", largest), a_int("sorted", 1)});
    const std::string out = names_.fresh(fmt::format("{}.TopK.indices", base_));  // TopK has both outputs, read or not
    names_.reserve(out);
    gp_->mutable_node(gp_->node_size() - 1)->add_output(out);
    if (!indices) return cast(values, od);
    return {out, DType::i64};
  }

  Val export_node(int id);  // by the table
};

// How each op is exported: the one-to-one ops of onnx_op_names.h by their kind's rule, every
// other op by its row here (ops.def); EveryOpRoundTrips checks that none is missing.
struct ExportRule {
  Op op;
  const char* onnx;  // the ONNX op type, for the rules shared by several ops
  Val (Exporter::*rule)(const Node&, DType, const char*);
};

constexpr Val (Exporter::*kOneToOneRule[])(const Node&, DType, const char*) = {&Exporter::rule_unary, &Exporter::rule_binary, &Exporter::rule_reduce,
                                                                               &Exporter::rule_softmax};  // by OneToOneKind

const ExportRule kExportRules[] = {
    // ---- unary
    {Op::rsqrt, "", &Exporter::rule_rsqrt},
    {Op::silu, "", &Exporter::rule_silu},
    {Op::gelu, "", &Exporter::rule_gelu},
    // ---- binary and comparisons
    {Op::maximum, "Max", &Exporter::rule_binary},
    {Op::minimum, "Min", &Exporter::rule_binary},
    {Op::ne, "Equal", &Exporter::rule_binary},
    {Op::where, "", &Exporter::rule_where},
    {Op::to, "", &Exporter::rule_to},
    {Op::clone, "", &Exporter::rule_identity},
    {Op::contiguous, "", &Exporter::rule_identity},
    // ---- reductions
    {Op::var, "", &Exporter::rule_var},
    {Op::argmax, "", &Exporter::rule_argmax},
    // ---- normalization
    {Op::layer_norm, "", &Exporter::rule_layer_norm},
    {Op::batch_norm, "", &Exporter::rule_batch_norm},
    {Op::group_norm, "", &Exporter::rule_group_norm},
    {Op::instance_norm, "", &Exporter::rule_instance_norm},
    // ---- linear algebra, convolution and pooling
    {Op::matmul, "", &Exporter::rule_matmul},
    {Op::linear, "", &Exporter::rule_linear},
    {Op::einsum, "", &Exporter::rule_einsum},
    {Op::conv2d, "", &Exporter::rule_conv},
    {Op::max_pool2d, "", &Exporter::rule_max_pool},
    {Op::avg_pool2d, "", &Exporter::rule_avg_pool},
    {Op::adaptive_avg_pool2d, "", &Exporter::rule_adaptive_avg_pool},
    {Op::max_pool2d_backward, "", &Exporter::rule_max_pool_backward},
    {Op::avg_pool2d_backward, "", &Exporter::rule_avg_pool_backward},
    {Op::conv3d, "", &Exporter::rule_conv},
    {Op::conv_transpose2d, "", &Exporter::rule_conv},
    {Op::conv_transpose3d, "", &Exporter::rule_conv},
    {Op::max_pool3d, "", &Exporter::rule_max_pool},
    {Op::avg_pool3d, "", &Exporter::rule_avg_pool},
    {Op::max_pool3d_backward, "", &Exporter::rule_max_pool_backward},
    {Op::avg_pool3d_backward, "", &Exporter::rule_avg_pool_backward},
    {Op::conv2d_input_grad, "", &Exporter::rule_conv_grad},
    {Op::conv2d_weight_grad, "", &Exporter::rule_conv_grad},
    {Op::conv3d_input_grad, "", &Exporter::rule_conv_grad},
    {Op::conv3d_weight_grad, "", &Exporter::rule_conv_grad},
    {Op::clamp, "", &Exporter::rule_clamp},
    // ---- shape
    {Op::reshape, "", &Exporter::rule_reshape},
    {Op::permute, "", &Exporter::rule_transpose},
    {Op::transpose, "", &Exporter::rule_transpose},
    {Op::expand, "", &Exporter::rule_expand},
    {Op::slice, "", &Exporter::rule_slice},
    {Op::cat, "", &Exporter::rule_cat},
    {Op::squeeze, "", &Exporter::rule_squeeze},
    {Op::pad, "", &Exporter::rule_pad},
    {Op::unsqueeze, "", &Exporter::rule_unsqueeze},
    {Op::pixel_shuffle, "", &Exporter::rule_pixel_shuffle},
    {Op::pixel_unshuffle, "", &Exporter::rule_pixel_shuffle},
    // ---- indexing and creation
    {Op::embedding, "", &Exporter::rule_embedding},
    {Op::gather, "", &Exporter::rule_gather},
    {Op::scatter_add, "", &Exporter::rule_scatter_add},
    {Op::full, "", &Exporter::rule_full},
    // ---- sampling
    {Op::grid_sample, "", &Exporter::rule_grid_sample},
    {Op::affine_grid, "", &Exporter::rule_affine_grid},
    // ---- scans and sorts
    {Op::cumsum, "", &Exporter::rule_cumsum},
    {Op::cumprod, "", &Exporter::rule_cumprod},
    {Op::sort, "", &Exporter::rule_topk},
    {Op::argsort, "", &Exporter::rule_topk},
    {Op::topk, "", &Exporter::rule_topk},
    {Op::topk_indices, "", &Exporter::rule_topk},
};

std::optional<ExportRule> export_rule(Op op) {
  if (const onnx_detail::OneToOneOp* o = onnx_detail::one_to_one(op)) return ExportRule{op, o->onnx, kOneToOneRule[static_cast<int>(o->kind)]};
  for (const ExportRule& r : kExportRules)
    if (r.op == op) return r;
  return std::nullopt;
}

Val Exporter::export_node(int id) {
  const Node& n = g_.node(id);
  base_ = n.name;
  const std::optional<ExportRule> r = export_rule(n.op);
  if (!r) throw InternalError(fmt::format("no ONNX export rule for op {}", op_name(n.op)));
  return (this->*(r->rule))(n, n.type.dtype, r->onnx);
}

}  // namespace

std::string export_onnx(const Graph& g, const std::map<std::string, Tensor>& initializers) { return Exporter(g, initializers).run(); }

void write_onnx_repro(const Dir& dir, const Graph& g) { dir.write("repro.onnx", export_onnx(g)); }

}  // namespace reprokit
