// The verifier: every structural invariant of a graph, checked with messages that name the node.
#include "reprokit/ir/verifier.h"

#include <fmt/format.h>

#include <unordered_set>

#include "reprokit/support/errors.h"
#include "reprokit/ir/names.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/shape_check.h"

namespace reprokit {

namespace {

bool attr_matches(const AttrValue& v, AttrKind k) {
  switch (k) {
    case AttrKind::int_: return v.is_int();
    case AttrKind::float_: return v.is_float() || v.is_int();
    case AttrKind::bool_: return v.is_bool();
    case AttrKind::string: return v.is_string();
    case AttrKind::dtype: return v.is_dtype();
    case AttrKind::scalar: return v.is_int() || v.is_float() || v.is_bool();
    case AttrKind::ints:
      if (v.is_int()) return true;
      if (!v.is_list()) return false;
      for (auto& e : v.as_list())
        if (!e.is_int()) return false;
      return true;
  }
  return false;
}

const char* kind_word(AttrKind k) {
  switch (k) {
    case AttrKind::int_: return "an int";
    case AttrKind::float_: return "a number";
    case AttrKind::bool_: return "a bool";
    case AttrKind::string: return "a string";
    case AttrKind::dtype: return "a dtype";
    case AttrKind::scalar: return "a scalar";
    case AttrKind::ints: return "a list of ints";
  }
  return "?";
}

void check_operands(const Graph& g, int id, const OpSchema& s, const std::string& where) {
  const Node& n = g.node(id);
  size_t required = 0, max = 0;
  bool variadic = false;
  for (auto& p : s.params) {
    if (p.kind == ParamKind::variadic_tensor) variadic = true;
    else ++max;
    if (p.kind == ParamKind::tensor || p.kind == ParamKind::tensor_or_scalar || p.kind == ParamKind::variadic_tensor) ++required;
  }
  size_t got = n.operands.size();
  if (got < required || (!variadic && got > max)) {
    std::string expected = variadic          ? fmt::format("at least {}", required)
                           : required == max ? fmt::format("{}", required)
                                             : fmt::format("{} to {}", required, max);
    throw VerifyError(fmt::format("{}: expected {} operand{}, got {}", where, expected, max == 1 && !variadic ? "" : "s", got));
  }
  for (size_t i = 0; i < got; ++i) {
    const Operand& o = n.operands[i];
    ParamKind kind = variadic ? ParamKind::variadic_tensor : s.params[i].kind;
    if (o.is_value()) {
      if (o.value >= id) throw VerifyError(fmt::format("{}: operand {} is used before it is defined", where, i + 1));
      continue;
    }
    if (kind != ParamKind::tensor_or_scalar)
      throw VerifyError(fmt::format("{}: operand {} ({}) must be a tensor, got the literal {}", where, i + 1,
                                    variadic ? s.params[0].name : s.params[i].name, o.literal.str()));
    if (!(o.literal.is_int() || o.literal.is_float() || o.literal.is_bool()))
      throw VerifyError(fmt::format("{}: operand {} must be a scalar literal, got {}", where, i + 1, o.literal.str()));
  }
}

void check_attrs(const Node& n, const OpSchema& s, const std::string& where) {
  for (auto& [k, v] : n.attrs) {
    if (k == "group") {  // fusion group, set by the fusion passes; valid on any op
      if (!v.is_int()) throw VerifyError(fmt::format("{}: attribute 'group' must be an int", where));
      continue;
    }
    const AttrSpec* spec = nullptr;
    for (auto& a : s.attrs)
      if (a.name == k) spec = &a;
    if (!spec) {
      std::string names;
      for (auto& a : s.attrs) names += (names.empty() ? "" : ", ") + a.name;
      throw VerifyError(fmt::format("{}: unknown attribute '{}' (valid: {})", where, k, names.empty() ? "none" : names));
    }
    if (!attr_matches(v, spec->kind))
      throw VerifyError(fmt::format("{}: attribute '{}' must be {}, got {}", where, k, kind_word(spec->kind), v.str()));
  }
  for (auto& a : s.attrs)
    if (!a.default_value && !a.optional && !n.has_attr(a.name)) throw VerifyError(fmt::format("{}: missing required attribute '{}'", where, a.name));
}

}  // namespace

void verify_node(Graph& g, int id) {
  Node& n = g.node(id);
  if (!is_valid_name(n.name)) {
    try {
      check_name(n.name, "value", fmt::format("graph {}", g.name));
    } catch (const UserError& e) { throw VerifyError(e.what()); }
  }
  if (n.is_input()) {
    std::string where = fmt::format("graph {}, input %{}", g.name, n.name);
    if (!n.operands.empty() || !n.attrs.empty()) throw VerifyError(fmt::format("{}: an input has no operands or attributes", where));
    check_shape(n.type.shape, where);
    if (!n.type.strides.empty()) check_strides(n.type.shape, n.type.strides, where);
    if (n.type.requires_grad && !is_floating(n.type.dtype)) throw VerifyError(fmt::format("{}: only floating inputs can require grad", where));
    return;
  }
  std::string where = fmt::format("graph {}, node %{} = {}", g.name, n.name, op_name(n.op));
  const OpSchema& s = op_schema(n.op);
  check_operands(g, id, s, where);
  check_attrs(n, s, where);
  n.type = infer_node_type(g, id);
}

void verify(Graph& g) {
  std::unordered_set<std::string> names;
  bool body_started = false;
  if (!is_valid_name(g.name)) {
    try {
      check_name(g.name, "graph", "graph");
    } catch (const UserError& e) { throw VerifyError(e.what()); }
  }
  if (g.nodes.empty() && g.outputs.empty()) throw VerifyError(fmt::format("graph {}: the graph is empty", g.name));
  for (int id = 0; id < g.size(); ++id) {
    Node& n = g.node(id);
    if (n.name.empty()) throw VerifyError(fmt::format("graph {}: node {} has no name", g.name, id));
    if (!names.insert(n.name).second) throw VerifyError(fmt::format("graph {}, node %{}: duplicate value name %{}", g.name, n.name, n.name));
    if (n.is_input() && body_started) throw VerifyError(fmt::format("graph {}, input %{}: inputs must come before the body", g.name, n.name));
    if (!n.is_input()) body_started = true;
    verify_node(g, id);
  }
  if (g.outputs.empty()) throw VerifyError(fmt::format("graph {}: returns nothing", g.name));
  for (int o : g.outputs)
    if (o < 0 || o >= g.size()) throw VerifyError(fmt::format("graph {}: returns an undefined value (id {})", g.name, o));
}

void verify(Module& m) {
  std::unordered_set<std::string> names;
  for (auto& g : m.graphs) {
    if (!names.insert(g.name).second) throw VerifyError(fmt::format("duplicate graph name '{}'", g.name));
    verify(g);
  }
}

}  // namespace reprokit
