// Emits PyTorch code for a graph: one Python line per node, a table of spellings per op.
#include "reprokit/runtime/torch_emitter.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <set>

#include "reprokit/support/errors.h"
#include "reprokit/ir/names.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/op_semantics.h"
#include "reprokit/runtime/templates.h"

namespace reprokit {

namespace {

// Python identifiers of the graph's values: "v_" and the name with '.' as '_', plus a number
// where that would repeat an identifier already given (%a.b and %a_b), so two values never
// share a variable. The prefix keeps them clear of keywords, builtins and the script's globals.
class PyNames {
 public:
  explicit PyNames(const Graph& g) {
    std::set<std::string> used;
    for (auto& n : g.nodes) {
      std::string base = identifier("v_", n.name), id = base;
      for (int k = 1; !used.insert(id).second; ++k) id = fmt::format("{}_{}", base, k);
      ids_.push_back(id);
    }
  }
  const std::string& operator[](int node) const { return ids_[static_cast<size_t>(node)]; }

  static std::string identifier(std::string prefix, const std::string& name) {
    for (char c : name) prefix += c == '.' ? '_' : c;
    return prefix;
  }

 private:
  std::vector<std::string> ids_;
};

const char* torch_dtype(DType t) {
  switch (t) {
    case DType::f16: return "torch.float16";
    case DType::bf16: return "torch.bfloat16";
    case DType::f32: return "torch.float32";
    case DType::f64: return "torch.float64";
    case DType::i32: return "torch.int32";
    case DType::i64: return "torch.int64";
    case DType::boolean: return "torch.bool";
    case DType::i8: return "torch.int8";
    case DType::u8: return "torch.uint8";
    case DType::i16: return "torch.int16";
    case DType::u16: return "torch.uint16";  // PyTorch 2.3 and later
  }
  return "?";
}

std::string py_value(const AttrValue& v) {
  if (v.is_bool()) return v.as_bool() ? "True" : "False";
  if (v.is_float()) {
    double d = v.as_float();
    if (std::isnan(d)) return "float('nan')";
    if (std::isinf(d)) return d > 0 ? "float('inf')" : "float('-inf')";
  }
  if (v.is_dtype()) return torch_dtype(v.as_dtype());
  if (v.is_list()) {
    std::vector<std::string> parts;
    for (auto& e : v.as_list()) parts.push_back(py_value(e));
    return fmt::format("[{}]", fmt::join(parts, ", "));
  }
  return v.str();
}

std::string ints(const std::vector<int64_t>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

std::string keep(const Node& n) { return attr_bool(n, "keepdim") ? "True" : "False"; }

// torch.maximum etc. need tensors: a scalar operand becomes a 0-d tensor of the result's dtype,
// which is the tensor's promoted with the scalar as a Python number promotes it (the other
// operand's own dtype made maximum(bool, -1.0) a bool where the graph says f32).
std::string as_tensor(const std::vector<std::string>& a, const Node& n, size_t k) {
  if (n.operands[k].is_value()) return a[k];
  return fmt::format("torch.tensor({}, dtype=_dt({}))", a[k], torch_dtype(n.type.dtype));  // _dt: float64 in a --f64 run
}

// A binary op: torch.<fn>(a, b), or a Python operator when the left operand is a scalar (so
// torch keeps the tensor's dtype, as the reflected operator does).
std::string binary(const std::vector<std::string>& a, const Node& n, const char* fn, const char* pyop) {
  if (!n.operands[0].is_value()) return fmt::format("({} {} {})", a[0], pyop, a[1]);
  return fmt::format("torch.{}({}, {})", fn, a[0], a[1]);
}

std::string reduction(const std::vector<std::string>& a, const Node& n, const char* fn) {
  if (!attr_opt(n, "dims")) {
    if (!attr_bool(n, "keepdim") && (n.op == Op::sum || n.op == Op::mean)) return fmt::format("torch.{}({})", fn, a[0]);
    std::string all = n.op == Op::sum || n.op == Op::mean ? "None" : "list(range(" + a[0] + ".dim()))";
    return fmt::format("torch.{}({}, dim={}, keepdim={})", fn, a[0], all, keep(n));
  }
  return fmt::format("torch.{}({}, dim={}, keepdim={})", fn, a[0], ints(attr_ints(n, "dims")), keep(n));
}

// One value per spatial dim of window w.
std::string per_dim(const Window& w, const int64_t* v) { return fmt::format("[{}]", fmt::join(v, v + w.rank, ", ")); }
std::string py_bool(bool b) { return b ? "True" : "False"; }

// kernel, stride, padding[, dilation], ceil_mode of a pool, normalised (stride defaults to kernel).
std::string pool_args(const Node& n, bool with_dilation) {
  Window w = window_of(n);
  std::string s = fmt::format("{}, {}, {}", per_dim(w, w.kernel), per_dim(w, w.stride), per_dim(w, w.padding));
  if (with_dilation) s += ", " + per_dim(w, w.dilation);
  return s + ", " + py_bool(w.ceil_mode);
}

// Ops PyTorch refuses on an integer or bool tensor (eager raises "not implemented for 'Long'";
// Inductor computed gelu and silu in the integer type), which reprokit's graph computes in its
// float result type: the operand is cast to that type first. (reprokit refuses integer softmax
// and mean itself.)
bool needs_float_operand(Op op) { return op == Op::gelu || op == Op::silu; }

std::string emit_node(const Graph& g, const PyNames& ids, const Node& n) {
  std::vector<std::string> a;
  for (auto& o : n.operands) a.push_back(o.is_value() ? ids[o.value] : py_value(o.literal));
  if (needs_float_operand(n.op) && n.operands[0].is_value() && !is_floating(g.node(n.operands[0].value).type.dtype) && is_floating(n.type.dtype))
    a[0] = fmt::format("{}.to(_dt({}))", a[0], torch_dtype(n.type.dtype));
  switch (n.op) {
    case Op::neg: return fmt::format("torch.neg({})", a[0]);
    case Op::abs: return fmt::format("torch.abs({})", a[0]);
    case Op::exp: return fmt::format("torch.exp({})", a[0]);
    case Op::log: return fmt::format("torch.log({})", a[0]);
    case Op::sqrt: return fmt::format("torch.sqrt({})", a[0]);
    case Op::rsqrt: return fmt::format("torch.rsqrt({})", a[0]);
    case Op::reciprocal: return fmt::format("torch.reciprocal({})", a[0]);
    case Op::sin: return fmt::format("torch.sin({})", a[0]);
    case Op::cos: return fmt::format("torch.cos({})", a[0]);
    case Op::tanh: return fmt::format("torch.tanh({})", a[0]);
    case Op::sigmoid: return fmt::format("torch.sigmoid({})", a[0]);
    case Op::relu: return fmt::format("torch.relu({})", a[0]);
    case Op::silu: return fmt::format("F.silu({})", a[0]);
    case Op::erf: return fmt::format("torch.erf({})", a[0]);
    case Op::clone: return fmt::format("torch.clone({})", a[0]);
    case Op::gelu: return fmt::format("F.gelu({}, approximate='{}')", a[0], attr(n, "approximate").as_string());
    case Op::add: return binary(a, n, "add", "+");
    case Op::sub: return binary(a, n, "sub", "-");
    case Op::mul: return binary(a, n, "mul", "*");
    case Op::div: return binary(a, n, "div", "/");
    case Op::eq: return binary(a, n, "eq", "==");
    case Op::ne: return binary(a, n, "ne", "!=");
    case Op::lt: return binary(a, n, "lt", "<");
    case Op::le: return binary(a, n, "le", "<=");
    case Op::gt: return binary(a, n, "gt", ">");
    case Op::ge: return binary(a, n, "ge", ">=");
    case Op::pow: return fmt::format("torch.pow({}, {})", as_tensor(a, n, 0), a[1]);
    case Op::maximum: return fmt::format("torch.maximum({}, {})", as_tensor(a, n, 0), as_tensor(a, n, 1));
    case Op::minimum: return fmt::format("torch.minimum({}, {})", as_tensor(a, n, 0), as_tensor(a, n, 1));
    case Op::where: return fmt::format("torch.where({}, {}, {})", a[0], a[1], a[2]);
    case Op::to: return fmt::format("{}.to(_dt({}))", a[0], torch_dtype(attr(n, "dtype").as_dtype()));
    case Op::contiguous: return fmt::format("{}.contiguous()", a[0]);
    case Op::sum: return reduction(a, n, "sum");
    case Op::mean: return reduction(a, n, "mean");
    case Op::amax: return reduction(a, n, "amax");
    case Op::amin: return reduction(a, n, "amin");
    case Op::var: {
      std::string dims = attr_opt(n, "dims") ? ints(attr_ints(n, "dims")) : "None";
      return fmt::format("torch.var({}, dim={}, correction={}, keepdim={})", a[0], dims, attr_int(n, "correction"), keep(n));
    }
    case Op::argmax:
      if (auto d = attr_opt(n, "dim")) return fmt::format("torch.argmax({}, dim={}, keepdim={})", a[0], d->as_int(), keep(n));
      return fmt::format("torch.argmax({}, keepdim={})", a[0], keep(n));
    case Op::softmax: return fmt::format("torch.softmax({}, dim={})", a[0], attr_int(n, "dim"));
    case Op::log_softmax: return fmt::format("torch.log_softmax({}, dim={})", a[0], attr_int(n, "dim"));
    case Op::layer_norm:
      return fmt::format("F.layer_norm({}, {}, {}, {}, eps={})", a[0], ints(attr_ints(n, "normalized_shape")), a.size() > 1 ? a[1] : "None",
                         a.size() > 2 ? a[2] : "None", py_value(AttrValue(attr_float(n, "eps"))));
    case Op::matmul: return fmt::format("torch.matmul({}, {})", a[0], a[1]);
    case Op::linear: return fmt::format("F.linear({}, {}, {})", a[0], a[1], a.size() > 2 ? a[2] : "None");
    case Op::reshape: return fmt::format("torch.reshape({}, {})", a[0], ints(attr_ints(n, "shape")));
    case Op::permute: return fmt::format("{}.permute({})", a[0], ints(attr_ints(n, "dims")));
    case Op::transpose: return fmt::format("torch.transpose({}, {}, {})", a[0], attr_int(n, "dim0"), attr_int(n, "dim1"));
    case Op::expand: return fmt::format("{}.expand({})", a[0], ints(attr_ints(n, "shape")));
    case Op::slice: {
      int64_t dim = normalize_dim(attr_int(n, "dim"), g.node(n.operands[0].value).type.rank());
      std::string lead;
      for (int64_t i = 0; i < dim; ++i) lead += ":, ";
      return fmt::format("{}[{}{}:{}:{}]", a[0], lead, attr_int(n, "start"), attr_int(n, "end"), attr_int(n, "step"));
    }
    case Op::cat: return fmt::format("torch.cat([{}], dim={})", fmt::join(a, ", "), attr_int(n, "dim"));
    case Op::squeeze: return fmt::format("torch.squeeze({}, {})", a[0], attr_int(n, "dim"));
    case Op::unsqueeze: return fmt::format("torch.unsqueeze({}, {})", a[0], attr_int(n, "dim"));
    case Op::embedding: return fmt::format("F.embedding({}, {})", a[1], a[0]);
    case Op::gather: return fmt::format("torch.gather({}, {}, {}.long())", a[0], attr_int(n, "dim"), a[1]);
    case Op::full:
      return fmt::format("torch.full({}, {}, dtype=_dt({}))", ints(attr_ints(n, "shape")), py_value(attr(n, "value")),
                         torch_dtype(attr(n, "dtype").as_dtype()));
    case Op::clamp: {
      auto lo = attr_opt(n, "min"), hi = attr_opt(n, "max");
      if (!lo && !hi) return fmt::format("torch.clone({})", a[0]);  // no bounds: the identity (torch.clamp refuses it)
      return fmt::format("torch.clamp({}, min={}, max={})", a[0], lo ? py_value(*lo) : "None", hi ? py_value(*hi) : "None");
    }
    case Op::batch_norm:
      return fmt::format("F.batch_norm({}, {}, {}, {}, {}, training=False, eps={})", a[0], a[1], a[2], a.size() > 3 ? a[3] : "None",
                         a.size() > 4 ? a[4] : "None", py_value(AttrValue(attr_float(n, "eps"))));
    case Op::group_norm:
      return fmt::format("F.group_norm({}, {}, {}, {}, eps={})", a[0], attr_int(n, "num_groups"), a.size() > 1 ? a[1] : "None",
                         a.size() > 2 ? a[2] : "None", py_value(AttrValue(attr_float(n, "eps"))));
    case Op::instance_norm:
      return fmt::format("F.instance_norm({}, weight={}, bias={}, use_input_stats=True, eps={})", a[0], a.size() > 1 ? a[1] : "None",
                         a.size() > 2 ? a[2] : "None", py_value(AttrValue(attr_float(n, "eps"))));
    case Op::pixel_shuffle: return fmt::format("F.pixel_shuffle({}, {})", a[0], attr_int(n, "upscale_factor"));
    case Op::pixel_unshuffle: return fmt::format("F.pixel_unshuffle({}, {})", a[0], attr_int(n, "downscale_factor"));
    case Op::einsum: return fmt::format("torch.einsum('{}', {})", attr(n, "equation").as_string(), fmt::join(a, ", "));
    case Op::grid_sample:
      return fmt::format("F.grid_sample({}, {}, mode='{}', padding_mode='{}', align_corners={})", a[0], a[1], attr(n, "mode").as_string(),
                         attr(n, "padding_mode").as_string(), py_bool(attr_bool(n, "align_corners")));
    case Op::affine_grid:
      return fmt::format("F.affine_grid({}, {}, align_corners={})", a[0], ints(attr_ints(n, "size")), py_bool(attr_bool(n, "align_corners")));
    case Op::conv2d:
    case Op::conv3d: {
      Window w = window_of(n, &g.node(n.operands[1].value).type.shape[2]);
      return fmt::format("F.conv{}d({}, {}, {}, stride={}, padding={}, dilation={}, groups={})", w.rank, a[0], a[1], a.size() > 2 ? a[2] : "None",
                         per_dim(w, w.stride), per_dim(w, w.padding), per_dim(w, w.dilation), attr_int(n, "groups"));
    }
    case Op::conv_transpose2d:
    case Op::conv_transpose3d: {
      Window w = window_of(n, &g.node(n.operands[1].value).type.shape[2]);
      auto output_padding = output_padding_of(n, w);
      return fmt::format("F.conv_transpose{}d({}, {}, {}, stride={}, padding={}, output_padding={}, groups={}, dilation={})", w.rank, a[0], a[1],
                         a.size() > 2 ? a[2] : "None", per_dim(w, w.stride), per_dim(w, w.padding), per_dim(w, output_padding.data()),
                         attr_int(n, "groups"), per_dim(w, w.dilation));
    }
    case Op::conv2d_input_grad:
    case Op::conv2d_weight_grad:
    case Op::conv3d_input_grad:
    case Op::conv3d_weight_grad: {
      // PyTorch's one backward op, asked for the one gradient: (grad, x, weight, bias sizes,
      // stride, padding, dilation, transposed, output padding, groups, output mask).
      Window w = window_of(n, &g.node(n.operands[2].value).type.shape[2]);
      const bool of_input = n.op == Op::conv2d_input_grad || n.op == Op::conv3d_input_grad;
      return fmt::format("torch.ops.aten.convolution_backward({}, {}, {}, None, {}, {}, {}, False, {}, {}, [{}, {}, False])[{}]", a[0], a[1], a[2],
                         per_dim(w, w.stride), per_dim(w, w.padding), per_dim(w, w.dilation),
                         ints(std::vector<int64_t>(static_cast<size_t>(w.rank), 0)), attr_int(n, "groups"), py_bool(of_input), py_bool(!of_input),
                         of_input ? 0 : 1);
    }
    case Op::scatter_add: return fmt::format("torch.scatter_add({}, {}, {}, {})", a[0], attr_int(n, "dim"), a[1], a[2]);
    case Op::max_pool2d:
    case Op::max_pool3d: return fmt::format("F.max_pool{}d({}, {})", spatial_rank(n.op), a[0], pool_args(n, true));
    case Op::avg_pool2d:
    case Op::avg_pool3d:
      return fmt::format("F.avg_pool{}d({}, {}, count_include_pad={})", spatial_rank(n.op), a[0], pool_args(n, false),
                         py_bool(attr_bool(n, "count_include_pad")));
    case Op::adaptive_avg_pool2d: return fmt::format("F.adaptive_avg_pool2d({}, {})", a[0], ints(attr_ints(n, "output_size")));
    case Op::max_pool2d_backward:
    case Op::max_pool3d_backward:  // PyTorch's backward op wants the forward's indices
      return fmt::format("torch.ops.aten.max_pool{3}d_with_indices_backward({0}, {1}, {2}, F.max_pool{3}d({1}, {2}, return_indices=True)[1])", a[0],
                         a[1], pool_args(n, true), spatial_rank(n.op));
    case Op::avg_pool2d_backward:
    case Op::avg_pool3d_backward:
      return fmt::format("torch.ops.aten.avg_pool{}d_backward({}, {}, {}, {}, None)", spatial_rank(n.op), a[0], a[1], pool_args(n, false),
                         py_bool(attr_bool(n, "count_include_pad")));
    case Op::pad: return fmt::format("F.pad({}, {}, value={})", a[0], ints(attr_ints(n, "pads")), py_value(AttrValue(attr_float(n, "value"))));
    case Op::cumsum: return fmt::format("torch.cumsum({}, {})", a[0], attr_int(n, "dim"));
    case Op::cumprod: return fmt::format("torch.cumprod({}, {})", a[0], attr_int(n, "dim"));
    case Op::sort:
    case Op::argsort:
      return fmt::format("torch.sort({}, dim={}, descending={}, stable=True).{}", a[0], attr_int(n, "dim"), py_bool(attr_bool(n, "descending")),
                         n.op == Op::sort ? "values" : "indices");
    case Op::topk:
    case Op::topk_indices: {
      // Ties: torch.topk's order among equal values is unspecified; reprokit's is the stable sort's,
      // so the indices are spelled as the stable sort's first k (torch.topk's values agree either way).
      const char* part = n.op == Op::topk ? "values" : "indices";
      if (g.node(n.operands[0].value).type.rank() == 0 || n.op == Op::topk)
        return fmt::format("torch.topk({}, {}, dim={}, largest={}, sorted=True).{}", a[0], attr_int(n, "k"), attr_int(n, "dim"),
                           py_bool(attr_bool(n, "largest")), part);
      return fmt::format("torch.sort({}, dim={}, descending={}, stable=True).indices.narrow({}, 0, {})", a[0], attr_int(n, "dim"),
                         py_bool(attr_bool(n, "largest")), attr_int(n, "dim"), attr_int(n, "k"));
    }
    case Op::input: break;
  }
  throw InternalError(fmt::format("torch emitter: no spelling for op '{}'", op_name(n.op)));
}

}  // namespace

std::string emit_torch_function(const Graph& g) {
  PyNames ids(g);
  std::vector<std::string> params;
  for (int i = 0; i < g.num_inputs(); ++i) params.push_back(ids[i]);
  std::string s = fmt::format("def {}({}):\n", torch_function_name(g), fmt::join(params, ", "));
  for (int i = g.num_inputs(); i < g.size(); ++i) {
    const Node& n = g.node(i);
    s += fmt::format("    {} = {}  # {}\n", ids[i], emit_node(g, ids, n), op_name(n.op));
  }
  std::vector<std::string> outs;
  for (int o : g.outputs) outs.push_back(ids[o]);
  s += fmt::format("    return ({},)\n", fmt::join(outs, ", "));
  return s;
}

// The Python expression of the torch.compile call a script makes: None, or a dict whose options are
// parsed from a JSON string literal (never Python source taken from a bundle).
std::string torch_compile_literal(const InductorCall* inductor) {
  if (!inductor) return "None";
  std::string options = "{";
  for (const auto& [key, value] : inductor->options)
    options += fmt::format("{}{}: {}", options.size() > 1 ? ", " : "", c_string_literal(key), c_string_literal(value));
  options += "}";
  return fmt::format("{{'options': {{k: json.loads(v) for k, v in {}.items()}}, 'relu_bug': {}, 'backend': {}, 'device': {}}}", options,
                     inductor->relu_bug.empty() ? "None" : c_string_literal(inductor->relu_bug), c_string_literal(inductor->backend),
                     c_string_literal(inductor->device));
}

std::string emit_torch_program(const Graph& g, const std::string& stem, const InductorCall* inductor, const std::string& inputs_dir) {
  std::string inputs, outputs, output_dtypes;
  for (int i = 0; i < g.num_inputs(); ++i) {
    const TensorType& t = g.node(i).type;
    inputs += fmt::format("{}('{}', {}, {}, {})", i ? ", " : "", g.node(i).name, torch_dtype(t.dtype), ints(t.shape),
                          t.strides.empty() ? "None" : ints(t.strides));
  }
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    outputs += fmt::format("{}'{}'", i ? ", " : "", g.node(g.outputs[i]).name);
    output_dtypes += fmt::format("{}{}", i ? ", " : "", torch_dtype(g.node(g.outputs[i]).type.dtype));
  }
  return render_template("repro_torch.py", {{"GRAPH", g.name},
                                            {"FUNCTION", emit_torch_function(g)},
                                            {"INPUTS", inputs},
                                            {"OUTPUTS", outputs},
                                            {"OUTPUT_DTYPES", output_dtypes},
                                            {"INPUTS_DIR", inputs_dir.empty() ? stem + "_inputs" : inputs_dir},
                                            {"COMPILED_DIR", stem + "_compiled"},
                                            {"TORCH_OUTPUTS_DIR", stem == "repro" ? "torch_outputs" : stem + "_torch_outputs"},
                                            {"ENTRY", torch_function_name(g)},
                                            {"TORCH_COMPILE", torch_compile_literal(inductor)}});
}

// "run_<graph>": never a keyword (class), a module (torch) or a global the script relies on
// (main, __name__).
std::string torch_function_name(const Graph& g) { return PyNames::identifier("run_", g.name); }

// The ops whose ATen name after AOTAutograd is not reprokit's own (which are PyTorch's names).
std::string aten_op_name(const Graph& g, const Node& n) {
  static const std::map<Op, std::string_view> kRenamed = {
      {Op::to, "_to_copy"},
      {Op::contiguous, "clone"},
      {Op::reshape, "view"},
      {Op::conv2d, "convolution"},
      {Op::conv3d, "convolution"},
      {Op::conv_transpose2d, "convolution"},
      {Op::conv_transpose3d, "convolution"},
      {Op::conv2d_input_grad, "convolution_backward"},
      {Op::conv2d_weight_grad, "convolution_backward"},
      {Op::conv3d_input_grad, "convolution_backward"},
      {Op::conv3d_weight_grad, "convolution_backward"},
      {Op::max_pool2d, "max_pool2d_with_indices"},
      {Op::max_pool3d, "max_pool3d_with_indices"},
      {Op::max_pool3d_backward, "max_pool3d_with_indices_backward"},
      {Op::group_norm, "native_group_norm"},
      {Op::argsort, "sort"},
      {Op::topk_indices, "topk"},
      {Op::adaptive_avg_pool2d, "_adaptive_avg_pool2d"},
      {Op::max_pool2d_backward, "max_pool2d_with_indices_backward"},
      {Op::softmax, "_softmax"},
      {Op::log_softmax, "_log_softmax"},
      {Op::layer_norm, "native_layer_norm"},
      {Op::batch_norm, "_native_batch_norm_legit_no_training"},
      {Op::pad, "constant_pad_nd"},
  };
  if (n.op == Op::linear) return n.operands.size() > 2 ? "aten.addmm" : "aten.mm";
  if (n.op == Op::matmul) return g.node(n.operands[0].value).type.rank() > 2 || g.node(n.operands[1].value).type.rank() > 2 ? "aten.bmm" : "aten.mm";
  auto it = kRenamed.find(n.op);
  return "aten." + std::string(it != kRenamed.end() ? it->second : op_name(n.op));
}

}  // namespace reprokit
