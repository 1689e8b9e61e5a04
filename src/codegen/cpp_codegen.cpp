// The code generator's driver (see codegen.h): the plan (fusion groups, folded views, buffers),
// the kernel of each node by op, and the entry point that runs the kernels in order.
#include "cpp_codegen.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "buffer_plan.h"
#include "codegen.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/graph_utils.h"
#include "reprokit/ir/names.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/op_semantics.h"
#include "reprokit/runtime/templates.h"
#include "reprokit/support/hash.h"

namespace reprokit {

namespace codegen_detail {

const char* storage_type(DType t) {
  switch (t) {
    case DType::f16:
    case DType::bf16: return "uint16_t";
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::i32: return "int32_t";
    case DType::i64: return "int64_t";
    case DType::boolean: return "uint8_t";
    case DType::i8: return "int8_t";
    case DType::u8: return "uint8_t";
    case DType::i16: return "int16_t";
    case DType::u16: return "uint16_t";
  }
  return "?";
}

const char* compute_type(DType t) {
  switch (t) {
    case DType::f16:
    case DType::bf16:
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::i8:
    case DType::u8:
    case DType::i16:
    case DType::u16:
    case DType::i32:
    case DType::i64: return "int64_t";
    case DType::boolean: return "bool";
  }
  return "?";
}

std::string wrapped_value(DType t, const std::string& v) {
  if (!is_integral(t) || t == DType::i64) return v;
  return fmt::format("(int64_t)({})({})", storage_type(t), v);
}

std::string load_expr(DType t, const std::string& ptr, const std::string& idx) {
  std::string e = fmt::format("{}[{}]", ptr, idx);
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
  if (v.is_bool()) return fmt::format("({})({})", ct, v.as_bool() ? 1 : 0);  // maximum(x, true): one type for rk_max
  if (v.is_int()) return fmt::format("({})({}LL)", ct, v.as_int());
  double d = v.as_float();
  if (std::isnan(d)) return fmt::format("({})NAN", ct);
  if (std::isinf(d)) return fmt::format("({})({}INFINITY)", ct, d < 0 ? "-" : "");
  return fmt::format("({})({})", ct, fmt::format("{:.17g}", d));
}

// The strides that view data of (shape, strides) as `target` without a copy, or none when the
// layout does not allow it (ATen's computeStride).
std::optional<Shape> view_strides(const Shape& shape, const Shape& strides, const Shape& target) {
  if (shape.empty() || numel(shape) == 0) return contiguous_strides(target);
  Shape out(target.size(), 0);
  int64_t view_d = static_cast<int64_t>(target.size()) - 1;
  int64_t chunk_base = strides.back(), tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    auto du = static_cast<size_t>(d);
    tensor_numel *= shape[du];
    if (d == 0 || (shape[du - 1] != 1 && strides[du - 1] != tensor_numel * chunk_base)) {
      while (view_d >= 0 && (view_numel < tensor_numel || target[static_cast<size_t>(view_d)] == 1)) {
        out[static_cast<size_t>(view_d)] = view_numel * chunk_base;
        view_numel *= target[static_cast<size_t>(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base = strides[du - 1];
        tensor_numel = view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

//                                name    math     loop header                                                   kernel end
const Target kCpuTarget{"cpp",
                        "std::",
                        "  for (int64_t {0} = 0; {0} < {1}; ++{0})",
                        "",
                        /*openmp=*/true,
                        /*blas=*/true,
                        /*fast_float_math=*/true,
                        /*errors_as_text=*/true,
                        /*separate_units=*/true};
const Target kCudaTarget{"cuda",
                         "",
                         "  for (int64_t {0} = threadIdx.x; {0} < {1}; {0} += blockDim.x)",
                         "  __syncthreads();\n",
                         /*openmp=*/false,
                         /*blas=*/false,
                         /*fast_float_math=*/false,
                         /*errors_as_text=*/false,
                         /*separate_units=*/false};

Codegen::Codegen(const Graph& g, const NodeInjections& inj, const Target& target, std::set<std::string> frozen)
    : g_(g),
      inj_(inj),
      target_(target),
      m_(target.math_ns),
      users_(compute_users(g)),
      outputs_(g.outputs.begin(), g.outputs.end()),
      frozen_(std::move(frozen)) {}

void Codegen::plan_groups() {
  std::map<int64_t, std::vector<int>> groups;
  for (int i = g_.num_inputs(); i < g_.size(); ++i)
    if (auto it = g_.node(i).attrs.find("group"); it != g_.node(i).attrs.end()) groups[it->second.as_int()].push_back(i);
  for (auto& [gid, members] : groups) {
    if (members.size() == 1) continue;  // a group of one is an ordinary node
    for (int m : members) group_of_[m] = gid;
    group_last_[members.back()] = members;
    group_end_[gid] = members.back();
    for (size_t k = 0; k + 1 < members.size(); ++k)
      if (!is_pointwise(g_.node(members[k]).op))
        throw InternalError(fmt::format("fusion group {} has the non-pointwise node %{} before its end", gid, g_.node(members[k]).name));
  }
}

std::optional<Access> Codegen::view_access(int id) const {
  const Node& n = g_.node(id);
  int src = n.operands[0].value;
  Access a = access(src);
  const Shape& in = g_.node(src).type.shape;
  const Shape& out = n.type.shape;
  Shape st;
  if (n.op == Op::permute || n.op == Op::transpose) {
    for (auto d : permutation(n, static_cast<int64_t>(in.size()))) st.push_back(a.strides[static_cast<size_t>(d)]);
  } else if (n.op == Op::expand) {
    size_t lead = out.size() - in.size();
    st.assign(out.size(), 0);
    for (size_t d = 0; d < in.size(); ++d) st[lead + d] = in[d] == 1 ? 0 : a.strides[d];
  } else if (n.op == Op::slice) {
    SliceBounds b = slice_bounds(n, in);
    st = a.strides;
    a.offset += b.start * st[static_cast<size_t>(b.dim)];
    st[static_cast<size_t>(b.dim)] *= b.step;
  } else if (n.op == Op::contiguous) {
    st = a.strides;  // reading through strides is the same value; BLAS packs what it must
  } else {           // reshape, squeeze, unsqueeze: a new shape over the same order of elements
    auto v = view_strides(in, a.strides, out);
    if (!v) return std::nullopt;
    st = *v;
  }
  a.strides = st;
  return a;
}

void Codegen::plan_views() {
  for (int i = g_.num_inputs(); i < g_.size(); ++i) {
    const Node& n = g_.node(i);
    if (!is_view_op(n.op) || inj_.count(n.name) || group_of_.count(i)) continue;  // an injected view is a kernel of its own
    if (auto a = view_access(i)) views_[i] = *a;                                  // else: not viewable, copied by a kernel
  }
}

bool Codegen::materialized(int id) const {
  if (g_.node(id).is_input() || is_output(id)) return true;
  if (is_view(id) || epilogue_of_.count(id)) return false;
  auto it = group_of_.find(id);
  if (it == group_of_.end()) return true;
  for (int u : users_[static_cast<size_t>(id)]) {
    auto uit = group_of_.find(u);
    if (uit == group_of_.end() || uit->second != it->second) return true;
  }
  return false;
}

std::string Codegen::local(const char* prefix, int id) const {
  auto [it, fresh] = local_.emplace(id, static_cast<int>(local_.size()));
  return prefix + std::to_string(it->second);
}

std::string Codegen::buf(int id) const {
  if (std::find(used_.begin(), used_.end(), id) == used_.end()) used_.push_back(id);
  return local("b", id);
}

Access Codegen::access(int id) const {
  if (auto it = views_.find(id); it != views_.end()) return it->second;
  const TensorType& t = g_.node(id).type;
  return {id, t.dtype, 0, g_.node(id).is_input() ? t.effective_strides() : contiguous_strides(t.shape)};
}

std::string Codegen::index_of(const Access& a, const Shape& shape, const Shape& iter, const std::string& flat) {
  Shape is = contiguous_strides(iter);
  size_t lead = iter.size() - shape.size();
  // The whole flat index when the access walks `iter` contiguously.
  bool linear = shape == iter && a.strides == contiguous_strides(shape);
  std::string e = linear ? flat : "";
  if (!linear)
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == 1 || a.strides[d] == 0) continue;
      size_t id = d + lead;
      bool outermost = true;
      for (size_t k = 0; k < id; ++k) outermost &= iter[k] == 1;
      std::string coord = is[id] == 1
                              ? (outermost ? flat : fmt::format("({} % {})", flat, iter[id]))
                              : (outermost ? fmt::format("({} / {})", flat, is[id]) : fmt::format("(({} / {}) % {})", flat, is[id], iter[id]));
      e += (e.empty() ? "" : " + ") + (a.strides[d] == 1 ? coord : fmt::format("{} * {}", coord, a.strides[d]));
    }
  if (e.empty()) e = "0";
  return a.offset ? fmt::format("{} + {}", a.offset, e) : e;
}

std::string Codegen::load(int v, const char* ct, const Shape& iter, const std::string& flat) const {
  Access a = access(v);
  return fmt::format("({}){}", ct, load_expr(a.dtype, ptr(a), index_of(a, g_.node(v).type.shape, iter, flat)));
}

std::string Codegen::loop(const char* var, int64_t n, int64_t work_per_item, bool simd) const {
  const std::string header = fmt::format(fmt::runtime(target_.loop_header), var, n);
  if (!target_.openmp) return header;
  // Only loops worth tens of microseconds go parallel. With OpenBLAS's own thread pool competing
  // for the cores, a fork/join could cost a whole scheduler time slice (30x on attention), and the
  // bar was a millisecond; with one pool (cpp_prelude.h: rk_gemm) it costs a few microseconds.
  bool parallel = n * work_per_item >= (int64_t{1} << 17);
  std::string pragma = parallel ? (simd ? "  #pragma omp parallel for simd schedule(static)\n" : "  #pragma omp parallel for schedule(static)\n")
                                : (simd ? "  #pragma omp simd\n" : "");
  return pragma + header;
}

std::string Codegen::end_kernel() const { return target_.kernel_end; }

std::string Codegen::fail(const std::string& msg) {
  if (target_.errors_as_text) return fmt::format("{{ rk_error(err, errlen, {}); return 1; }}", c_string_literal(msg));
  errors_.push_back(msg);
  return fmt::format("{{ rk_flag(err, {}); }}", errors_.size());
}

std::string Codegen::scratch(const std::string& name, const char* ct, int64_t count) {
  if (target_.separate_units) {  // a slice of the scratch arena, which every kernel reuses
    const int64_t at = kernel_scratch_;
    kernel_scratch_ += (std::max<int64_t>(count, 1) * 8 + 63) / 64 * 64;
    max_scratch_ = std::max(max_scratch_, kernel_scratch_);
    return fmt::format("  {0}* {1} = ({0}*)({2} + {3});\n", ct, name, buf(scratch_id()), at);
  }
  std::string s = fmt::format("  {0}* {1} = ({0}*)(ws + {2});\n", ct, name, workspace_bytes_);
  workspace_bytes_ += (std::max<int64_t>(count, 1) * 8 + 15) / 16 * 16;
  return s;
}

std::string Codegen::kept(const std::string& name, int64_t bytes) {
  if (!target_.separate_units) throw InternalError("a kept region on a target without one");
  const int64_t at = kept_bytes_;
  kept_bytes_ += (std::max<int64_t>(bytes, 1) + 63) / 64 * 64;
  return fmt::format("  unsigned char* {} = {} + {};\n", name, buf(kept_id()), at);
}

std::string Codegen::injection_prologue(int id) {
  auto it = inj_.find(g_.node(id).name);
  if (it == inj_.end()) return "";
  std::string where = fmt::format("node %{} ({})", g_.node(id).name, op_name(g_.node(id).op));
  switch (it->second.kind) {
    case FaultKind::compile_error: return fmt::format("  rk_injected_compile_error_in_{}();\n", sanitize(g_.node(id).name));
    case FaultKind::runtime_error: return "  " + fail("injected runtime error in " + where) + "\n";
    case FaultKind::flaky: return "  if (rk_flaky()) " + fail("injected flaky failure in " + where) + "\n";
    case FaultKind::crash: return "  rk_crash();\n";
    case FaultKind::hang: return "  rk_spin_forever();\n";
    case FaultKind::accuracy:
    case FaultKind::accuracy_one: return "";  // applied to the value
  }
  return "";
}

bool Codegen::perturbs(int id) const {
  auto it = inj_.find(g_.node(id).name);
  return it != inj_.end() && (it->second.kind == FaultKind::accuracy || it->second.kind == FaultKind::accuracy_one);
}

std::string Codegen::perturb_open(int id) const {
  const NodeFault& f = inj_.at(g_.node(id).name);
  if (f.kind == FaultKind::accuracy_one) return fmt::format("rk_perturb_one({}LL, ", static_cast<int64_t>(f.amount));
  if (f.amount > 0) return fmt::format("rk_perturb_rel({:.17g}, ", f.amount);
  return "rk_perturb(";
}

std::string Codegen::sanitize(const std::string& s) {
  std::string o;
  for (char c : s) o += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return o;
}

std::string Codegen::kernel_header(const std::vector<int>& ids) {
  std::string names, ops;
  for (int id : ids) names += (names.empty() ? "" : ", ") + sanitize(g_.node(id).name);
  // The profiler's label: the first node, how many more, the ops in order (a run of one op once),
  // the first node's type.
  for (int id : ids) {
    const std::string op(op_name(g_.node(id).op));
    if (ops.empty() || ops.rfind(op) != ops.size() - op.size()) ops += (ops.empty() ? "" : ", ") + op;
  }
  const Node& head = g_.node(ids.front());
  kernel_label_ = fmt::format("{}{}  [{}]  {}[{}]", head.name, ids.size() > 1 ? fmt::format(" +{}", ids.size() - 1) : "", ops,
                              dtype_name(head.type.dtype), fmt::join(head.type.shape, ", "));
  std::string s = fmt::format("  // kernel: {}\n", names);
  for (int id : ids) s += injection_prologue(id);
  return s;
}

std::string Codegen::kernel_for_group(const std::vector<int>& ids) {
  in_kernel_.clear();
  kernel_scratch_ = 0;
  const Node& last = g_.node(ids.back());
  if (is_pointwise(last.op)) return kernel_header(ids) + pointwise_kernel(ids) + end_kernel();
  std::vector<int> prologue(ids.begin(), ids.end() - 1);
  return kernel_header(ids) + reduction_kernel(ids.back(), prologue) + end_kernel();
}

std::string Codegen::kernel_for_node(int id) {
  in_kernel_.clear();
  kernel_scratch_ = 0;
  const Node& n = g_.node(id);
  std::vector<int> named{id};
  if (auto e = epilogue_of_.find(id); e != epilogue_of_.end()) named.insert(named.end(), e->second.begin(), e->second.end());
  std::string s = kernel_header(named);
  switch (n.op) {
    case Op::neg:
    case Op::abs:
    case Op::exp:
    case Op::log:
    case Op::sqrt:
    case Op::rsqrt:
    case Op::reciprocal:
    case Op::sin:
    case Op::cos:
    case Op::tanh:
    case Op::relu:
    case Op::erf:
    case Op::add:
    case Op::sub:
    case Op::mul:
    case Op::div:
    case Op::pow:
    case Op::maximum:
    case Op::minimum:
    case Op::eq:
    case Op::ne:
    case Op::lt:
    case Op::le:
    case Op::gt:
    case Op::ge:
    case Op::where:
    case Op::to:
    case Op::clone:
    case Op::clamp: return s + pointwise_kernel({id}) + end_kernel();
    case Op::sum:
    case Op::amax:
    case Op::amin:
    case Op::argmax: return s + reduction_kernel(id, {}) + end_kernel();
    case Op::matmul: return s + matmul_kernel(id) + end_kernel();
    case Op::cat: return s + cat_kernel(id) + end_kernel();
    case Op::embedding:
    case Op::gather: return s + index_kernel(id) + end_kernel();
    case Op::full: return s + full_kernel(id) + end_kernel();
    case Op::conv2d: return s + conv2d_kernel(id) + end_kernel();
    case Op::conv3d: return s + conv3d_kernel(id) + end_kernel();
    case Op::conv_transpose2d:
    case Op::conv_transpose3d: return s + conv_transpose_kernel(id) + end_kernel();
    case Op::max_pool2d:
    case Op::avg_pool2d:
    case Op::max_pool3d:
    case Op::avg_pool3d: return s + pool_kernel(id) + end_kernel();
    case Op::max_pool2d_backward:
    case Op::avg_pool2d_backward:
    case Op::max_pool3d_backward:
    case Op::avg_pool3d_backward: return s + pool_backward_kernel(id) + end_kernel();
    case Op::adaptive_avg_pool2d: return s + adaptive_pool_kernel(id) + end_kernel();
    case Op::pad: return s + pad_kernel(id) + end_kernel();
    case Op::cumsum:
    case Op::cumprod:
    case Op::argsort:
    case Op::topk_indices: return s + scan_kernel(id) + end_kernel();
    case Op::reshape:
    case Op::permute:
    case Op::transpose:
    case Op::expand:
    case Op::slice:
    case Op::squeeze:
    case Op::unsqueeze:
    case Op::contiguous:
      return s + copy_kernel(id) + end_kernel();  // a view that could not be folded
    // Composite ops are decomposed before codegen.
    case Op::input:
    case Op::sigmoid:
    case Op::silu:
    case Op::gelu:
    case Op::mean:
    case Op::var:
    case Op::softmax:
    case Op::log_softmax:
    case Op::layer_norm:
    case Op::linear:
    case Op::batch_norm:
    case Op::sort:
    case Op::topk:
    case Op::group_norm:
    case Op::instance_norm:
    case Op::pixel_shuffle:
    case Op::pixel_unshuffle:
    case Op::einsum:
    case Op::conv2d_input_grad:
    case Op::conv2d_weight_grad:
    case Op::conv3d_input_grad:
    case Op::conv3d_weight_grad:
    case Op::grid_sample:
    case Op::affine_grid:
    case Op::scatter_add: break;
  }
  throw InternalError(fmt::format("cpp codegen: no kernel for op '{}' (node %{})", op_name(n.op), n.name));
}

int Codegen::kernel_position(int id) const {
  if (auto e = epilogue_of_.find(id); e != epilogue_of_.end()) return e->second.back();
  auto it = group_of_.find(id);
  return it == group_of_.end() ? id : group_end_.at(it->second);
}

void Codegen::plan_epilogues() {
  if (!target_.blas) return;
  for (int i = g_.num_inputs(); i < g_.size(); ++i) {
    const Node& n = g_.node(i);
    const DType dt = n.type.dtype;
    if (n.op != Op::conv2d || is_output(i) || inj_.count(n.name) || (dt != DType::f32 && dt != DType::f64)) continue;
    const auto& users = users_[static_cast<size_t>(i)];
    if (users.empty()) continue;
    // The one pointwise kernel that reads the conv: a fusion group, or a pointwise node alone.
    const int u = users.front();
    std::vector<int> kernel = group_of_.count(u) ? group_last_.at(group_end_.at(group_of_.at(u))) : std::vector<int>{u};
    const Node& last = g_.node(kernel.back());
    bool ok = is_pointwise(last.op) && last.type.shape == n.type.shape && !is_view(u);
    for (int r : users) ok &= std::find(kernel.begin(), kernel.end(), r) != kernel.end();
    for (int m : kernel) ok &= !inj_.count(g_.node(m).name) && !epilogue_at_.count(m);
    if (!ok) continue;
    epilogue_of_[i] = kernel;
    epilogue_at_[kernel.back()] = i;
  }
}

// A cat that can be written in place: not an output, no injected fault, and every dim before its
// own of size 1, so each operand is one contiguous slice of it.
bool Codegen::cat_in_place_candidate(int c) const {
  const Node& n = g_.node(c);
  if (n.op != Op::cat || is_output(c) || inj_.count(n.name)) return false;
  const int64_t dim = normalize_dim(attr_int(n, "dim"), n.type.rank());
  for (int64_t d = 0; d < dim; ++d)
    if (n.type.shape[static_cast<size_t>(d)] != 1) return false;
  for (const Operand& o : n.operands)
    if (!o.is_value()) return false;
  return true;
}

// Each candidate cat whose operands are, in order, the first operands of a longer candidate cat
// along the same dim, with that longest cat: it is the start of that cat's buffer.
std::map<int, int> Codegen::cat_prefixes() const {
  std::vector<int> cats;
  for (int c = g_.num_inputs(); c < g_.size(); ++c)
    if (cat_in_place_candidate(c)) cats.push_back(c);
  const auto dim_of = [&](int c) { return normalize_dim(attr_int(g_.node(c), "dim"), g_.node(c).type.rank()); };
  std::map<int, int> head;
  for (int p : cats) {
    const Node& pn = g_.node(p);
    // Read through another view, it stays a buffer of its own (a view's access is fixed when planned).
    bool viewed = false;
    for (int u : users_[static_cast<size_t>(p)]) viewed |= is_view(u);
    if (viewed) continue;
    for (int f : cats) {
      const Node& fn = g_.node(f);
      if (f == p || fn.operands.size() <= pn.operands.size() || dim_of(f) != dim_of(p) || fn.type.dtype != pn.type.dtype) continue;
      if (!std::equal(pn.operands.begin(), pn.operands.end(), fn.operands.begin(),
                      [](const Operand& a, const Operand& b) { return a.value == b.value; }))
        continue;
      if (auto it = head.find(p); it == head.end() || g_.node(it->second).operands.size() < fn.operands.size()) head[p] = f;
    }
  }
  return head;
}

void Codegen::plan_cats() {
  if (!target_.blas) return;
  const std::map<int, int> prefix_of = cat_prefixes();
  for (int c = g_.num_inputs(); c < g_.size(); ++c) {
    const Node& n = g_.node(c);
    if (!cat_in_place_candidate(c) || prefix_of.count(c)) continue;
    int64_t offset = 0;
    bool all = true;
    for (const Operand& o : n.operands) {
      const int v = o.value;
      const TensorType& t = g_.node(v).type;
      int reads = 0;
      for (const Operand& p : n.operands) reads += p.value == v;
      // Its own buffer (not an input, output, view, fused temporary or another cat's slice), read
      // once by this cat, in the cat's dtype. Its other readers read it in the cat's buffer, which
      // lives until the last of them (plan_workspace).
      const bool ok = !g_.node(v).is_input() && !is_output(v) && materialized(v) && !in_cat_.count(v) && t.dtype == n.type.dtype && reads == 1 &&
                      g_.node(v).op != Op::cat;
      if (ok) in_cat_[v] = {c, offset * static_cast<int64_t>(dtype_size(t.dtype))};
      all &= ok;
      offset += t.numel();
    }
    if (all) cat_in_place_.insert(c);
  }
  // A start whose operands all went in place is a view of its cat's first elements; one that is
  // not copies them, reading those in place from the longer cat's buffer.
  for (auto [p, head] : prefix_of) {
    bool placed = true;
    for (const Operand& o : g_.node(p).operands) placed &= in_cat_.count(o.value) && in_cat_.at(o.value).first == head;
    if (placed) views_[p] = {head, g_.node(p).type.dtype, 0, contiguous_strides(g_.node(p).type.shape)};
  }
}

int64_t Codegen::plan_workspace(const std::map<int, int>& direct, std::vector<std::pair<int, int64_t>>& placed) const {
  const int n = g_.size();
  // Each buffer's last reader: every kernel reads its nodes' operands through access(), whose base
  // is the buffer behind any chain of folded views; outputs copied at the end read theirs last.
  std::vector<int> last(static_cast<size_t>(n), -1);
  const auto read_at = [&](int value, int position) {
    const int b = access(value).base;
    last[static_cast<size_t>(b)] = std::max(last[static_cast<size_t>(b)], position);
    // A value written into a cat's buffer is read there: the cat's buffer lives until then.
    if (auto it = in_cat_.find(b); it != in_cat_.end())
      last[static_cast<size_t>(it->second.first)] = std::max(last[static_cast<size_t>(it->second.first)], position);
  };
  for (int u = g_.num_inputs(); u < n; ++u) {
    if (is_view(u)) continue;
    for (const Operand& o : g_.node(u).operands)
      if (o.is_value()) read_at(o.value, kernel_position(u));
  }
  for (int o : g_.outputs) read_at(o, n);
  std::vector<BufferLife> lives;
  // A cat's buffer lives from its first operand written in place.
  std::map<int, int> first;
  for (auto& [v, slice] : in_cat_) {
    auto [it, fresh] = first.emplace(slice.first, kernel_position(v));
    it->second = std::min(it->second, kernel_position(v));
  }
  for (int i = g_.num_inputs(); i < n; ++i) {
    if (!materialized(i) || direct.count(i) || in_cat_.count(i)) continue;
    placed.push_back({i, 0});
    const int64_t bytes = std::max<int64_t>(g_.node(i).type.numel(), 1) * static_cast<int64_t>(dtype_size(g_.node(i).type.dtype));
    const int start = first.count(i) ? std::min(first.at(i), kernel_position(i)) : kernel_position(i);
    lives.push_back({bytes, start, std::max(last[static_cast<size_t>(i)], kernel_position(i))});
  }
  BufferPlan plan = plan_buffers(lives);
  std::map<int, int64_t> offset_of;
  for (size_t k = 0; k < placed.size(); ++k) offset_of[placed[k].first] = placed[k].second = plan.offsets[k];
  for (auto& [v, slice] : in_cat_) placed.push_back({v, offset_of.at(slice.first) + slice.second});
  return plan.bytes;
}

// The entry point's kernel timer (rk_graph_profile): each kernel's start ends the one before;
// seconds[k] gains kernel k's wall time. Kernels start and end on the calling thread (their
// parallel regions are inside them), so the hook keeps its state in plain statics.
static const char* const kProfiler =
    "void (*rk_profile_hook)(int) = nullptr;  // declared extern \"C\" and hidden in cpp_base.h\n"
    "static int64_t rk_profile_first = 0, rk_profile_slot = -1;  // the running unit's first kernel; the kernel being timed\n"
    "static double* rk_profile_seconds = nullptr;\n"
    "static timespec rk_profile_start;\n"
    "static void rk_profile_mark(int kernel) {\n"
    "  timespec now;\n"
    "  clock_gettime(CLOCK_MONOTONIC, &now);\n"
    "  if (rk_profile_slot >= 0)\n"
    "    rk_profile_seconds[rk_profile_slot] += (double)(now.tv_sec - rk_profile_start.tv_sec) + 1e-9 * (double)(now.tv_nsec - "
    "rk_profile_start.tv_nsec);\n"
    "  rk_profile_slot = kernel < 0 ? -1 : rk_profile_first + kernel;\n"
    "  rk_profile_start = now;\n"
    "}\n\n";

// The threads runs use (rk_graph_threads), and a thread of the caller's made to run the graph on
// itself alone (rk_graph_one_thread): runs side by side, each on its own workspace, one a thread.
static const char* const kThreads =
    "extern \"C\" int rk_graph_threads(void) {\n"
    "#ifdef _OPENMP\n  return omp_get_max_threads();\n#else\n  return 1;\n#endif\n}\n"
    "extern \"C\" void rk_graph_one_thread(void) {\n"
    "#ifdef _OPENMP\n  omp_set_num_threads(1);\n#endif\n}\n\n";

std::string Codegen::run() {
  plan_groups();
  plan_views();
  plan_epilogues();
  plan_cats();
  const int n = g_.size(), n_out = static_cast<int>(g_.outputs.size());
  // Buffers by node id in B: inputs; outputs (a body node's first return writes straight into the
  // caller's buffer); intermediates in one workspace. B[n + k] is output k of the caller.
  std::map<int, int> direct;  // node -> output position
  for (int k = 0; k < n_out; ++k) {
    int o = g_.outputs[static_cast<size_t>(k)];
    if (!g_.node(o).is_input() && !is_view(o) && !direct.count(o)) direct[o] = k;
  }
  std::vector<std::pair<int, int64_t>> placed;  // node -> byte offset in the workspace
  const int64_t ws_bytes = plan_workspace(direct, placed);
  // Kernels go into functions of a few kernels each, called in order: the compiler's time stays
  // linear in the graph's size (no entry point thousands of statements long, no per-function
  // overhead paid for every one of thousands of tiny kernels). Where a function ends depends only
  // on the kernels' text (a hash), so a candidate that keeps most of a graph's kernels keeps most
  // of its functions too; on the CPU each is a unit compiled and cached on its own.
  constexpr int kMinKernels = 6, kMaxKernels = 32, kCutEvery = 8;
  constexpr size_t kMaxFunctionBytes = 1u << 17;
  std::string kernels, calls;
  std::string chunk;
  std::vector<int> chunk_args;  // CPU: the buffers the function's pointer list holds, in order
  int nk = 0, in_chunk = 0;
  bool chunk_pointwise = true;  // every kernel of the chunk so far is a pointwise loop
  auto flush = [&] {
    if (!in_chunk) return;
    if (!target_.separate_units) {
      kernels += fmt::format(
          "__device__ __noinline__ void k{}(void* const* B, unsigned char* ws, int* err) {{\n{}  (void)B; (void)ws; (void)err;\n}}\n\n", nk, chunk);
      calls += fmt::format("  k{}(B, ws, err);\n", nk);
    } else {
      const std::string name = fmt::format("rk_u_{:016x}", fnv1a64(chunk));
      units_.push_back(
          {name,
           fmt::format("extern \"C\" int {}(void* const* P, char* err, int errlen) {{\n{}  RK_PROFILE(-1);\n  (void)P; (void)err; (void)errlen;\n  "
                       "return 0;\n}}\n",
                       name, chunk),
           chunk_args, in_chunk, chunk_pointwise});
    }
    ++nk;
    chunk.clear();
    chunk_args.clear();
    in_chunk = 0;
    chunk_pointwise = true;
  };
  auto add_kernel = [&](const std::string& body, bool pointwise) {
    std::string decls;
    for (int i : used_) {
      const std::string source = target_.separate_units ? fmt::format("P[{}]", chunk_args.size()) : fmt::format("B[{}]", i);
      // B[n + k] is the caller's output k (written by the copies below); B[n + n_out], the scratch
      // arena; B[n + n_out + 1], the kept region.
      const char* type = i == scratch_id() || i == kept_id() ? "unsigned char"
                                                             : storage_type(g_.node(i < n ? i : g_.outputs[static_cast<size_t>(i - n)]).type.dtype);
      decls += fmt::format("    {0}* {1} = ({0}*){2};\n", type, local("b", i), source);
      if (target_.separate_units) chunk_args.push_back(i);
    }
    // On the CPU each kernel reports its start to the profiler's hook (cpp_base.h: RK_PROFILE).
    const std::string timed = target_.separate_units ? fmt::format("  RK_PROFILE({});\n", in_chunk) : std::string();
    const std::string kernel = timed + "  {\n" + decls + body + "  }\n" + end_kernel();
    chunk += kernel;
    chunk_pointwise = chunk_pointwise && pointwise;
    kernel_labels_.push_back(std::exchange(kernel_label_, std::string()));
    used_.clear();
    local_.clear();
    ++in_chunk;
    // The body alone decides (the declarations number slots from the function's start).
    if ((in_chunk >= kMinKernels && fnv1a64(body) % kCutEvery == 0) || in_chunk == kMaxKernels || chunk.size() > kMaxFunctionBytes) flush();
  };
  used_.clear();
  local_.clear();
  for (int i = g_.num_inputs(); i < n; ++i) {
    if (is_view(i) || epilogue_of_.count(i) || cat_in_place_.count(i)) continue;
    if (epilogue_at_.count(i)) add_kernel(kernel_for_node(epilogue_at_.at(i)), false);
    else if (group_last_.count(i)) add_kernel(kernel_for_group(group_last_.at(i)), is_pointwise(g_.node(i).op));
    else if (!group_of_.count(i)) add_kernel(kernel_for_node(i), is_pointwise(g_.node(i).op));
  }
  // Outputs that are inputs, folded views, or returned twice are copied into the caller's buffer.
  for (int k = 0; k < n_out; ++k) {
    int o = g_.outputs[static_cast<size_t>(k)];
    if (direct.count(o) && direct.at(o) == k) continue;
    const TensorType& t = g_.node(o).type;
    kernel_label_ = fmt::format("{}  [copy to output {}]", g_.node(o).name, k);
    used_.push_back(n + k);
    const std::string out = local("b", n + k);
    add_kernel(loop("i", t.numel(), 1) + fmt::format(" {}[i] = {};\n", out, store_value(t.dtype, load(o, compute_type(t.dtype), t.shape, "i"))),
               true);
  }
  flush();
  // The tables of the entry point.
  std::string direct_ids, direct_pos, ws_ids, ws_offsets;
  for (auto& [o, k] : direct) {
    direct_ids += fmt::format("{}, ", o);
    direct_pos += fmt::format("{}, ", k);
  }
  for (auto& [i, off] : placed) {
    ws_ids += fmt::format("{}, ", i);
    ws_offsets += fmt::format("{}, ", off);
  }
  std::string tables = fmt::format(
      "static const int64_t kDirectIds[] = {{{}-1}}, kDirectPos[] = {{{}-1}};\n"
      "static const int64_t kWorkspaceIds[] = {{{}-1}}, kWorkspaceOffsets[] = {{{}-1}};\n",
      direct_ids, direct_pos, ws_ids, ws_offsets);
  std::string fill = fmt::format(
      "  for (int64_t i = 0; i < {0}; ++i) B[i] = (void*)inputs[i];\n"
      "  for (int64_t k = 0; k < {1}; ++k) B[{2} + k] = outputs[k];\n"
      "  for (int64_t k = 0; k < {3}; ++k) B[kDirectIds[k]] = outputs[kDirectPos[k]];\n"
      "  for (int64_t k = 0; k < {4}; ++k) B[kWorkspaceIds[k]] = (void*)(ws + kWorkspaceOffsets[k]);\n",
      g_.num_inputs(), n_out, n, direct.size(), placed.size());
  if (!target_.separate_units) {
    workspace_bytes_ += ws_bytes;  // kernel scratch was placed first; buffers follow it
    std::string shifted;
    for (auto& [i, off] : placed) shifted += fmt::format("{}, ", off + workspace_bytes_ - ws_bytes);
    tables = fmt::format(
        "__device__ const int64_t kDirectIds[] = {{{}-1}}, kDirectPos[] = {{{}-1}};\n"
        "__device__ const int64_t kWorkspaceIds[] = {{{}-1}}, kWorkspaceOffsets[] = {{{}-1}};\n",
        direct_ids, direct_pos, ws_ids, shifted);
    return template_text("cuda_prelude.cuh") + "\n" + tables + "\n" + kernels +
           "extern \"C\" __global__ void rk_graph_kernel(void* const* inputs, void* const* outputs, unsigned char* ws, int* err) {\n" +
           fmt::format("  void* B[{}];\n", n + n_out) + fill + calls + "}\n";
  }
  // The entry point: the buffer table, then each unit called with its slice of the pointer list.
  const int64_t kept_at = (ws_bytes + max_scratch_ + 63) / 64 * 64;  // the kept region, after the scratch arena
  std::string declared, args, call_table;
  std::set<std::string> seen;
  int64_t first = 0, kernels_before = 0;
  for (const Unit& u : units_) {
    if (seen.insert(u.name).second) declared += fmt::format("extern \"C\" int {}(void* const*, char*, int);\n", u.name);
    call_table += fmt::format("  {{{}, {}, {}}},\n", u.name, first, kernels_before);
    for (int a : u.args) args += fmt::format("{},{}", a, (++first) % 32 ? " " : "\n  ");
    kernels_before += u.kernels;
  }
  return template_text("cpp_prelude.h") + "\n" + tables + "\n" + declared + "\nstatic const int64_t kArgs[] = {\n  " + args + "-1};\n" +
         "using Kernel = int (*)(void* const*, char*, int);\nstruct RkCall {\n  Kernel fn;\n  int64_t first, kernel;  // its pointers; its first "
         "kernel\n};\n" +
         "static const RkCall kCalls[] = {\n" + call_table + "  {nullptr, 0, 0}};\n\n" +
         fmt::format("extern \"C\" int64_t rk_graph_workspace_bytes(void) {{ return {}; }}\n", std::max<int64_t>(kept_at + kept_bytes_, 64)) +
         fmt::format("extern \"C\" int64_t rk_graph_kept_bytes(void) {{ return {}; }}\n", kept_bytes_) +
         fmt::format("extern \"C\" int64_t rk_graph_kernel_count(void) {{ return {}; }}\n\n", kernels_before) + kProfiler +
         "static int rk_graph_calls(void* const* inputs, void* const* outputs, unsigned char* ws, char* err, int errlen) {\n" +
         fmt::format("  std::vector<void*> B({});\n  B[{}] = ws + {};\n  B[{}] = ws + {};\n", n + n_out + 2, scratch_id(), ws_bytes, kept_id(),
                     kept_at) +
         fill +
         fmt::format("  std::vector<void*> P({});\n  for (int64_t i = 0; i < {}; ++i) P[i] = B[kArgs[i]];\n", std::max<int64_t>(first, 1), first) +
         "  for (const RkCall* c = kCalls; c->fn; ++c) {\n    if (rk_profile_hook) rk_profile_first = c->kernel;  // runs may be side by side\n" +
         "    if (c->fn(P.data() + c->first, err, errlen)) return 1;\n  }\n  return 0;\n}\n\n" + kThreads +
         "extern \"C\" int rk_graph_run(void* const* inputs, void* const* outputs, unsigned char* ws, char* err, int errlen) {\n" +
         "  return rk_graph_calls(inputs, outputs, ws, err, errlen);\n}\n\n" +
         "extern \"C\" int rk_graph_profile(void* const* inputs, void* const* outputs, unsigned char* ws, char* err, int errlen, double* seconds) "
         "{\n" +
         "  rk_profile_seconds = seconds;\n  rk_profile_slot = -1;\n  rk_profile_hook = rk_profile_mark;\n" +
         "  const int rc = rk_graph_calls(inputs, outputs, ws, err, errlen);\n  rk_profile_hook = nullptr;\n  return rc;\n}\n";
}

}  // namespace codegen_detail

// The kernels the prelude implements: units of their own, each the same text for every graph
// (see cpp_prelude.h), compiled where a unit calls them. They go first, longest first: units
// compile side by side in list order, and one of these last in the list ran alone while the
// other cores sat idle. (Compile times, -O3, on an AVX-512 Xeon: conv 1.4 s, few-channel conv
// 1.0 s, a depthwise kernel 0.65-0.95 s, gemm 0.75 s, Winograd 0.7 s, pool 0.55 s; of each,
// 0.14 s is the prelude and 0.23 s, for all but gemm, the intrinsics header.)
const std::string& cpp_prelude() {
  static const std::string prelude = template_text("cpp_prelude.h") + "\n";
  return prelude;
}

const std::vector<CppKernelsUnit>& cpp_kernels_units() {
  static const std::vector<CppKernelsUnit> table = [] {
    const std::string& prelude = cpp_prelude();
    std::vector<CppKernelsUnit> t;
    const auto add = [&](std::string call, const std::string& defines) { t.push_back({std::move(call), defines + prelude}); };
    add("rk_conv_gemm_f32(", "#define RK_CONV_KERNELS 1\n");
    for (int stride : {1, 2}) add(fmt::format("rk_conv_few_channels_f32<{}>(", stride), fmt::format("#define RK_FEW_CHANNELS_KERNELS {}\n", stride));
    for (int taps : {7, 5, 3})
      for (int stride : {1, 2})
        for (const char* activation : {"RkActivation::none", "RkActivation::silu"})
          add(fmt::format("rk_depthwise_f32<{}, {}, {}>(", taps, stride, activation),
              fmt::format("#define RK_DEPTHWISE_KERNEL {}, {}, {}\n", taps, stride, activation));
    for (int channels : {4, 8, 16})
      for (int stride : {1, 2})
        add(fmt::format("rk_grouped_conv_f32<{}, {}>(", channels, stride), fmt::format("#define RK_GROUPED_KERNEL {}, {}\n", channels, stride));
    add("rk_matmul_f32(", "#define RK_GEMM_KERNELS 1\n");
    add("rk_conv_winograd_f32(", "#define RK_WINOGRAD_KERNELS 1\n");
    add("rk_max_pool_f32(", "#define RK_POOL_KERNELS 1\n");
    return t;
  }();
  return table;
}

CppSource render_cpp(const Graph& g, const NodeInjections& injections, const std::set<std::string>& frozen_inputs) {
  codegen_detail::Codegen gen(g, injections, codegen_detail::kCpuTarget, frozen_inputs);
  CppSource out;
  const std::string& prelude = cpp_prelude();
  out.entry = gen.run();
  out.prelude = prelude;
  out.kernel_labels = gen.kernel_labels();
  for (auto& u : gen.units()) out.units.push_back(prelude + u.text);
  // The kernels the prelude implements that this graph calls, first (cpp_kernels_units).
  std::vector<std::string> kernels;
  for (const CppKernelsUnit& k : cpp_kernels_units())
    if (std::any_of(gen.units().begin(), gen.units().end(), [&](const auto& u) { return u.text.find(k.call) != std::string::npos; }))
      kernels.push_back(k.text);
  out.units.insert(out.units.begin(), kernels.begin(), kernels.end());
  out.library_units = kernels.size();
  out.pointwise_units.assign(kernels.size(), false);
  for (auto& u : gen.units()) out.pointwise_units.push_back(u.pointwise);
  return out;
}

std::string CppSource::text() const {
  std::string s = entry;
  for (auto& u : units) s += "\n" + u;
  return s;
}

CudaSource render_cuda(const Graph& g, const NodeInjections& injections) {
  codegen_detail::Codegen gen(g, injections, codegen_detail::kCudaTarget);
  CudaSource out;
  out.source = gen.run();
  out.workspace_bytes = gen.workspace_bytes();
  out.error_messages = gen.error_messages();
  return out;
}

}  // namespace reprokit
