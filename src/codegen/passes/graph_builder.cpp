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

int GraphBuilder::perturb(int v) {
  const Node n = out_.node(v);
  // Wrong but well-typed: the dtype and shape stay, so the rest of the graph still verifies.
  Builder b(out_, names_, n.name + ".bug");
  const int first = out_.size();
  Expr x = b.value(v);
  Expr wrong = n.type.dtype == DType::boolean ? eq(x, false) : !is_floating(n.type.dtype) ? x + 1 : (x * 1.01) + 0.01;
  // Stay in the node's fusion group only if it is pointwise: a group may not continue past a reduction.
  if (auto it = n.attrs.find("group"); it != n.attrs.end() && is_pointwise(n.op))
    for (int id = first; id <= wrong.id(); ++id) out_.node(id).attrs["group"] = it->second;
  return wrong.id();
}

Graph GraphBuilder::finish() {
  for (int o : old_.outputs) out_.outputs.push_back(mapped(o));
  verify(out_);
  return std::move(out_);
}

Graph rebuild_with_hoisted_views(const Graph& g, const std::vector<int>& hoisted, const std::vector<bool>& moved, int injected,
                                 const HoistedOperand& operand) {
  GraphBuilder b(g);
  for (int i = 0; i < g.size(); ++i) {
    if (moved[static_cast<size_t>(i)]) continue;  // emitted in its view's place
    const int p = hoisted[static_cast<size_t>(i)];
    if (p < 0) {
      b.copy(i);
      continue;
    }
    const Node& view = g.node(i);
    const Node& op = g.node(p);
    std::vector<Operand> ops;
    bool named = false;  // a full-shape operand came before
    for (size_t k = 0; k < op.operands.size(); ++k) {
      const bool full = is_full_shape_operand(g, op, op.operands[k]);
      ops.push_back(operand(b, view, op, k, full, full && !named));
      named = named || full;
    }
    const std::string name = moved[static_cast<size_t>(p)] ? op.name : b.fresh_name(op.name);
    const int nid = b.graph().add_node(name, op.op, std::move(ops), op.attrs);
    b.alias(i, i == injected ? b.perturb(nid) : nid);
  }
  return b.finish();
}

}  // namespace reprokit
