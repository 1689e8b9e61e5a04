// GraphBuilder (see graph_builder.h).
#include "graph_builder.h"

#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/verifier.h"

namespace reprokit {

int GraphBuilder::copy(int id) {
  const Node& n = old_.node(id);
  if (n.is_input()) {
    out_.nodes.push_back(n);
    map_[static_cast<size_t>(id)] = out_.size() - 1;
    return out_.size() - 1;
  }
  std::vector<Operand> ops;
  for (auto& o : n.operands) ops.push_back(map_operand(o));
  int nid = out_.add_node(n.name, n.op, std::move(ops), n.attrs);
  map_[static_cast<size_t>(id)] = nid;
  return nid;
}

int GraphBuilder::emit(const std::string& base, const std::string& op, std::vector<Operand> operands, Attrs attrs) {
  std::string name = out_.fresh_name(base);
  while (old_.find(name) >= 0) name = out_.fresh_name(name + "_");
  return out_.add_node(name, op, std::move(operands), std::move(attrs));
}

int GraphBuilder::perturb(int v) {
  Node n = out_.node(v);
  Attrs group;
  // Stay in the node's fusion group only if it is pointwise: a group may not continue past a reduction.
  if (auto it = n.attrs.find("group"); it != n.attrs.end() && is_pointwise(n.op)) group["group"] = it->second;
  // Wrong but well-typed: the dtype and shape stay, so the rest of the graph still verifies.
  if (n.type.dtype == DType::boolean) return emit(n.name + ".bug", "eq", {Operand::of(v), Operand::scalar(AttrValue(false))}, group);
  if (!is_floating(n.type.dtype)) return emit(n.name + ".bug", "add", {Operand::of(v), Operand::scalar(AttrValue(int64_t{1}))}, group);
  int scaled = emit(n.name + ".bug", "mul", {Operand::of(v), Operand::scalar(AttrValue(1.01))}, group);
  return emit(n.name + ".bug", "add", {Operand::of(scaled), Operand::scalar(AttrValue(0.01))}, group);
}

Graph GraphBuilder::finish() {
  for (int o : old_.outputs) out_.outputs.push_back(mapped(o));
  verify(out_);
  return std::move(out_);
}

}  // namespace reprokit
