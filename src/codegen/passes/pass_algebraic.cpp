// Algebraic simplification: identities that return an operand unchanged. A rewrite applies only
// when the operand already has the node's exact type, so no value or type changes.
#include "graph_builder.h"
#include "passes.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/op_semantics.h"

namespace reprokit {

namespace {

bool literal_is(const Operand& o, double v) { return !o.is_value() && (o.literal.is_int() || o.literal.is_float()) && o.literal.as_float() == v; }

// The old operand index whose value the node equals, or -1.
int identity_operand(const Graph& g, const Node& n) {
  const auto& a = n.operands;
  auto same_type = [&](int k) {
    return a[static_cast<size_t>(k)].is_value() && g.node(a[static_cast<size_t>(k)].value).type.dtype == n.type.dtype &&
           g.node(a[static_cast<size_t>(k)].value).type.shape == n.type.shape;
  };
  if ((n.op == Op::mul && literal_is(a[1], 1)) || (n.op == Op::add && literal_is(a[1], 0)) || (n.op == Op::sub && literal_is(a[1], 0)) ||
      (n.op == Op::div && literal_is(a[1], 1)) || (n.op == Op::pow && literal_is(a[1], 1)))
    return same_type(0) ? 0 : -1;
  if ((n.op == Op::mul && literal_is(a[0], 1)) || (n.op == Op::add && literal_is(a[0], 0))) return same_type(1) ? 1 : -1;
  if (n.op == Op::clone || n.op == Op::contiguous || n.op == Op::to || n.op == Op::reshape || n.op == Op::expand ||
      (n.op == Op::maximum && a[0] == a[1]) || (n.op == Op::minimum && a[0] == a[1]))
    return same_type(0) ? 0 : -1;
  if (n.op == Op::permute) {
    auto d = attr_ints(n, "dims");
    for (size_t i = 0; i < d.size(); ++i)
      if (normalize_dim(d[i], static_cast<int64_t>(d.size())) != static_cast<int64_t>(i)) return -1;
    return same_type(0) ? 0 : -1;
  }
  return -1;
}

}  // namespace

bool run_algebraic_simplification(Graph& g, RewriteBudget& budget) {
  GraphBuilder b(g);
  bool changed = false;
  for (int i = 0; i < g.size(); ++i) {
    const Node& n = g.node(i);
    if (n.is_input()) {
      b.copy(i);
      continue;
    }
    int src = -1;
    int k = identity_operand(g, n);
    if (k >= 0) src = n.operands[static_cast<size_t>(k)].value;
    // neg(neg(x)) -> x
    if (n.op == Op::neg && n.operands[0].is_value() && g.node(n.operands[0].value).op == Op::neg &&
        g.node(n.operands[0].value).operands[0].is_value())
      src = g.node(n.operands[0].value).operands[0].value;
    if (src < 0 || !budget.allow()) {
      b.copy(i);
      continue;
    }
    b.alias(i, budget.inject_now() ? b.perturb(b.mapped(src)) : b.mapped(src));
    changed = true;
  }
  if (changed) g = b.finish();
  return changed;
}

}  // namespace reprokit
