// GraphBuilder: the way passes rewrite a graph. A pass walks the old graph in order and emits a
// new one, mapping old ids to new ones; an injected (wrong) rewrite is one extra node.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "reprokit/ir/builder.h"
#include "reprokit/ir/graph.h"

namespace reprokit {

class GraphBuilder {
 public:
  explicit GraphBuilder(const Graph& old) : old_(old), names_(old), map_(static_cast<size_t>(old.size()), -1) { out_.name = old.name; }

  // Copies old node `id` with its operands mapped; returns the new id (also recorded in the map).
  int copy(int id);
  // Makes uses of old `id` refer to new node `to` instead.
  void alias(int id, int to) { map_[static_cast<size_t>(id)] = to; }
  int mapped(int id) const { return map_[static_cast<size_t>(id)]; }
  Operand map_operand(const Operand& o) const { return o.is_value() ? Operand::of(mapped(o.value)) : o; }
  // The value of new node `v`, made subtly wrong (x * 1.01 + 0.01): the injected bug of a pass.
  int perturb(int v);
  // A name used by no node of the old graph and none emitted yet: prefix, prefix_1, ...
  std::string fresh_name(std::string_view prefix) { return names_.fresh(prefix); }
  Graph finish();  // maps outputs, verifies

  Graph& graph() { return out_; }

 private:
  const Graph& old_;
  Graph out_;
  NameSet names_;  // the old graph's names and every name emitted
  std::vector<int> map_;
};

// Whether operand o of node n is a value of n's own shape (not a broadcast one, not a literal).
inline bool is_full_shape_operand(const Graph& g, const Node& n, const Operand& o) {
  return o.is_value() && g.node(o.value).type.shape == n.type.shape;
}

// A view hoisted above the pointwise op it reads: where hoisted[r] = p, view r becomes p's op on
// the operands `operand(b, r, p, k, full, first_full)` emits for p's k-th operand, named p's name
// where moved[p] (p is dropped from its own place) and a fresh one where p stays for its other
// readers; the view `injected` computes a wrong value. `full`: the operand is a value of p's
// shape; `first_full`: the first such (whose view keeps the view's name). Rebuilds g and returns it.
using HoistedOperand = std::function<Operand(GraphBuilder& b, const Node& view, const Node& op, size_t k, bool full, bool first_full)>;
Graph rebuild_with_hoisted_views(const Graph& g, const std::vector<int>& hoisted, const std::vector<bool>& moved, int injected,
                                 const HoistedOperand& operand);

}  // namespace reprokit
