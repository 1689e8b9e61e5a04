// Graph, Node and Operand: reprokit's single IR. A graph is a list of nodes in SSA form; a node's
// index is its value id. Graph inputs are nodes of op "input" and always come first, in signature
// order; the rest follow in topological order (an operand always refers to an earlier node).
// Names of graphs and values follow one rule everywhere (names.h).
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "reprokit/ir/attr.h"
#include "reprokit/ir/op.h"
#include "reprokit/ir/tensor_type.h"

namespace reprokit {

// An operand is a reference to an earlier node, or a scalar literal (int, float or bool).
struct Operand {
  int value = -1;     // node id, or -1 for a literal
  AttrValue literal;  // meaningful when value < 0

  bool is_value() const { return value >= 0; }
  static Operand of(int id) {
    Operand o;
    o.value = id;
    return o;
  }
  static Operand scalar(AttrValue v) {
    Operand o;
    o.literal = std::move(v);
    return o;
  }
  bool operator==(const Operand&) const = default;
};

using Attrs = std::map<std::string, AttrValue, std::less<>>;

struct Node {
  std::string name;  // value name, without the leading '%'
  Op op = Op::input;
  std::vector<Operand> operands;
  Attrs attrs;      // only the attributes given explicitly; defaults come from the schema
  TensorType type;  // declared for inputs, inferred for every other node

  bool is_input() const { return op == Op::input; }
  bool has_attr(std::string_view k) const { return attrs.find(k) != attrs.end(); }
};

struct Graph {
  std::string name = "main";
  std::vector<Node> nodes;   // inputs first, then the body in topological order
  std::vector<int> outputs;  // returned node ids, in order (a node may be returned twice)

  int num_inputs() const;
  std::vector<int> input_ids() const;
  int find(std::string_view value_name) const;  // node id, or -1
  const Node& node(int id) const { return nodes.at(static_cast<size_t>(id)); }
  Node& node(int id) { return nodes.at(static_cast<size_t>(id)); }
  int size() const { return static_cast<int>(nodes.size()); }
  int num_ops() const { return size() - num_inputs(); }  // nodes that are not inputs

  // Appends an input after the existing inputs (ids of later nodes shift by one; operands and
  // outputs are renumbered). Returns the new input's id.
  int add_input(std::string name, TensorType type);
  // Appends a body node; its operands must refer to existing nodes. Infers and sets its type.
  int add_node(std::string name, Op op, std::vector<Operand> operands, Attrs attrs = {});
  // A value name not yet used in the graph: prefix, prefix_1, prefix_2, ...
  std::string fresh_name(std::string_view prefix) const;
};

// A parsed file: one or more graphs; the first is the entry.
struct Module {
  std::vector<Graph> graphs;
  const Graph& entry() const;
  const Graph& get(std::string_view name) const;  // throws UserError naming the graph
};

}  // namespace reprokit
