// Reshape hoisting: reshape(pointwise(x, b)) -> pointwise(reshape(x), b), where the reshape's
// users are pointwise ops of its shape. A linear layer imported from ONNX is a Gemm (matmul, then
// the bias add) and a Reshape back to [batch, tokens, features]; the add, one shape, and the gelu
// or residual add after the reshape, another, were two passes over the tensor (BERT's 512 x 3072
// bias add alone: 0.23 ms of 22). With the reshape first, the add has its users' shape and fuses
// with them; the reshape of the matmul's output is a view, no kernel.
// The op reads its operands at the same flat index before and after: a full-shape operand is
// reshaped with it; a broadcast one (the bias) must vary only along trailing dims the reshape
// keeps, so that it broadcasts the same way against the new shape.
#include "graph_builder.h"
#include "passes.h"
#include "reprokit/ir/graph_utils.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/op_semantics.h"

namespace reprokit {

namespace {

bool is_reshape(Op op) { return op == Op::reshape || op == Op::squeeze || op == Op::unsqueeze; }

// Whether a full-shape operand can be reshaped where it lies: a value computed into its own
// buffer, or an input stored in C order. A view (a permute, a slice) may not be reshapeable
// without a copy, and the copy would cost what the fusion saves.
bool reshapes_in_place(const Graph& g, int id) {
  const Node& n = g.node(id);
  if (n.is_input()) return n.type.effective_strides() == contiguous_strides(n.type.shape);
  return !is_view_op(n.op);
}

// How many trailing dims `in` and `out` share.
size_t shared_suffix(const Shape& in, const Shape& out) {
  size_t c = 0;
  while (c < in.size() && c < out.size() && in[in.size() - 1 - c] == out[out.size() - 1 - c]) ++c;
  return c;
}

// Whether pointwise node p (of shape `in`) can be computed in shape `out` instead: each operand is
// a literal, a full-shape value that reshapes in place, or one that is 1 outside the shared
// trailing dims; and the operands so reshaped broadcast to `out` itself (with no full-shape
// operand, [1, 12] + [3, 1] is [3, 12], not the [1, 3, 12] of a reshape after it).
bool hoistable(const Graph& g, const Node& p, const Shape& out) {
  const Shape& in = p.type.shape;
  const size_t c = shared_suffix(in, out);
  Shape result;
  for (auto& o : p.operands) {
    if (!o.is_value()) continue;
    const Shape& s = g.node(o.value).type.shape;
    if (s == in && !reshapes_in_place(g, o.value)) return false;
    for (size_t d = c; s != in && d < s.size(); ++d)  // d counted from the last dim
      if (s[s.size() - 1 - d] != 1) return false;
    const auto b = broadcast_shapes(result, s == in ? out : s);
    if (!b) return false;
    result = *b;
  }
  return result == out;
}

}  // namespace

bool run_reshape_hoisting(Graph& g, RewriteBudget& budget) {
  const auto users = compute_users(g);
  std::vector<bool> is_output(static_cast<size_t>(g.size()), false);
  for (int o : g.outputs) is_output[static_cast<size_t>(o)] = true;
  // hoisted[r]: the pointwise node that reshape r now computes in its own shape.
  std::vector<int> hoisted(static_cast<size_t>(g.size()), -1);
  std::vector<bool> skipped(static_cast<size_t>(g.size()), false);
  int injected = -1;  // the reshape whose hoisted op computes a wrong value
  bool any = false;
  for (int r = g.num_inputs(); r < g.size(); ++r) {
    const Node& n = g.node(r);
    if (!is_reshape(n.op) || !n.operands[0].is_value()) continue;
    const int p = n.operands[0].value;
    const Node& prod = g.node(p);
    if (prod.is_input() || !is_pointwise(prod.op) || users[static_cast<size_t>(p)].size() != 1 || is_output[static_cast<size_t>(p)]) continue;
    bool feeds_pointwise = false;  // else nothing would fuse, and the graph changes for nothing
    for (int u : users[static_cast<size_t>(r)])
      feeds_pointwise = feeds_pointwise || (is_pointwise(g.node(u).op) && g.node(u).type.shape == n.type.shape);
    if (!feeds_pointwise || prod.type.dtype != n.type.dtype || !hoistable(g, prod, n.type.shape) || !budget.allow()) continue;
    hoisted[static_cast<size_t>(r)] = p;
    skipped[static_cast<size_t>(p)] = true;
    any = true;
    if (budget.inject_now()) injected = r;
  }
  if (!any) return false;
  // A full-shape operand is reshaped (the first under the reshape's name); the others are read as they are.
  g = rebuild_with_hoisted_views(
      g, hoisted, skipped, injected, [](GraphBuilder& b, const Node& r, const Node& prod, size_t k, bool full, bool first_full) {
        if (!full) return b.map_operand(prod.operands[k]);
        const std::string name = first_full ? r.name : b.fresh_name(r.name);
        return Operand::of(b.graph().add_node(name, Op::reshape, {b.map_operand(prod.operands[k])}, {{"shape", AttrValue::ints(r.type.shape)}}));
      });
  return true;
}

}  // namespace reprokit
