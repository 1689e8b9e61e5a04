// Printer of the .rk text format. Attributes print by name in schema order (then "group"), so
// print(parse(x)) is a fixed point whatever spelling x used.
#include <fmt/format.h>

#include <algorithm>

#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/text_format.h"

namespace reprokit {

std::string print_node(const Graph& g, int id) {
  const Node& n = g.node(id);
  if (n.is_input()) return fmt::format("%{}: {}", n.name, n.type.str());
  std::string s = fmt::format("%{} = {}(", n.name, op_name(n.op));
  bool first = true;
  auto sep = [&] {
    if (!first) s += ", ";
    first = false;
  };
  for (auto& o : n.operands) {
    sep();
    s += o.is_value() ? "%" + g.node(o.value).name : o.literal.str();
  }
  std::vector<std::string> printed;
  if (!n.is_input()) {
    const OpSchema* schema = &op_schema(n.op);
    for (auto& a : schema->attrs) {
      auto it = n.attrs.find(a.name);
      if (it == n.attrs.end()) continue;
      sep();
      s += a.name + "=" + it->second.str();
      printed.push_back(a.name);
    }
  }
  for (auto& [k, v] : n.attrs) {  // anything not in the schema ("group"), in name order
    if (std::find(printed.begin(), printed.end(), k) != printed.end()) continue;
    sep();
    s += k + "=" + v.str();
  }
  return s + ")";
}

std::string print_graph(const Graph& g) {
  std::string s = fmt::format("graph {}(", g.name);
  int ni = g.num_inputs();
  for (int i = 0; i < ni; ++i) s += (i ? ", " : "") + print_node(g, i);
  s += ") {\n";
  for (int i = ni; i < g.size(); ++i) s += "  " + print_node(g, i) + "\n";
  s += "  return (";
  for (size_t i = 0; i < g.outputs.size(); ++i) s += (i ? ", %" : "%") + g.node(g.outputs[i]).name;
  s += ")\n}\n";
  return s;
}

std::string print_module(const Module& m) {
  std::string s;
  for (size_t i = 0; i < m.graphs.size(); ++i) s += (i ? "\n" : "") + print_graph(m.graphs[i]);
  return s;
}

}  // namespace reprokit
