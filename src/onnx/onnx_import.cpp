// ONNX import: the importer's graph and node context, import-time evaluation of constants, the
// checks against ONNX's inferred types, and the assembly of the graph. Input binding is in
// onnx_input_binding.cpp, ONNX's checker in onnx_checker.cpp, reading model files in
// onnx_model_load.cpp, the op handlers in onnx_ops*.cpp.
#include "reprokit/onnx/onnx_import.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>

#include "import_context.h"
#include "onnx_group_norm.h"
#include "proto_util.h"
#include "reprokit/support/errors.h"
#include "reprokit/support/escape_controls.h"
#include "reprokit/ir/names.h"
#include "reprokit/ir/verifier.h"
#include "reprokit/onnx/onnx_tensor.h"
#include "reprokit/runtime/interpreter.h"

namespace reprokit {

namespace onnx_detail {

namespace {

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

bool same_bits(double a, double b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// The one value of a uniform tensor, as a full node's `value`; nullopt when not uniform.
std::optional<AttrValue> uniform_value(const Tensor& t) {
  const int64_t n = t.numel();
  if (t.dtype() == DType::boolean || is_integral(t.dtype())) {
    int64_t v = n ? t.get_int(0) : 0;
    for (int64_t i = 1; i < n; ++i)
      if (t.get_int(i) != v) return std::nullopt;
    if (t.dtype() == DType::boolean) return AttrValue(v != 0);
    return AttrValue(v);
  }
  double v = n ? t.get(0) : 0.0;
  for (int64_t i = 1; i < n; ++i)
    if (!same_bits(t.get(i), v)) return std::nullopt;
  return AttrValue(v);
}

AttrValue literal_of(const Tensor& t) {
  if (t.dtype() == DType::boolean) return AttrValue(t.get_int(0) != 0);
  if (is_integral(t.dtype())) return AttrValue(t.get_int(0));
  return AttrValue(t.get(0));
}

}  // namespace

std::string node_label(const onnx::NodeProto& n, int index) {
  if (n.name().empty()) return fmt::format("node {} ({})", index, printable(n.op_type()));
  return fmt::format("node {} '{}' ({})", index, printable(n.name()), printable(n.op_type()));
}

// ---- Target

int Target::id(const std::string& name) const {
  auto it = ids_.find(name);
  return it == ids_.end() ? -1 : it->second;
}

int Target::add_input(const std::string& name, const TensorType& t) {
  if (g.num_inputs() != g.size()) throw InternalError("an input added after other nodes");
  int pos = g.add_input(name, t);
  ids_[name] = pos;
  return pos;
}

int Target::add_placeholder(const std::string& name, const Tensor& value) {
  int id = add_node(name, Op::full, {},
                    {{"shape", AttrValue::ints(value.shape())},
                     {"value", is_floating(value.dtype())        ? AttrValue(0.0)
                               : value.dtype() == DType::boolean ? AttrValue(false)
                                                                 : AttrValue(int64_t{0})},
                     {"dtype", AttrValue(value.dtype())}});
  placeholder_values[name] = value;
  placeholders.push_back(name);
  return id;
}

int Target::add_node(const std::string& name, Op op, std::vector<Operand> operands, Attrs attrs) {
  int id = g.add_node(name, op, std::move(operands), std::move(attrs));
  ids_[name] = id;
  return id;
}

Graph Target::hoisted(const std::vector<int>& inputs) const {
  std::vector<int> remap(g.nodes.size(), -1);
  Graph out;
  out.name = g.name;
  for (int id : inputs) {
    remap[static_cast<size_t>(id)] = static_cast<int>(out.nodes.size());
    Node n = g.nodes[static_cast<size_t>(id)];
    n.op = Op::input;
    n.attrs.clear();
    out.nodes.push_back(std::move(n));
  }
  for (int id = 0; id < g.size(); ++id) {
    if (remap[static_cast<size_t>(id)] >= 0 || g.node(id).is_input() || is_placeholder(id)) continue;
    Node node = g.nodes[static_cast<size_t>(id)];
    for (auto& o : node.operands)
      if (o.is_value()) {
        o.value = remap[static_cast<size_t>(o.value)];
        if (o.value < 0) throw InternalError("an operand refers to a dropped input");
      }
    remap[static_cast<size_t>(id)] = static_cast<int>(out.nodes.size());
    out.nodes.push_back(std::move(node));
  }
  for (int o : g.outputs) {
    int r = remap[static_cast<size_t>(o)];
    if (r < 0) throw InternalError("an output refers to a dropped input");
    out.outputs.push_back(r);
  }
  try {
    verify(out);
  } catch (const UserError& e) { throw InternalError(fmt::format("the imported graph does not verify: {}", e.what())); }
  return out;
}

void Target::rename(int id, const std::string& name) {
  ids_.erase(g.node(id).name);
  g.node(id).name = name;
  ids_[name] = id;
}

// ---- NodeCtx

NodeCtx::NodeCtx(Importer& imp, Target& t, const onnx::NodeProto& n, int index, bool folding) : imp(imp), t(t), n(n), index(index), folding(folding) {
  out_ids.resize(static_cast<size_t>(n.output_size()));
  out_consts.resize(static_cast<size_t>(n.output_size()));
  out_alias.resize(static_cast<size_t>(n.output_size()));
  std::string first = n.output_size() && !n.output(0).empty() ? imp.foreign.map(n.output(0)) : std::string("v");
  base_ = first.substr(0, 160);
}

void NodeCtx::unsupported(const std::string& what) const { throw UserError(fmt::format("{}: {}: not supported: {}", imp.file, label(), what)); }

void NodeCtx::bad(const std::string& what) const { throw UserError(fmt::format("{}: {}: {}", imp.file, label(), what)); }

const Value& NodeCtx::in(int i) const {
  if (!has(i)) bad(fmt::format("input {} is missing", i + 1));
  return imp.value(n.input(i));
}

const Tensor* NodeCtx::constant(int i) const {
  const Value& v = in(i);
  return v.constant ? &*v.constant : nullptr;
}

Tensor NodeCtx::need_constant(int i, std::string_view what) {
  const Value& v = in(i);
  if (v.constant) return *v.constant;
  const std::string& name = n.input(i);
  if (v.kind == Kind::real_input) {
    auto it = imp.opts.known_inputs.find(name);
    if (it != imp.opts.known_inputs.end()) {
      const Tensor& k = it->second;
      if (k.dtype() != v.type.dtype || k.shape() != v.type.shape)
        throw UserError(fmt::format("{}: the value given for input '{}' is {}{}, the model declares {}", imp.file, printable(name),
                                    dtype_name(k.dtype()), shape_str(k.shape()), v.type.str()));
      imp.frozen.insert(name);
      imp.frozen_values.insert_or_assign(name, k);
      return k;
    }
    if (imp.opts.given_value)
      if (auto given = imp.opts.given_value(name, imp.foreign.map(name), imp.onnx_inputs)) {
        const Tensor& k = given->first;
        if (k.dtype() != v.type.dtype || k.shape() != v.type.shape)
          throw UserError(fmt::format("{}: {}: holds {}{}, the model declares input '{}' {}", imp.file, escape_controls(given->second),
                                      dtype_name(k.dtype()), shape_str(k.shape()), printable(name), v.type.str()));
        imp.frozen.insert(name);
        imp.frozen_values.insert_or_assign(name, k);
        return k;
      }
    unsupported(
        fmt::format("{} (input {}) is the model input '{}': its value is needed at import time; give it as {}.npy in --inputs DIR "
                    "(it becomes part of the imported graph)",
                    what, i + 1, printable(name), imp.foreign.map(name)));
  }
  unsupported(fmt::format("{} (input {} '{}') is computed at run time; reprokit needs it known at import time", what, i + 1, printable(name)));
}

std::vector<int64_t> NodeCtx::need_ints(int i, std::string_view what) {
  Tensor c = need_constant(i, what);
  if (!is_integral(c.dtype()) || c.rank() > 1)
    bad(fmt::format("{} must be a 1-D integer tensor, got {}{}", what, dtype_name(c.dtype()), shape_str(c.shape())));
  return c.to_int64s();
}

int NodeCtx::value(int i) {
  const Value& v = in(i);
  const std::string& name = n.input(i);
  if (!folding) return imp.materialize(name);
  auto it = scratch_names_.find(name);
  if (it != scratch_names_.end()) return t.id(it->second);
  if (!v.constant) throw InternalError("folding a node with an input that is not constant");
  std::string s = t.names().fresh(sanitize_foreign_name(name, 100));
  scratch_names_[name] = s;
  return t.add_placeholder(s, *v.constant);
}

int NodeCtx::const_value(const Tensor& c) {
  std::string name = t.names().fresh(base_ + ".const");
  if (!folding) return imp.add_constant(name, c);
  return t.add_placeholder(name, c);
}

std::vector<Operand> NodeCtx::pointwise(const std::vector<int>& inputs) {
  // A one-element constant becomes a scalar literal when another operand stays a tensor and the
  // constant's rank is at most that tensor's (so broadcasting cannot change the result's shape).
  const size_t k = inputs.size();
  std::vector<bool> lit(k);
  for (size_t j = 0; j < k; ++j) {
    const Tensor* c = constant(inputs[j]);
    lit[j] = c && c->numel() == 1;
  }
  if (std::all_of(lit.begin(), lit.end(), [](bool b) { return b; })) lit[0] = false;
  for (bool changed = true; changed;) {
    changed = false;
    int64_t max_rank = 0;
    for (size_t j = 0; j < k; ++j)
      if (!lit[j]) max_rank = std::max(max_rank, rank(inputs[j]));
    for (size_t j = 0; j < k; ++j)
      if (lit[j] && rank(inputs[j]) > max_rank) lit[j] = false, changed = true;
  }
  std::vector<Operand> out;
  for (size_t j = 0; j < k; ++j) out.push_back(lit[j] ? Operand::scalar(literal_of(*constant(inputs[j]))) : Operand::of(value(inputs[j])));
  return out;
}

int NodeCtx::emit(Op op, std::vector<Operand> operands, Attrs attrs) {
  std::string name = t.names().fresh(fmt::format("{}.{}", base_, op_name(op)));
  int id;
  try {
    id = t.add_node(name, op, std::move(operands), std::move(attrs));
  } catch (const VerifyError& e) { throw UserError(fmt::format("{}: {}: reprokit cannot express it: {}", imp.file, label(), e.what())); }
  created_.insert(name);
  return id;
}

int NodeCtx::cast(int id, DType dtype) {
  if (type_of(id).dtype == dtype) return id;
  return emit1(Op::to, id, {{"dtype", AttrValue(dtype)}});
}

int NodeCtx::reshape(int id, const Shape& shape) {
  if (type_of(id).shape == shape) return id;
  return emit1(Op::reshape, id, {{"shape", AttrValue::ints(shape)}});
}

void NodeCtx::set(int k, int id) {
  if (!wants(k)) return;
  out_ids[static_cast<size_t>(k)] = id;
  if (folding) return;
  const std::string name = t.g.node(id).name;
  if (created_.count(name)) {  // a node of this ONNX node: it takes the ONNX output's name
    t.rename(id, imp.foreign.map(n.output(k)));
    created_.erase(name);
  }
}

void NodeCtx::set_const(int k, Tensor value) {
  if (!wants(k)) return;
  out_consts[static_cast<size_t>(k)] = std::move(value);
}

void NodeCtx::pass(int k, int i) {
  if (const Tensor* c = constant(i)) {
    set_const(k, *c);
    if (wants(k)) {
      const Value& src = in(i);
      out_alias[static_cast<size_t>(k)] = !src.alias_of.empty() ? src.alias_of : src.kind == Kind::initializer ? n.input(i) : std::string();
    }
  } else {
    set(k, value(i));
  }
}

const onnx::AttributeProto* NodeCtx::attr(std::string_view name) const {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t NodeCtx::attr_int(std::string_view name, int64_t def) const {
  const auto* a = attr(name);
  if (!a) return def;
  if (a->type() != onnx::AttributeProto::INT) bad(fmt::format("attribute '{}' must be an int", name));
  return a->i();
}

double NodeCtx::attr_float(std::string_view name, double def) const {
  const auto* a = attr(name);
  if (!a) return def;
  if (a->type() != onnx::AttributeProto::FLOAT) bad(fmt::format("attribute '{}' must be a float", name));
  return a->f();
}

std::string NodeCtx::attr_string(std::string_view name, const std::string& def) const {
  const auto* a = attr(name);
  if (!a) return def;
  if (a->type() != onnx::AttributeProto::STRING) bad(fmt::format("attribute '{}' must be a string", name));
  return a->s();
}

std::optional<std::vector<int64_t>> NodeCtx::attr_ints(std::string_view name) const {
  const auto* a = attr(name);
  if (!a) return std::nullopt;
  if (a->type() != onnx::AttributeProto::INTS) bad(fmt::format("attribute '{}' must be a list of ints", name));
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

void NodeCtx::allow(std::initializer_list<std::string_view> names) const {
  for (const auto& a : n.attribute()) {
    if (!a.ref_attr_name().empty()) unsupported(fmt::format("attribute '{}' refers to a function attribute", printable(a.name())));
    if (std::find(names.begin(), names.end(), a.name()) == names.end())
      unsupported(fmt::format("attribute '{}' (reprokit's mapping of {} handles {})", printable(a.name()), printable(n.op_type()),
                              names.size() ? fmt::format("{}", fmt::join(names, ", ")) : std::string("none")));
  }
}

// ---- Importer

Importer::Importer(onnx::ModelProto& model, std::string file, const ImportOptions& opts) : model(model), file(std::move(file)), opts(opts) {}

Value& Importer::value(const std::string& onnx_name) {
  auto it = values.find(onnx_name);
  if (it == values.end()) throw UserError(fmt::format("{}: value '{}' is used before it is defined", file, printable(onnx_name)));
  return it->second;
}

int Importer::add_constant(const std::string& name, const Tensor& t) {
  if (auto u = uniform_value(t)) {
    return main.add_node(name, Op::full, {}, {{"shape", AttrValue::ints(t.shape())}, {"value", *u}, {"dtype", AttrValue(t.dtype())}});
  }
  return main.add_placeholder(name, t);
}

int Importer::materialize(const std::string& onnx_name) {
  Value& v = value(onnx_name);
  if (!v.rk.empty()) return main.id(v.rk);
  if (!v.constant) throw InternalError("materializing a value with no node and no constant");
  if (!v.alias_of.empty()) {  // the same input as the initializer it is an Identity of
    int id = materialize(v.alias_of);
    v.rk = main.g.node(id).name;
    return id;
  }
  const std::string& name = foreign.map(onnx_name);
  if (v.kind == Kind::initializer) {
    main.add_placeholder(name, *v.constant);
    initializer_inputs.push_back(name);
  } else {
    add_constant(name, *v.constant);
    constant_sources_[name] = onnx_name;
  }
  v.rk = name;
  return main.id(name);
}

namespace {

bool is_external(const onnx::TensorProto& t) { return t.data_location() == onnx::TensorProto::EXTERNAL || t.external_data_size() > 0; }

// Deeper nesting of subgraphs is not looked into (ONNX's checker refuses it itself).
constexpr int kMaxSubgraphDepth = 64;

std::string first_external_tensor(const onnx::GraphProto& g, const std::string& graph_label, int depth);

// Names the first node attribute among `nodes` holding a tensor (or, through a subgraph, a
// tensor) whose data lives in another file, or "" when none does.
std::string first_external_attribute(const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes, const std::string& label, int depth) {
  for (int i = 0; i < nodes.size(); ++i) {
    const auto& n = nodes.Get(i);
    for (const auto& a : n.attribute()) {
      std::string where = fmt::format("{}{}: attribute '{}'", label, node_label(n, i), printable(a.name()));
      bool ext = is_external(a.t()) || is_external(a.sparse_tensor().values()) || is_external(a.sparse_tensor().indices());
      for (const auto& t : a.tensors()) ext = ext || is_external(t);
      for (const auto& st : a.sparse_tensors()) ext = ext || is_external(st.values()) || is_external(st.indices());
      if (ext) return where;
      if (a.has_g())
        if (auto sub = first_external_tensor(a.g(), where + ": subgraph: ", depth + 1); !sub.empty()) return sub;
      for (const auto& sg : a.graphs())
        if (auto sub = first_external_tensor(sg, where + ": subgraph: ", depth + 1); !sub.empty()) return sub;
    }
  }
  return "";
}

// Names the first tensor anywhere in `g` (initializers, node attributes, subgraphs) whose data
// lives in another file, or "" when none does.
std::string first_external_tensor(const onnx::GraphProto& g, const std::string& graph_label, int depth) {
  if (depth > kMaxSubgraphDepth) return "";  // nothing here opens a file
  for (const auto& t : g.initializer())
    if (is_external(t)) return fmt::format("{}initializer '{}'", graph_label, printable(t.name()));
  for (const auto& st : g.sparse_initializer())
    if (is_external(st.values()) || is_external(st.indices()))
      return fmt::format("{}sparse initializer '{}'", graph_label, printable(st.values().name()));
  return first_external_attribute(g.node(), graph_label, depth);
}

}  // namespace

// External data is refused before ONNX's checker runs: the checker stat()s the named files, which
// would tell whoever wrote the model whether a path exists on this machine.
void Importer::refuse_external_data() {
  std::string where = first_external_tensor(model.graph(), "", 0);
  for (int f = 0; where.empty() && f < model.functions_size(); ++f)
    where = first_external_attribute(model.functions(f).node(), fmt::format("function '{}': ", printable(model.functions(f).name())), 0);
  if (!where.empty()) throw UserError(fmt::format("{}: {}: tensors stored in external data files are not supported", file, where));
}

void Importer::check_against_inferred(const onnx::NodeProto& n, int index, int k, const TensorType& t) {
  auto it = inferred.find(n.output(k));
  if (it == inferred.end() || !it->second.has_tensor_type()) return;
  const auto& tt = it->second.tensor_type();
  const std::string where = fmt::format("{}: {}: output '{}'", file, node_label(n, index), printable(n.output(k)));
  if (tt.elem_type() != 0) {
    auto dt = dtype_from_onnx(tt.elem_type());
    if (!dt) throw UserError(fmt::format("{}: not supported: element type {}", where, onnx_elem_type_name(tt.elem_type())));
    if (*dt != t.dtype)
      throw UserError(fmt::format("{}: reprokit's mapping gives {}, ONNX infers {} (not imported rather than imported wrong)", where,
                                  dtype_name(t.dtype), dtype_name(*dt)));
  }
  if (!tt.has_shape()) return;
  Shape s;
  for (const auto& d : tt.shape().dim()) {
    if (!d.has_dim_value()) return;
    s.push_back(d.dim_value());
  }
  if (s != t.shape)
    throw UserError(fmt::format("{}: reprokit's mapping gives shape {}, ONNX infers {} (not imported rather than imported wrong)", where,
                                shape_str(t.shape), shape_str(s)));
}

void Importer::import_node(const onnx::NodeProto& n, int index) {
  Handler h = handlers().find(n.op_type())->second;
  bool any_input = false, all_const = true;
  for (const auto& in : n.input()) {
    if (in.empty()) continue;
    any_input = true;
    if (!value(in).constant) all_const = false;
  }
  // A message from below the handler (a shape check, an element limit) gets the file and node.
  auto call_handler = [&](NodeCtx& ctx) {
    try {
      h(ctx);
    } catch (const UserError& e) {
      std::string_view msg = e.what();
      if (msg.substr(0, file.size() + 2) == file + ": ") throw;
      throw UserError(fmt::format("{}: {}: {}", file, node_label(n, index), msg));
    }
  };
  auto record = [&](NodeCtx& ctx, const std::vector<Tensor>* folded) {
    size_t next_folded = 0;
    for (int k = 0; k < n.output_size(); ++k) {
      const std::string& name = n.output(k);
      if (name.empty()) continue;
      Value v;
      const auto& c = ctx.out_consts[static_cast<size_t>(k)];
      const auto& id = ctx.out_ids[static_cast<size_t>(k)];
      if (c) {
        v.kind = Kind::constant;
        v.constant = *c;
        v.alias_of = ctx.out_alias[static_cast<size_t>(k)];
      } else if (id && folded) {
        v.kind = Kind::constant;
        v.constant = (*folded)[next_folded++];
      } else if (id) {
        v.kind = Kind::computed;
        v.type = main.g.node(*id).type;
        v.rk = main.g.node(*id).name;
      } else {
        ctx.unsupported(fmt::format("output {} ('{}')", k + 1, printable(name)));
      }
      if (v.constant) v.type = TensorType{v.constant->dtype(), v.constant->shape(), {}, Device::cpu, false};
      check_against_inferred(n, index, k, v.type);
      if (values.count(name)) throw UserError(fmt::format("{}: {}: value '{}' is defined twice", file, node_label(n, index), printable(name)));
      values[name] = std::move(v);
    }
  };
  // Control flow imports its body's nodes into the main graph itself (they fold on their own).
  const bool control_flow = control_handlers().count(n.op_type()) > 0;
  if (any_input && all_const && !control_flow) {
    NameSet scratch_names;
    Target scratch(scratch_names);
    NodeCtx ctx(*this, scratch, n, index, true);
    call_handler(ctx);
    int64_t total = 0;
    bool computed = false;
    for (auto& id : ctx.out_ids)
      if (id) computed = true;
    for (const auto& node : scratch.g.nodes) total = std::min(total + node.type.numel(), kFoldLimit + 1);
    if (!computed || total <= kFoldLimit) {
      std::vector<Tensor> folded;
      if (computed) {
        for (size_t k = 0; k < ctx.out_ids.size(); ++k)
          if (ctx.out_ids[k] && !ctx.out_consts[k]) scratch.g.outputs.push_back(*ctx.out_ids[k]);
        std::vector<int> order;
        std::vector<Tensor> inputs;
        for (const auto& name : scratch.placeholders) {
          order.push_back(scratch.id(name));
          inputs.push_back(scratch.placeholder_values.at(name));
        }
        try {
          folded = interpret(scratch.hoisted(order), inputs);
        } catch (const UserError& e) {
          throw UserError(fmt::format("{}: {}: evaluating it at import time failed: {}", file, node_label(n, index), e.what()));
        }
      }
      record(ctx, &folded);
      return;
    }
  }
  NodeCtx ctx(*this, main, n, index, false);
  call_handler(ctx);
  record(ctx, nullptr);
}

// The body nodes node `node_index` added (a Loop's or If's body included): not the constants and
// initializers it materialized on the way, which stand for values of the model, not for its work.
void Importer::note_origins(int node_index, size_t first_new_node) {
  for (size_t id = first_new_node; id < main.g.nodes.size(); ++id) {
    const std::string& name = main.g.nodes[id].name;
    if (main.g.nodes[id].is_input() || main.placeholder_values.count(name) || constant_sources_.count(name)) continue;
    node_of_.emplace(name, node_index);
  }
}

ImportedModel Importer::finish() {
  const auto& g = model.graph();
  std::vector<std::string> output_sources;
  std::map<std::string, int> renamed;  // ONNX output name -> the clone that carries it (an output may be listed twice)
  for (const auto& out : g.output()) {
    const std::string& name = out.name();
    int id = materialize(name);
    const std::string& mapped = foreign.map(name);
    if (auto it = renamed.find(name); it != renamed.end()) {
      id = it->second;
    } else if (main.g.node(id).name != mapped) {
      if (main.id(mapped) >= 0) throw InternalError("output name taken");
      id = main.add_node(mapped, Op::clone, {Operand::of(id)}, {});
      renamed.emplace(name, id);
    }
    main.g.outputs.push_back(id);
    output_sources.push_back(name);
  }
  if (main.g.outputs.empty()) throw UserError(fmt::format("{}: the model has no outputs", file));

  // Inputs: the real ones (minus those only used as import-time constants), the initializers, the
  // other constants that are not uniform; then the body in its order.
  std::vector<bool> used(main.g.nodes.size());
  for (const auto& node : main.g.nodes)
    for (const auto& o : node.operands)
      if (o.is_value()) used[static_cast<size_t>(o.value)] = true;
  for (int o : main.g.outputs) used[static_cast<size_t>(o)] = true;
  std::vector<int> order;
  std::map<std::string, std::string> source_of;  // rk input name -> ONNX name
  for (const auto& name : real_inputs_) {
    int id = main.id(values.at(name).rk);
    source_of.emplace(values.at(name).rk, name);
    if (frozen.count(name) && !used[static_cast<size_t>(id)]) continue;
    order.push_back(id);
  }
  for (const auto& name : initializers_)
    if (!values.at(name).rk.empty()) source_of.emplace(values.at(name).rk, name);
  for (const auto& [rk, onnx_name] : constant_sources_) source_of.emplace(rk, onnx_name);
  for (const auto& name : initializers_)  // in the model's order
    if (!values.at(name).rk.empty()) order.push_back(main.id(values.at(name).rk));
  for (const auto& rk : main.placeholders)
    if (std::find(initializer_inputs.begin(), initializer_inputs.end(), rk) == initializer_inputs.end()) order.push_back(main.id(rk));
  main.g.name = g.name().empty() ? std::string("main") : sanitize_foreign_name(g.name());
  Graph out = opts.keep_original_nodes ? main.hoisted(order) : fold_exported_group_norm(main.hoisted(order), main.placeholder_values);
  // Weights are what training differentiates (as PyTorch's parameters require grad): floating
  // initializers, except BatchNormalization's running statistics (buffers in PyTorch).
  const std::set<std::string> weights(initializers_.begin(), initializers_.end());
  for (int i = 0; i < out.num_inputs(); ++i) {
    auto s = source_of.find(out.node(i).name);
    TensorType& t = out.nodes[static_cast<size_t>(i)].type;
    if (s != source_of.end() && weights.count(s->second) && !statistics_.count(s->second) && is_floating(t.dtype)) t.requires_grad = true;
  }
  ImportedModel result;
  for (int i = 0; i < out.num_inputs(); ++i) {
    const std::string& rk = out.node(i).name;
    auto s = source_of.find(rk);
    result.input_sources.push_back(s != source_of.end() ? s->second : rk);
    auto sv = main.placeholder_values.find(rk);
    if (sv != main.placeholder_values.end()) result.values[rk] = sv->second;
  }
  if (opts.keep_original_nodes) {
    result.origins.node_of = node_of_;
    for (const auto& [name, v] : values) {
      if (!v.rk.empty()) result.origins.value_node.emplace(name, v.rk);
      if (v.constant) result.origins.constants.emplace(name, *v.constant);
    }
    for (const auto& [name, t] : frozen_values) result.origins.constants.emplace(name, t);  // specialised into the graph
  }
  result.graph = std::move(out);
  result.output_sources = std::move(output_sources);
  result.opset = opset;
  return result;
}

ImportedModel Importer::run() {
  const auto& g = model.graph();
  // Every op must be one the importer maps; name the first that is not (and count the rest).
  {
    std::vector<std::string> missing;
    int first = -1;
    // Subgraphs (Loop and If bodies) too: a node is named for an op anywhere below it.
    std::function<bool(const onnx::NodeProto&, int)> check = [&](const onnx::NodeProto& n, int depth) {
      bool ok = (n.domain().empty() || n.domain() == "ai.onnx") && handlers().count(n.op_type());
      if (!ok) {
        std::string what = n.domain().empty() || n.domain() == "ai.onnx" ? n.op_type() : n.domain() + "." + n.op_type();
        if (std::find(missing.begin(), missing.end(), printable(what)) == missing.end()) missing.push_back(printable(what));
      }
      if (depth < kMaxSubgraphDepth)
        for (const auto& a : n.attribute()) {
          if (a.has_g())
            for (const auto& sub : a.g().node()) ok &= check(sub, depth + 1);
          for (const auto& sg : a.graphs())
            for (const auto& sub : sg.node()) ok &= check(sub, depth + 1);
        }
      return ok;
    };
    for (int i = 0; i < g.node_size(); ++i)
      if (!check(g.node(i), 0) && first < 0) first = i;
    if (first >= 0)
      throw UserError(fmt::format("{}: {}: not supported: op {}{}", file, node_label(g.node(first), first), missing[0],
                                  missing.size() > 1
                                      ? fmt::format(" (also unsupported in this model: {})", fmt::join(missing.begin() + 1, missing.end(), ", "))
                                      : std::string()));
  }
  for (const auto& op : model.opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx") opset = op.version();
  if (opset == 0) throw UserError(fmt::format("{}: the model imports no ai.onnx opset", file));
  if (opset > 17) throw UserError(fmt::format("{}: not supported: opset {} (reprokit imports ai.onnx opsets up to 17)", file, opset));
  for (const auto& n : g.node())
    if (n.op_type() == "BatchNormalization")
      for (int k = 3; k < std::min(n.input_size(), 5); ++k) statistics_.insert(n.input(k));
  refuse_external_data();
  bind_inputs();
  inferred = check_and_infer_in_child(model, file);
  for (int i = 0; i < g.node_size(); ++i)
    for (const auto& out : g.node(i).output())
      if (!out.empty()) foreign.map(out);
  for (int i = 0; i < g.node_size(); ++i) {
    const size_t first_new = main.g.nodes.size();
    import_node(g.node(i), i);
    if (opts.keep_original_nodes) note_origins(i, first_new);
  }
  return finish();
}

}  // namespace onnx_detail

const std::vector<std::string>& onnx_supported_ops() {
  static const std::vector<std::string> ops = [] {
    std::vector<std::string> v;
    for (const auto& [name, h] : onnx_detail::handlers()) v.push_back(name);
    return v;
  }();
  return ops;
}

bool onnx_op_supported(std::string_view op_type) { return onnx_detail::handlers().count(op_type) > 0; }

}  // namespace reprokit
