// The JSON form of graphs: explicit and lossless (every operand, literal kind and attribute kind
// is tagged), so JSON -> graph -> JSON is the identity.
#include "reprokit/ir/json_format.h"

#include <fmt/format.h>

#include <cmath>
#include <unordered_map>

#include "reprokit/support/errors.h"
#include "reprokit/ir/names.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/verifier.h"

namespace reprokit {

using nlohmann::json;

namespace {

json value_to_json(const AttrValue& v) {
  if (v.is_int()) return {{"int", v.as_int()}};
  if (v.is_float()) {
    double d = v.as_float();
    if (std::isnan(d)) return {{"float", "nan"}};
    if (std::isinf(d)) return {{"float", d > 0 ? "inf" : "-inf"}};
    return {{"float", d}};
  }
  if (v.is_bool()) return {{"bool", v.as_bool()}};
  if (v.is_string()) return {{"string", v.as_string()}};
  if (v.is_dtype()) return {{"dtype", std::string(dtype_name(v.as_dtype()))}};
  json l = json::array();
  for (auto& e : v.as_list()) l.push_back(value_to_json(e));
  return {{"list", l}};
}

[[noreturn]] void bad(const std::string& what) { throw UserError("malformed graph JSON: " + what); }

AttrValue value_from_json(const json& j, int depth = 0) {
  if (depth > 16) bad("lists nest deeper than 16 levels");
  if (!j.is_object() || j.size() != 1) bad("a value must be an object with one key (int, float, bool, string, dtype, list)");
  // The one key and its value (items() is a temporary: nothing may refer into it).
  const std::string k = j.begin().key();
  const json& v = j.begin().value();
  if (k == "int" && v.is_number_integer() && !(v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)))
    return AttrValue(v.get<int64_t>());
  if (k == "float") {
    if (v.is_number()) return AttrValue(v.get<double>());
    if (v == "nan") return AttrValue(std::nan(""));
    if (v == "inf") return AttrValue(HUGE_VAL);
    if (v == "-inf") return AttrValue(-HUGE_VAL);
  }
  if (k == "bool" && v.is_boolean()) return AttrValue(v.get<bool>());
  if (k == "string" && v.is_string()) return AttrValue(v.get<std::string>());
  if (k == "dtype" && v.is_string()) {
    if (auto d = parse_dtype(v.get<std::string>())) return AttrValue(*d);
    bad(fmt::format("unknown dtype {}", v.dump()));
  }
  if (k == "list" && v.is_array()) {
    AttrValue::List l;
    for (auto& e : v) l.push_back(value_from_json(e, depth + 1));
    return AttrValue(std::move(l));
  }
  bad(fmt::format("bad value {}", printable(j.dump())));
}

template <class T> T field(const json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) bad(fmt::format("{} has no '{}'", where, key));
  try {
    return j.at(key).get<T>();
  } catch (const json::exception&) { bad(fmt::format("{}: '{}' has the wrong type", where, key)); }
}

// A list of integers that fit int64 (JSON numbers may be floats or exceed 64 bits).
Shape int_list(const json& j, const char* key, const std::string& where) {
  json v = field<json>(j, key, where);
  if (!v.is_array()) bad(fmt::format("{}: '{}' must be a list of integers", where, key));
  Shape out;
  for (auto& e : v) {
    if (e.is_number_unsigned() && e.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      bad(fmt::format("{}: '{}' holds {}, which does not fit 64 bits", where, key, e.dump()));
    if (!e.is_number_integer()) bad(fmt::format("{}: '{}' must be a list of integers, got {}", where, key, printable(e.dump())));
    out.push_back(e.get<int64_t>());
  }
  return out;
}

}  // namespace

json graph_to_json(const Graph& g) {
  json inputs = json::array(), nodes = json::array(), outputs = json::array();
  for (int i = 0; i < g.size(); ++i) {
    const Node& n = g.node(i);
    if (n.is_input()) {
      json in = {{"name", n.name}, {"dtype", std::string(dtype_name(n.type.dtype))}, {"shape", n.type.shape}};
      if (!n.type.strides.empty()) in["strides"] = n.type.strides;
      if (n.type.device == Device::cuda) in["device"] = "cuda";
      if (n.type.requires_grad) in["grad"] = true;
      inputs.push_back(in);
      continue;
    }
    json ops = json::array();
    for (auto& o : n.operands) ops.push_back(o.is_value() ? json{{"value", g.node(o.value).name}} : value_to_json(o.literal));
    json attrs = json::object();
    for (auto& [k, v] : n.attrs) attrs[k] = value_to_json(v);
    nodes.push_back({{"name", n.name}, {"op", std::string(op_name(n.op))}, {"operands", ops}, {"attrs", attrs}});
  }
  for (int o : g.outputs) outputs.push_back(g.node(o).name);
  return {{"name", g.name}, {"inputs", inputs}, {"nodes", nodes}, {"outputs", outputs}};
}

Graph graph_from_json(const json& j) {
  if (!j.is_object()) bad("a graph must be a JSON object");
  Graph g;
  g.name = field<std::string>(j, "name", "the graph");
  check_name(g.name, "graph", "graph JSON");
  std::unordered_map<std::string, int> ids;
  auto lookup = [&](const std::string& name, const std::string& where) {
    auto it = ids.find(name);
    if (it == ids.end()) bad(fmt::format("{} refers to undefined value %{}", where, printable(name)));
    return it->second;
  };
  auto define = [&](const std::string& name) {
    check_name(name, "value", "graph JSON");
    if (!ids.emplace(name, g.size()).second) bad(fmt::format("duplicate value name %{}", name));
  };
  for (auto& in : field<json>(j, "inputs", "the graph")) {
    Node n;
    n.op = Op::input;
    n.name = field<std::string>(in, "name", "an input");
    check_name(n.name, "value", "graph JSON");
    std::string where = "input %" + n.name;
    auto dt = parse_dtype(field<std::string>(in, "dtype", where));
    if (!dt) bad(where + " has an unknown dtype");
    n.type.dtype = *dt;
    n.type.shape = int_list(in, "shape", where);
    if (in.contains("strides")) n.type.strides = int_list(in, "strides", where);
    if (in.contains("device")) {
      std::string dev = field<std::string>(in, "device", where);
      if (dev != "cuda" && dev != "cpu") bad(fmt::format("{} has an unknown device '{}' (expected cpu or cuda)", where, printable(dev)));
      n.type.device = dev == "cuda" ? Device::cuda : Device::cpu;
    }
    if (in.contains("grad")) n.type.requires_grad = field<bool>(in, "grad", where);
    define(n.name);
    g.nodes.push_back(std::move(n));
  }
  for (auto& jn : field<json>(j, "nodes", "the graph")) {
    Node n;
    n.name = field<std::string>(jn, "name", "a node");
    check_name(n.name, "value", "graph JSON");
    std::string where = "node %" + n.name;
    std::string op = field<std::string>(jn, "op", where);
    const OpSchema* schema = find_op(op);
    if (!schema) bad(fmt::format("{} has an unknown op '{}'", where, printable(op)));
    n.op = schema->op;
    for (auto& o : field<json>(jn, "operands", where)) {
      if (o.is_object() && o.contains("value")) n.operands.push_back(Operand::of(lookup(field<std::string>(o, "value", where), where)));
      else n.operands.push_back(Operand::scalar(value_from_json(o)));
    }
    if (jn.contains("attrs")) {
      json attrs = field<json>(jn, "attrs", where);  // a named copy: items() must not outlive it
      for (auto& [k, v] : attrs.items()) n.attrs[k] = value_from_json(v);
    }
    define(n.name);
    g.nodes.push_back(std::move(n));
  }
  for (auto& o : field<json>(j, "outputs", "the graph")) {
    if (!o.is_string()) bad("outputs must be value names");
    g.outputs.push_back(lookup(o.get<std::string>(), "the output list"));
  }
  verify(g);
  return g;
}

Module module_from_json(const json& j) {
  Module m;
  if (j.is_object() && j.contains("graphs")) {
    for (auto& g : j.at("graphs")) m.graphs.push_back(graph_from_json(g));
  } else {
    m.graphs.push_back(graph_from_json(j));
  }
  if (m.graphs.empty()) bad("no graph");
  verify(m);
  return m;
}

}  // namespace reprokit
