// The cpp backend's code generator (see cpp_codegen.h).
#include "cpp_codegen.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "reprokit/ir/errors.h"
#include "reprokit/ir/graph_utils.h"
#include "reprokit/ir/names.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/op_semantics.h"
#include "reprokit/runtime/templates.h"

namespace reprokit {

namespace {

const char* storage_type(DType t) {
  switch (t) {
    case DType::f16: case DType::bf16: return "uint16_t";
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::i32: return "int32_t";
    case DType::i64: return "int64_t";
    case DType::boolean: return "uint8_t";
  }
  return "?";
}

const char* compute_type(DType t) {
  switch (t) {
    case DType::f16: case DType::bf16: case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::i32: case DType::i64: return "int64_t";
    case DType::boolean: return "bool";
  }
  return "?";
}

std::string load_expr(DType t, const std::string& buf, const std::string& idx) {
  std::string e = fmt::format("{}[{}]", buf, idx);
  if (t == DType::f16) return "rk_h2f(" + e + ")";
  if (t == DType::bf16) return "rk_b2f(" + e + ")";
  if (t == DType::boolean) return "(" + e + " != 0)";
  return fmt::format("({})({})", compute_type(t), e);
}

std::string store_value(DType t, const std::string& v) {
  if (t == DType::f16) return "rk_f2h((float)(" + v + "))";
  if (t == DType::bf16) return "rk_f2b((float)(" + v + "))";
  if (t == DType::boolean) return "(uint8_t)((" + v + ") ? 1 : 0)";
  return fmt::format("({})({})", storage_type(t), v);
}

std::string literal(const AttrValue& v, const char* ct) {
  if (v.is_bool()) return v.as_bool() ? "true" : "false";
  if (v.is_int()) return fmt::format("({})({}LL)", ct, v.as_int());
  double d = v.as_float();
  if (std::isnan(d)) return fmt::format("({})NAN", ct);
  if (std::isinf(d)) return fmt::format("({})({}INFINITY)", ct, d < 0 ? "-" : "");
  return fmt::format("({})({})", ct, fmt::format("{:.17g}", d));
}

// Index expression of element `flat` (a C++ expression) of `shape`, read through `strides`
// (broadcast: size-1 and missing leading dims read with stride 0).
std::string strided_index(const Shape& iter, const std::string& flat, const Shape& shape, const Shape& strides) {
  if (shape == iter && strides == contiguous_strides(shape)) return flat;
  Shape is = contiguous_strides(iter);
  size_t lead = iter.size() - shape.size();
  std::string e;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1 || strides[d] == 0) continue;
    size_t id = d + lead;
    std::string idx = iter[id] == numel(iter) ? flat : fmt::format("(({} / {}) % {})", flat, is[id], iter[id]);
    if (is[id] == 1 && id == 0) idx = flat;
    e += (e.empty() ? "" : " + ") + (strides[d] == 1 ? idx : fmt::format("{} * {}", idx, strides[d]));
  }
  return e.empty() ? "0" : e;
}

class CppGen {
 public:
  CppGen(const Graph& g, const NodeInjections& inj, bool cuda) : g_(g), inj_(inj), users_(compute_users(g)), cuda_(cuda), m_(cuda ? "" : "std::") {}

  const std::vector<std::string>& error_messages() const { return errors_; }

  std::string run() {
    plan_groups();
    std::string body;
    for (int i = 0; i < g_.num_inputs(); ++i)
      body += fmt::format("  const {}* b{} = (const {}*)inputs[{}];\n", storage_type(g_.node(i).type.dtype), i, storage_type(g_.node(i).type.dtype), i);
    // Output buffers: the first return of a body node writes straight into the caller's buffer.
    std::set<int> direct;
    for (size_t k = 0; k < g_.outputs.size(); ++k) {
      int o = g_.outputs[k];
      if (!g_.node(o).is_input() && !direct.count(o)) {
        direct.insert(o);
        body += fmt::format("  {}* b{} = ({}*)outputs[{}];\n", storage_type(g_.node(o).type.dtype), o, storage_type(g_.node(o).type.dtype), k);
      }
    }
    for (int i = g_.num_inputs(); i < g_.size(); ++i) {
      if (!materialized(i) || direct.count(i)) continue;
      const char* st = storage_type(g_.node(i).type.dtype);
      int64_t n = std::max<int64_t>(g_.node(i).type.numel(), 1);
      if (cuda_) {  // intermediates live in one device workspace the host allocates
        body += fmt::format("  {}* b{} = ({}*)(ws + {});\n", st, i, st, workspace_bytes_);
        workspace_bytes_ += (n * static_cast<int64_t>(dtype_size(g_.node(i).type.dtype)) + 15) / 16 * 16;
      } else {
        body += fmt::format("  std::vector<{}> v{}({}); {}* b{} = v{}.data();\n", st, i, n, st, i, i);
      }
    }
    for (int i = g_.num_inputs(); i < g_.size(); ++i) {
      if (group_last_.count(i)) body += kernel_for_group(group_last_.at(i));
      else if (!group_of_.count(i)) body += kernel_for_node(i);
    }
    // Outputs that are inputs, or returned twice, are copied.
    std::set<int> written;
    for (size_t k = 0; k < g_.outputs.size(); ++k) {
      int o = g_.outputs[k];
      const TensorType& t = g_.node(o).type;
      if (!g_.node(o).is_input() && !written.count(o)) {
        written.insert(o);
        continue;
      }
      body += loop("i", t.numel(), 1) + fmt::format(" (({}*)outputs[{}])[i] = b{}[{}];\n", storage_type(t.dtype), k, o,
                                                   strided_index(t.shape, "i", t.shape, t.effective_strides()));
    }
    if (cuda_)
      return template_text("cuda_prelude.cuh") +
             "\nextern \"C\" __global__ void rk_graph_kernel(void* const* inputs, void* const* outputs, unsigned char* ws, int* err) {\n" + body + "}\n";
    return template_text("cpp_prelude.h") + "\nextern \"C\" int rk_graph_run(void* const* inputs, void* const* outputs, char* err, int errlen) {\n" +
           body + "  return 0;\n}\n";
  }

 private:
  // ---- planning ----
  void plan_groups() {
    std::map<int64_t, std::vector<int>> groups;
    for (int i = g_.num_inputs(); i < g_.size(); ++i)
      if (auto it = g_.node(i).attrs.find("group"); it != g_.node(i).attrs.end()) groups[it->second.as_int()].push_back(i);
    for (auto& [gid, members] : groups) {
      if (members.size() == 1) continue;  // a group of one is an ordinary node
      for (int m : members) group_of_[m] = gid;
      group_last_[members.back()] = members;
      for (size_t k = 0; k + 1 < members.size(); ++k)
        if (!is_pointwise(g_.node(members[k]).op))
          throw InternalError(fmt::format("fusion group {} has the non-pointwise node %{} before its end", gid, g_.node(members[k]).name));
    }
  }

  bool is_output(int id) const { return std::find(g_.outputs.begin(), g_.outputs.end(), id) != g_.outputs.end(); }

  // A value lives in a buffer unless it is used only inside its own fusion group.
  bool materialized(int id) const {
    if (g_.node(id).is_input() || is_output(id)) return true;
    auto it = group_of_.find(id);
    if (it == group_of_.end()) return true;
    for (int u : users_[static_cast<size_t>(id)]) {
      auto uit = group_of_.find(u);
      if (uit == group_of_.end() || uit->second != it->second) return true;
    }
    return false;
  }

  Shape strides_of(int id) const { return g_.node(id).is_input() ? g_.node(id).type.effective_strides() : contiguous_strides(g_.node(id).type.shape); }

  std::string injection_prologue(int id) {
    auto it = inj_.find(g_.node(id).name);
    if (it == inj_.end()) return "";
    std::string where = fmt::format("node %{} ({})", g_.node(id).name, op_name(g_.node(id).op));
    switch (it->second) {
      case FaultKind::compile_error: return fmt::format("  rk_injected_compile_error_in_{}();\n", sanitize(g_.node(id).name));
      case FaultKind::runtime_error: return "  " + fail("injected runtime error in " + where) + "\n";
      case FaultKind::flaky: return "  if (rk_flaky()) " + fail("injected flaky failure in " + where) + "\n";
      case FaultKind::crash: return "  rk_crash();\n";
      case FaultKind::hang: return "  rk_spin_forever();\n";
      case FaultKind::accuracy: return "";  // applied to the value
    }
    return "";
  }

  bool perturbs(int id) const {
    auto it = inj_.find(g_.node(id).name);
    return it != inj_.end() && it->second == FaultKind::accuracy;
  }

  // A C++ identifier fragment from a value name (names are validated; this keeps generated code
  // safe whatever a name holds).
  static std::string sanitize(const std::string& s) {
    std::string o;
    for (char c : s) o += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    return o;
  }

  // ---- expressions ----
  // The value of operand `o` of node `user` at iteration element `flat` over shape `iter`, in
  // compute type `ct`. Nodes of the current group are named temporaries.
  std::string operand_expr(const Operand& o, const char* ct, const Shape& iter, const std::string& flat) {
    if (!o.is_value()) return literal(o.literal, ct);
    int v = o.value;
    if (in_kernel_.count(v)) return fmt::format("({})t{}", ct, v);
    const TensorType& t = g_.node(v).type;
    return fmt::format("({}){}", ct, load_expr(t.dtype, "b" + std::to_string(v), strided_index(iter, flat, t.shape, strides_of(v))));
  }

  DType operand_dtype(const Operand& o) const { return o.is_value() ? g_.node(o.value).type.dtype : DType::f64; }

  // C++ expression of pointwise node id in its compute type.
  std::string pointwise_expr(int id, const Shape& iter, const std::string& flat) {
    const Node& n = g_.node(id);
    const char* ct = compute_type(n.type.dtype);
    std::vector<DType> dtypes;
    for (auto& o : n.operands) dtypes.push_back(operand_dtype(o));
    const char* opct = compute_type(compute_dtype(n, dtypes));  // comparisons: the operands' promoted type
    std::vector<std::string> a;
    for (auto& o : n.operands) a.push_back(operand_expr(o, n.op == Op::where && a.empty() ? "bool" : opct, iter, flat));
    switch (n.op) {
      case Op::neg: return "(-" + a[0] + ")";
      case Op::abs: return "rk_abs(" + a[0] + ")";
      case Op::exp: return fmt::format("{}exp({})", m_, a[0]);
      case Op::log: return fmt::format("{}log({})", m_, a[0]);
      case Op::sqrt: return fmt::format("{}sqrt({})", m_, a[0]);
      case Op::sin: return fmt::format("{}sin({})", m_, a[0]);
      case Op::cos: return fmt::format("{}cos({})", m_, a[0]);
      case Op::tanh: return fmt::format("{}tanh({})", m_, a[0]);
      case Op::erf: return fmt::format("{}erf({})", m_, a[0]);
      case Op::rsqrt: return fmt::format("(({})1 / {}sqrt({}))", ct, m_, a[0]);
      case Op::reciprocal: return fmt::format("(({})1 / {})", ct, a[0]);
      case Op::relu: return "rk_relu(" + a[0] + ")";
      case Op::add: return "(" + a[0] + " + " + a[1] + ")";
      case Op::sub: return "(" + a[0] + " - " + a[1] + ")";
      case Op::mul: return "(" + a[0] + " * " + a[1] + ")";
      case Op::div: return "(" + a[0] + " / " + a[1] + ")";
      case Op::pow: return is_floating(n.type.dtype) ? fmt::format("({}){}pow({}, {})", ct, m_, a[0], a[1]) : fmt::format("rk_ipow({}, {})", a[0], a[1]);
      case Op::maximum: return "rk_max(" + a[0] + ", " + a[1] + ")";
      case Op::minimum: return "rk_min(" + a[0] + ", " + a[1] + ")";
      case Op::eq: return "(" + a[0] + " == " + a[1] + ")";
      case Op::ne: return "(" + a[0] + " != " + a[1] + ")";
      case Op::lt: return "(" + a[0] + " < " + a[1] + ")";
      case Op::le: return "(" + a[0] + " <= " + a[1] + ")";
      case Op::gt: return "(" + a[0] + " > " + a[1] + ")";
      case Op::ge: return "(" + a[0] + " >= " + a[1] + ")";
      case Op::where: return "(" + a[0] + " ? " + a[1] + " : " + a[2] + ")";
      case Op::to: return convert_expr(a[0], operand_dtype(n.operands[0]), n.type.dtype);
      case Op::clone: return a[0];
      case Op::clamp: {
        std::string v = a[0];
        if (auto lo = attr_opt(n, "min")) v = fmt::format("rk_clamp_min({}, {})", v, literal(*lo, ct));
        if (auto hi = attr_opt(n, "max")) v = fmt::format("rk_clamp_max({}, {})", v, literal(*hi, ct));
        return v;
      }
      // Composite ops are decomposed before codegen; the rest are not pointwise.
      case Op::input: case Op::sigmoid: case Op::silu: case Op::gelu: case Op::sum: case Op::amax: case Op::amin:
      case Op::mean: case Op::var: case Op::argmax: case Op::softmax: case Op::log_softmax: case Op::layer_norm:
      case Op::matmul: case Op::linear: case Op::reshape: case Op::permute: case Op::transpose: case Op::expand:
      case Op::slice: case Op::cat: case Op::squeeze: case Op::unsqueeze: case Op::contiguous: case Op::embedding:
      case Op::gather: case Op::full: case Op::batch_norm: case Op::conv2d: case Op::max_pool2d: case Op::avg_pool2d:
      case Op::adaptive_avg_pool2d: case Op::max_pool2d_backward: case Op::avg_pool2d_backward: case Op::pad:
        break;
    }
    throw InternalError(fmt::format("cpp codegen: op '{}' has no pointwise spelling", op_name(n.op)));
  }

  // x (in the compute type of `from`) converted to the compute type of `to`, as PyTorch's casts:
  // a float becomes an integer by truncation, with the x86 result for NaN and out-of-range values.
  static std::string convert_expr(const std::string& x, DType from, DType to) {
    if (to == DType::boolean) return "(" + x + " != 0)";
    if (is_floating(from) && to == DType::i32) return "(int64_t)rk_f2i32(" + x + ")";
    if (is_floating(from) && to == DType::i64) return "rk_f2i64(" + x + ")";
    return fmt::format("({})({})", compute_type(to), x);
  }

  // Statements computing the group members `ids` (in order) at element `flat` of `iter`; stores
  // the materialized ones at index `flat`.
  std::string pointwise_body(const std::vector<int>& ids, const Shape& iter, const std::string& flat, const std::string& indent) {
    std::string s;
    for (int id : ids) {
      const Node& n = g_.node(id);
      std::string e = pointwise_expr(id, iter, flat);
      if (perturbs(id)) e = "rk_perturb(" + e + ")";
      s += fmt::format("{}const {} t{} = {};\n", indent, compute_type(n.type.dtype), id, e);
      in_kernel_.insert(id);
      if (materialized(id)) s += fmt::format("{}b{}[{}] = {};\n", indent, id, flat, store_value(n.type.dtype, "t" + std::to_string(id)));
    }
    return s;
  }

  // A loop over [0, n): OpenMP-parallel on the CPU when it pays; threads of the block on CUDA.
  std::string loop(const char* var, int64_t n, int64_t work_per_item) const {
    if (cuda_) return fmt::format("  for (int64_t {0} = threadIdx.x; {0} < {1}; {0} += blockDim.x)", var, n);
    // Only loops worth about a millisecond go parallel: a fork/join on a busy core can cost a
    // whole scheduler time slice, which ruins small kernels (measured: 30x on attention).
    return std::string(n * work_per_item >= (int64_t{1} << 21) ? "  #pragma omp parallel for schedule(static)\n" : "") +
           fmt::format("  for (int64_t {0} = 0; {0} < {1}; ++{0})", var, n);
  }
  // A scratch array of `count` elements of type `ct`: a vector on the CPU, workspace on CUDA.
  std::string scratch(const std::string& name, const char* ct, int64_t count) {
    if (!cuda_) return fmt::format("  std::vector<{0}> {1}_v({2}); {0}* {1} = {1}_v.data();\n", ct, name, std::max<int64_t>(count, 1));
    std::string s = fmt::format("  {0}* {1} = ({0}*)(ws + {2});\n", ct, name, workspace_bytes_);
    workspace_bytes_ += (std::max<int64_t>(count, 1) * 8 + 15) / 16 * 16;
    return s;
  }

  // Kernels run one after another: on CUDA the block synchronises between them.
  std::string end_kernel() const { return cuda_ ? "  __syncthreads();\n" : ""; }
  // Reports an error: the CPU returns it; CUDA records a code (the host maps it to the message).
  std::string fail(const std::string& msg) {
    if (!cuda_) return fmt::format("{{ rk_error(err, errlen, {}); return 1; }}", c_string_literal(msg));
    errors_.push_back(msg);
    return fmt::format("{{ rk_flag(err, {}); }}", errors_.size());
  }

  std::string kernel_header(const std::vector<int>& ids) {
    std::string names;
    for (int id : ids) names += (names.empty() ? "" : ", ") + sanitize(g_.node(id).name);
    std::string s = fmt::format("  // kernel: {}\n", names);
    for (int id : ids) s += injection_prologue(id);
    return s;
  }

  std::string kernel_for_group(const std::vector<int>& ids) {
    in_kernel_.clear();
    std::string s = kernel_header(ids);
    int last = ids.back();
    const Node& ln = g_.node(last);
    if (is_pointwise(ln.op)) {
      const Shape& iter = ln.type.shape;
      s += loop("i", ln.type.numel(), static_cast<int64_t>(ids.size())) + " {\n";
      s += pointwise_body(ids, iter, "i", "    ");
      return s + "  }\n" + end_kernel();
    }
    std::vector<int> prologue(ids.begin(), ids.end() - 1);
    return s + reduction_kernel(last, prologue) + end_kernel();
  }

  std::string kernel_for_node(int id) {
    in_kernel_.clear();
    const Node& n = g_.node(id);
    std::string s = kernel_header({id});
    switch (n.op) {
      case Op::neg: case Op::abs: case Op::exp: case Op::log: case Op::sqrt: case Op::rsqrt: case Op::reciprocal:
      case Op::sin: case Op::cos: case Op::tanh: case Op::relu: case Op::erf: case Op::add: case Op::sub: case Op::mul:
      case Op::div: case Op::pow: case Op::maximum: case Op::minimum: case Op::eq: case Op::ne: case Op::lt: case Op::le:
      case Op::gt: case Op::ge: case Op::where: case Op::to: case Op::clone: case Op::clamp:
        s += loop("i", n.type.numel(), 1) + " {\n";
        return s + pointwise_body({id}, n.type.shape, "i", "    ") + "  }\n" + end_kernel();
      case Op::sum: case Op::amax: case Op::amin: case Op::argmax: return s + reduction_kernel(id, {}) + end_kernel();
      case Op::matmul: return s + matmul_kernel(id) + end_kernel();
      case Op::cat: return s + cat_kernel(id) + end_kernel();
      case Op::embedding: case Op::gather: return s + index_kernel(id) + end_kernel();
      case Op::conv2d: return s + conv2d_kernel(id) + end_kernel();
      case Op::max_pool2d: case Op::avg_pool2d: return s + pool_kernel(id) + end_kernel();
      case Op::max_pool2d_backward: case Op::avg_pool2d_backward: return s + pool_backward_kernel(id) + end_kernel();
      case Op::adaptive_avg_pool2d: return s + adaptive_pool_kernel(id) + end_kernel();
      case Op::pad: return s + pad_kernel(id) + end_kernel();
      case Op::full: {
        std::string v = literal(attr(n, "value"), compute_type(n.type.dtype));
        return s + loop("i", n.type.numel(), 1) +
               fmt::format(" b{}[i] = {};\n", id, store_value(n.type.dtype, perturbs(id) ? "rk_perturb(" + v + ")" : v)) + end_kernel();
      }
      case Op::reshape: case Op::permute: case Op::transpose: case Op::expand: case Op::slice: case Op::squeeze:
      case Op::unsqueeze: case Op::contiguous:
        return s + view_kernel(id) + end_kernel();
      // Composite ops are decomposed before codegen.
      case Op::input: case Op::sigmoid: case Op::silu: case Op::gelu: case Op::mean: case Op::var: case Op::softmax:
      case Op::log_softmax: case Op::layer_norm: case Op::linear: case Op::batch_norm:
        break;
    }
    throw InternalError(fmt::format("cpp codegen: no kernel for op '{}' (node %{})", op_name(n.op), n.name));
  }

  // Element offset into the operand of a view node, for output element `i`.
  std::string view_source_index(int id) {
    const Node& n = g_.node(id);
    int src = n.operands[0].value;
    const TensorType& st = g_.node(src).type;
    Shape ss = strides_of(src);
    const Shape& out = n.type.shape;
    Shape view;  // strides over the source's storage, per output dim
    int64_t offset = 0;
    int64_t rank = st.rank();
    if (n.op == Op::permute || n.op == Op::transpose) {
      for (auto d : permutation(n, rank)) view.push_back(ss[static_cast<size_t>(d)]);
    } else if (n.op == Op::expand) {
      size_t lead = out.size() - st.shape.size();
      view.assign(out.size(), 0);
      for (size_t d = 0; d < st.shape.size(); ++d) view[lead + d] = st.shape[d] == 1 ? 0 : ss[d];
    } else if (n.op == Op::slice) {
      SliceBounds b = slice_bounds(n, st.shape);
      view = ss;
      offset = b.start * ss[static_cast<size_t>(b.dim)];
      view[static_cast<size_t>(b.dim)] *= b.step;
    } else {  // reshape, squeeze, unsqueeze, contiguous: same logical order as the source
      return strided_index(st.shape, "i", st.shape, ss);
    }
    std::string e = strided_index(out, "i", out, view);
    return offset ? fmt::format("{} + {}", offset, e) : e;
  }

  std::string view_kernel(int id) {
    const Node& n = g_.node(id);
    int src = n.operands[0].value;
    std::string v = load_expr(g_.node(src).type.dtype, "b" + std::to_string(src), view_source_index(id));
    if (perturbs(id)) v = "rk_perturb(" + v + ")";
    return loop("i", n.type.numel(), 1) + fmt::format(" b{}[i] = {};\n", id, store_value(n.type.dtype, v));
  }

  std::string reduction_kernel(int id, const std::vector<int>& prologue) {
    const Node& n = g_.node(id);
    int src = n.operands[0].value;
    const Shape& in = g_.node(src).type.shape;
    int64_t rank = static_cast<int64_t>(in.size());
    std::vector<bool> reduced(in.size(), false);
    for (auto d : reduction_dims(n, rank)) reduced[static_cast<size_t>(d)] = true;
    Shape kept, red;
    for (size_t d = 0; d < in.size(); ++d) (reduced[d] ? red : kept).push_back(in[d]);
    Shape instr = contiguous_strides(in), ks = contiguous_strides(kept), rs = contiguous_strides(red);
    std::string idx;
    for (size_t d = 0, k = 0, r = 0; d < in.size(); ++d) {
      if (in[d] == 1) { reduced[d] ? ++r : ++k; continue; }
      std::string part = reduced[d] ? fmt::format("((r / {}) % {})", rs[r], red[r]) : fmt::format("((o / {}) % {})", ks[k], kept[k]);
      reduced[d] ? ++r : ++k;
      idx += (idx.empty() ? "" : " + ") + fmt::format("{} * {}", part, instr[d]);
    }
    if (idx.empty()) idx = "0";
    DType it = g_.node(src).type.dtype;
    const char* act = n.op == Op::sum ? compute_type(n.type.dtype) : compute_type(it);
    int64_t outer = numel(kept), inner = numel(red);
    std::string s = loop("o", outer, inner) + " {\n";
    std::string init = n.op == Op::amax ? fmt::format("rk_lowest<{}>()", act) : n.op == Op::amin ? fmt::format("rk_highest<{}>()", act) : fmt::format("({})0", act);
    if (n.op == Op::argmax) s += fmt::format("    {} acc = ({})0; int64_t best = -1;\n", act, act);
    else s += fmt::format("    {} acc = {};\n", act, init);
    s += fmt::format("    for (int64_t r = 0; r < {}; ++r) {{\n      const int64_t ii = {};\n", inner, idx);
    s += pointwise_body(prologue, in, "ii", "      ");
    std::string v = in_kernel_.count(src) ? fmt::format("({})t{}", act, src) : operand_expr(n.operands[0], act, in, "ii");
    if (n.op == Op::sum) s += "      acc += " + v + ";\n";
    else if (n.op == Op::amax) s += "      acc = rk_max(acc, " + v + ");\n";
    else if (n.op == Op::amin) s += "      acc = rk_min(acc, " + v + ");\n";
    else s += fmt::format("      {{ {} v = {}; if (best < 0 || (acc == acc && (v != v || v > acc))) {{ acc = v; best = r; }} }}\n", act, v);
    s += "    }\n";
    std::string result = n.op == Op::argmax ? "best" : "acc";
    if (perturbs(id)) result = "rk_perturb(" + result + ")";
    s += fmt::format("    b{}[o] = {};\n  }}\n", id, store_value(n.type.dtype, result));
    return s;
  }

  // Index of element (b, c, y, x) of 4-D value v through its strides.
  std::string at4(int v, const std::string& b, const std::string& c, const std::string& y, const std::string& x) const {
    Shape st = strides_of(v);
    return fmt::format("({}) * {} + ({}) * {} + ({}) * {} + ({}) * {}", b, st[0], c, st[1], y, st[2], x, st[3]);
  }
  std::string load4(int v, const char* ct, const std::string& b, const std::string& c, const std::string& y, const std::string& x) const {
    return fmt::format("({}){}", ct, load_expr(g_.node(v).type.dtype, "b" + std::to_string(v), at4(v, b, c, y, x)));
  }

  // Direct convolution: one (batch, output channel) plane per iteration of the outer loop.
  std::string conv2d_kernel(int id) {
    const Node& n = g_.node(id);
    int x = n.operands[0].value, w = n.operands[1].value;
    const Shape &xs = g_.node(x).type.shape, &ws = g_.node(w).type.shape, &os = n.type.shape;
    Window2d win = window_of(n, &ws[2]);
    int64_t groups = attr_int(n, "groups"), cg = ws[1], og = os[1] / groups;
    const char* ct = compute_type(n.type.dtype);
    std::string bias = n.operands.size() > 2 ? fmt::format("({}){}", ct, load_expr(g_.node(n.operands[2].value).type.dtype,
                                                                                  "b" + std::to_string(n.operands[2].value), "oc"))
                                             : fmt::format("({})0", ct);
    std::string v = perturbs(id) ? "rk_perturb(acc)" : "acc";
    std::string s = loop("nc", os[0] * os[1], os[2] * os[3] * cg * ws[2] * ws[3]) + " {\n";
    s += fmt::format("    const int64_t nb = nc / {0}, oc = nc % {0}, c0 = (oc / {1}) * {2};\n", os[1], og, cg);
    s += fmt::format("    for (int64_t oy = 0; oy < {}; ++oy) for (int64_t ox = 0; ox < {}; ++ox) {{\n", os[2], os[3]);
    s += fmt::format("      {} acc = {};\n", ct, bias);
    s += fmt::format("      for (int64_t ic = 0; ic < {}; ++ic) for (int64_t i = 0; i < {}; ++i) {{\n", cg, ws[2]);
    s += fmt::format("        const int64_t y = oy * {} - {} + i * {}; if (y < 0 || y >= {}) continue;\n", win.stride[0], win.padding[0],
                     win.dilation[0], xs[2]);
    s += fmt::format("        for (int64_t j = 0; j < {}; ++j) {{\n", ws[3]);
    s += fmt::format("          const int64_t xx = ox * {} - {} + j * {}; if (xx < 0 || xx >= {}) continue;\n", win.stride[1],
                     win.padding[1], win.dilation[1], xs[3]);
    s += fmt::format("          acc += {} * {};\n", load4(x, ct, "nb", "c0 + ic", "y", "xx"), load4(w, ct, "oc", "ic", "i", "j"));
    s += "        }\n      }\n";
    s += fmt::format("      b{}[((nb * {} + oc) * {} + oy) * {} + ox] = {};\n", id, os[1], os[2], os[3], store_value(n.type.dtype, v));
    s += "    }\n  }\n";
    return s;
  }

  // The loops over one window of a pool, at output (oy, ox) of plane (nb, ch): `body` runs for
  // each element inside the input, with y and xx set; divisors as PyTorch's avg_pool2d.
  std::string window_loops(const Window2d& win, const Shape& in, const std::string& body, bool declare = true) const {
    std::string s;
    if (declare) s += fmt::format("      const int64_t y0 = oy * {} - {}, x0 = ox * {} - {};\n", win.stride[0], win.padding[0], win.stride[1], win.padding[1]);
    if (declare) {
      s += fmt::format("      const int64_t padded = (rk_min<int64_t>(y0 + {}, {}) - y0) * (rk_min<int64_t>(x0 + {}, {}) - x0);\n", win.kernel[0],
                       in[2] + win.padding[0], win.kernel[1], in[3] + win.padding[1]);
      s += "      int64_t valid = 0;\n";
    }
    s += fmt::format("      for (int64_t i = 0; i < {}; ++i) {{\n        const int64_t y = y0 + i * {}; if (y < 0 || y >= {}) continue;\n", win.kernel[0],
                     win.dilation[0], in[2]);
    s += fmt::format("        for (int64_t j = 0; j < {}; ++j) {{\n          const int64_t xx = x0 + j * {}; if (xx < 0 || xx >= {}) continue;\n",
                     win.kernel[1], win.dilation[1], in[3]);
    s += (declare ? "          ++valid;\n" : "") + body + "        }\n      }\n";
    if (declare) s += "      (void)padded;\n";
    return s;
  }

  std::string pool_kernel(int id) {
    const Node& n = g_.node(id);
    int x = n.operands[0].value;
    const Shape &in = g_.node(x).type.shape, &os = n.type.shape;
    Window2d win = window_of(n);
    const char* ct = compute_type(n.type.dtype);
    bool is_max = n.op == Op::max_pool2d;
    std::string s = loop("nc", os[0] * os[1], os[2] * os[3] * win.kernel[0] * win.kernel[1]) + " {\n";
    s += fmt::format("    const int64_t nb = nc / {0}, ch = nc % {0};\n", os[1]);
    s += fmt::format("    for (int64_t oy = 0; oy < {}; ++oy) for (int64_t ox = 0; ox < {}; ++ox) {{\n", os[2], os[3]);
    s += fmt::format("      {} acc = ({})0;{}\n", ct, ct, is_max ? " bool any = false;" : "");
    std::string v = load4(x, ct, "nb", "ch", "y", "xx");
    // max: the first maximum, NaN winning (PyTorch); avg: the sum, then the divisor.
    std::string body = is_max ? fmt::format("          {{ {} v = {}; if (!any || (acc == acc && (v != v || v > acc))) acc = v; any = true; }}\n", ct, v)
                              : fmt::format("          acc += {};\n", v);
    s += window_loops(win, in, body);
    if (!is_max) s += fmt::format("      acc = acc / ({})({});\n", ct, attr_bool(n, "count_include_pad") ? "padded" : "valid");
    std::string r = perturbs(id) ? "rk_perturb(acc)" : "acc";
    s += fmt::format("      b{}[((nb * {} + ch) * {} + oy) * {} + ox] = {};\n    }}\n  }}\n", id, os[1], os[2], os[3], store_value(n.type.dtype, r));
    return s;
  }

  // The pools' backward: per (batch, channel) plane, so overlapping windows never race.
  std::string pool_backward_kernel(int id) {
    const Node& n = g_.node(id);
    int gr = n.operands[0].value, x = n.operands[1].value;
    const Shape &in = g_.node(x).type.shape, &gs = g_.node(gr).type.shape;
    Window2d win = window_of(n);
    const char* ct = compute_type(n.type.dtype);
    bool is_max = n.op == Op::max_pool2d_backward;
    std::string s = scratch(fmt::format("acc_{}", id), ct, n.type.numel());
    s += loop("nc", in[0] * in[1], gs[2] * gs[3] * win.kernel[0] * win.kernel[1]) + " {\n";
    s += fmt::format("    const int64_t nb = nc / {0}, ch = nc % {0};\n", in[1]);
    s += fmt::format("    {}* plane = acc_{} + nc * {};\n", ct, id, in[2] * in[3]);
    s += fmt::format("    for (int64_t k = 0; k < {}; ++k) plane[k] = ({})0;\n", in[2] * in[3], ct);
    s += fmt::format("    for (int64_t oy = 0; oy < {}; ++oy) for (int64_t ox = 0; ox < {}; ++ox) {{\n", gs[2], gs[3]);
    std::string gv = load4(gr, ct, "nb", "ch", "oy", "ox");
    if (is_max) {
      s += fmt::format("      {} best = ({})0; int64_t at = -1; bool any = false;\n", ct, ct);
      std::string v = load4(x, ct, "nb", "ch", "y", "xx");
      s += window_loops(win, in, fmt::format("          {{ {} v = {}; if (!any || (best == best && (v != v || v > best))) {{ best = v; at = y * {} + xx; }} any = true; }}\n",
                                             ct, v, in[3]));
      s += fmt::format("      if (at >= 0) plane[at] += {};\n", gv);
    } else {
      s += window_loops(win, in, "");  // counts the divisor
      s += fmt::format("      const {} share = {} / ({})({});\n", ct, gv, ct, attr_bool(n, "count_include_pad") ? "padded" : "valid");
      s += window_loops(win, in, fmt::format("          plane[y * {} + xx] += share;\n", in[3]), false);
    }
    s += "    }\n";
    std::string r = perturbs(id) ? "rk_perturb(plane[k])" : "plane[k]";
    s += fmt::format("    for (int64_t k = 0; k < {}; ++k) b{}[nc * {} + k] = {};\n  }}\n", in[2] * in[3], id, in[2] * in[3], store_value(n.type.dtype, r));
    return s;
  }

  std::string adaptive_pool_kernel(int id) {
    const Node& n = g_.node(id);
    int x = n.operands[0].value;
    const Shape &in = g_.node(x).type.shape, &os = n.type.shape;
    const char* ct = compute_type(n.type.dtype);
    std::string s = loop("o", numel(os), in[2] * in[3] / (os[2] * os[3]) + 1) + " {\n";
    s += fmt::format("    const int64_t ox = o % {0}, oy = (o / {0}) % {1}, ch = (o / {2}) % {3}, nb = o / {4};\n", os[3], os[2], os[2] * os[3], os[1],
                     os[1] * os[2] * os[3]);
    s += fmt::format("    const int64_t y0 = (oy * {0}) / {1}, y1 = ((oy + 1) * {0} + {1} - 1) / {1};\n", in[2], os[2]);
    s += fmt::format("    const int64_t x0 = (ox * {0}) / {1}, x1 = ((ox + 1) * {0} + {1} - 1) / {1};\n", in[3], os[3]);
    s += fmt::format("    {} acc = ({})0;\n    for (int64_t y = y0; y < y1; ++y) for (int64_t xx = x0; xx < x1; ++xx) acc += {};\n", ct, ct,
                     load4(x, ct, "nb", "ch", "y", "xx"));
    std::string r = fmt::format("acc / ({})((y1 - y0) * (x1 - x0))", ct);
    if (perturbs(id)) r = "rk_perturb(" + r + ")";
    s += fmt::format("    b{}[o] = {};\n  }}\n", id, store_value(n.type.dtype, r));
    return s;
  }

  std::string pad_kernel(int id) {
    const Node& n = g_.node(id);
    int x = n.operands[0].value;
    const TensorType& xt = g_.node(x).type;
    auto amounts = pad_amounts(n, xt.rank());
    const Shape& os = n.type.shape;
    Shape ostr = contiguous_strides(os), xstr = strides_of(x);
    const char* ct = compute_type(n.type.dtype);
    std::string inside = "true", src = "0";
    for (size_t d = 0; d < os.size(); ++d) {
      std::string c = fmt::format("((i / {}) % {} - {})", ostr[d], os[d], amounts[d].first);
      inside += fmt::format(" && {0} >= 0 && {0} < {1}", c, xt.shape[d]);
      src += fmt::format(" + {} * {}", c, xstr[d]);
    }
    std::string v = fmt::format("(({}) ? ({}){} : {})", inside, ct, load_expr(xt.dtype, "b" + std::to_string(x), "rk_max<int64_t>(" + src + ", 0)"),
                                literal(AttrValue(attr_float(n, "value")), ct));
    if (perturbs(id)) v = "rk_perturb(" + v + ")";
    return loop("i", n.type.numel(), 1) + fmt::format(" b{}[i] = {};\n", id, store_value(n.type.dtype, v));
  }

  std::string matmul_kernel(int id) {
    const Node& n = g_.node(id);
    int a = n.operands[0].value, b = n.operands[1].value;
    const Shape &as = g_.node(a).type.shape, &bs = g_.node(b).type.shape, &os = n.type.shape;
    Shape ast = strides_of(a), bst = strides_of(b);
    int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
    Shape batch(os.begin(), os.end() - 2);
    int64_t nb = numel(batch);
    // Batch offsets of each operand as index expressions over the batch index `bi`.
    auto batch_off = [&](const Shape& shape, const Shape& st) {
      Shape bshape(shape.begin(), shape.end() - 2), bstr(st.begin(), st.end() - 2);
      return strided_index(batch, "bi", bshape, bstr);
    };
    const char* ct = compute_type(n.type.dtype);
    DType dt = n.type.dtype;
    std::string s = fmt::format("  {{\n  const int64_t M = {}, K = {}, N = {};\n", M, K, N);
    s += loop("bm", nb * M, N * K) + " {\n    const int64_t bi = bm / M, m = bm % M;\n";
    s += fmt::format("    {} row[{}] = {{}};\n", ct, N);
    s += fmt::format("    const int64_t ao = {} + m * {}, bo = {};\n", batch_off(as, ast), ast[ast.size() - 2], batch_off(bs, bst));
    s += "    for (int64_t k = 0; k < K; ++k) {\n";
    s += fmt::format("      const {} av = {};\n", ct, load_expr(g_.node(a).type.dtype, "b" + std::to_string(a), fmt::format("ao + k * {}", ast.back())));
    s += fmt::format("      for (int64_t j = 0; j < N; ++j) row[j] += av * {};\n", load_expr(g_.node(b).type.dtype, "b" + std::to_string(b),
                                                                                       fmt::format("bo + k * {} + j * {}", bst[bst.size() - 2], bst.back())));
    s += "    }\n";
    std::string v = perturbs(id) ? "rk_perturb(row[j])" : "row[j]";
    s += fmt::format("    for (int64_t j = 0; j < N; ++j) b{}[(bi * M + m) * N + j] = {};\n  }}\n  }}\n", id, store_value(dt, v));
    return s;
  }

  std::string cat_kernel(int id) {
    const Node& n = g_.node(id);
    int64_t dim = normalize_dim(attr_int(n, "dim"), n.type.rank());
    std::string s;
    int64_t offset = 0;
    Shape os = contiguous_strides(n.type.shape);
    for (auto& o : n.operands) {
      int src = o.value;
      const TensorType& t = g_.node(src).type;
      // Output element of source element i: the same index with `offset` added along dim.
      std::string out_idx = fmt::format("{} * {}", offset, os[static_cast<size_t>(dim)]);
      Shape ts = contiguous_strides(t.shape);
      for (size_t d = 0; d < t.shape.size(); ++d)
        out_idx += fmt::format(" + ((i / {}) % {}) * {}", ts[d], t.shape[d], os[d]);
      std::string v = fmt::format("({}){}", compute_type(n.type.dtype),
                                  load_expr(t.dtype, "b" + std::to_string(src), strided_index(t.shape, "i", t.shape, strides_of(src))));
      if (perturbs(id)) v = "rk_perturb(" + v + ")";
      s += loop("i", t.numel(), 1) + fmt::format(" b{}[{}] = {};\n", id, out_idx, store_value(n.type.dtype, v));
      offset += t.shape[static_cast<size_t>(dim)];
    }
    return s;
  }

  std::string index_kernel(int id) {
    const Node& n = g_.node(id);
    int x = n.operands[0].value, ix = n.operands[1].value;
    const TensorType &xt = g_.node(x).type, &it = g_.node(ix).type;
    bool embedding = n.op == Op::embedding;
    std::string idx = load_expr(it.dtype, "b" + std::to_string(ix), strided_index(it.shape, embedding ? "q" : "i", it.shape, strides_of(ix)));
    std::string s;
    int64_t bound = embedding ? xt.shape[0] : xt.shape[static_cast<size_t>(normalize_dim(attr_int(n, "dim"), xt.rank()))];
    // The node is named through a string literal handed to a fixed format: never as a format.
    std::string node = c_string_literal(fmt::format("node %{} = {}", n.name, op_name(n.op)));
    std::string bad = cuda_ ? fail(fmt::format("node %{} = {}: an index is out of range for a dimension of size {}", n.name, op_name(n.op), bound))
                                  .insert(1, " raw = 0; c = 0;")
                            : fmt::format("{{ rk_index_error(err, errlen, {}, raw, {}); return 1; }}", node, bound);
    if (embedding) {
      int64_t rows = xt.shape[0], cols = xt.shape[1];
      Shape xs = strides_of(x);
      s += loop("q", it.numel(), cols) + fmt::format(" {{\n    int64_t raw = (int64_t){}, c = 0;\n", idx);
      s += fmt::format("    if (raw < 0 || raw >= {}) {}\n", rows, bad);
      std::string v = load_expr(xt.dtype, "b" + std::to_string(x), fmt::format("raw * {} + c * {}", xs[0], xs[1]));
      if (perturbs(id)) v = "rk_perturb(" + v + ")";
      s += fmt::format("    for (c = 0; c < {}; ++c) b{}[q * {} + c] = {};\n  }}\n", cols, id, cols, store_value(n.type.dtype, v));
      return s;
    }
    int64_t dim = normalize_dim(attr_int(n, "dim"), xt.rank());
    Shape xs = strides_of(x), os = contiguous_strides(n.type.shape);
    int64_t size = xt.shape[static_cast<size_t>(dim)];
    std::string off;
    for (size_t d = 0; d < xt.shape.size(); ++d) {
      std::string coord = static_cast<int64_t>(d) == dim ? "c" : fmt::format("((i / {}) % {})", os[d], n.type.shape[d]);
      off += (off.empty() ? "" : " + ") + fmt::format("{} * {}", coord, xs[d]);
    }
    s += loop("i", n.type.numel(), 1) + fmt::format(" {{\n    int64_t raw = (int64_t){};\n    int64_t c = raw < 0 ? raw + {} : raw;\n", idx, size);
    s += fmt::format("    if (c < 0 || c >= {}) {}\n", size, bad);
    std::string v = load_expr(xt.dtype, "b" + std::to_string(x), off);
    if (perturbs(id)) v = "rk_perturb(" + v + ")";
    s += fmt::format("    b{}[i] = {};\n  }}\n", id, store_value(n.type.dtype, v));
    return s;
  }

  const Graph& g_;
  const NodeInjections& inj_;
  std::vector<std::vector<int>> users_;
  std::map<int, int64_t> group_of_;
  std::map<int, std::vector<int>> group_last_;
  std::set<int> in_kernel_;
  bool cuda_;
  std::string m_;  // math namespace: std:: on the CPU, CUDA's global overloads on the device
  std::vector<std::string> errors_;
  int64_t workspace_bytes_ = 0;

 public:
  int64_t workspace_bytes() const { return workspace_bytes_; }
};

}  // namespace

std::string render_cpp(const Graph& g, const NodeInjections& injections) { return CppGen(g, injections, false).run(); }

CudaSource render_cuda(const Graph& g, const NodeInjections& injections) {
  CppGen gen(g, injections, true);
  CudaSource out;
  out.source = gen.run();
  out.workspace_bytes = gen.workspace_bytes();
  out.error_messages = gen.error_messages();
  return out;
}

}  // namespace reprokit
