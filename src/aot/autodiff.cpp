// Reverse-mode autodiff driver: decomposes composite ops, copies the forward graph, adds one
// tangent per output, walks the nodes on the gradient path in reverse order applying the backward
// rules (backward_rules.cpp), and owns what every rule shares: summing gradients back to operand
// shapes (broadcasting), casting them to operand dtypes and accumulating gradients of values with
// several users.
#include "reprokit/aot/autodiff.h"

#include <fmt/format.h>

#include <set>

#include "backward_rules.h"
#include "reprokit/aot/decompose.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/ir/verifier.h"

namespace reprokit {

bool has_backward_rule(Op op) { return op != Op::input && op_schema(op).differentiable() && !op_schema(op).composite(); }

JointGraph build_joint_graph(const Graph& original, const AutodiffOptions& opts) {
  // Composite ops have no rule of their own: their decompositions are differentiated.
  const Graph fwd = decompose(original);
  const int n_in = fwd.num_inputs();
  // Names are unique against the forward graph too, so tangents never shadow a forward value.
  NameSet names(fwd);

  JointGraph jg;
  Graph& g = jg.graph;
  g.name = fwd.name + "_joint";
  for (int i = 0; i < n_in; ++i) {
    const Node& in = fwd.node(i);
    if (in.type.requires_grad) {
      if (!is_floating(in.type.dtype))
        throw UserError(fmt::format("graph {}: input %{} is marked grad but is {}: only floating inputs get gradients", fwd.name, in.name,
                                    dtype_name(in.type.dtype)));
      jg.grad_inputs.push_back(i);
    }
    g.nodes.push_back(in);
  }
  // A backward graph that returns nothing is not a valid graph; say so here, where it is clear.
  if (jg.grad_inputs.empty()) throw UserError(fmt::format("graph {}: no input is marked grad, so there is nothing to differentiate", fwd.name));
  // Tangents: contiguous tensors of each output's dtype and shape, after the forward inputs.
  std::vector<int> tangents;
  for (int o : fwd.outputs) {
    Node t;
    t.name = names.fresh("tangent_" + fwd.node(o).name);
    t.op = Op::input;
    t.type.dtype = fwd.node(o).type.dtype;
    t.type.shape = fwd.node(o).type.shape;
    t.type.device = fwd.node(o).type.device;
    g.nodes.push_back(t);
    tangents.push_back(g.size() - 1);
  }
  // Forward body: node i of fwd becomes node map[i] of the joint graph.
  std::vector<int> map(static_cast<size_t>(fwd.size()));
  for (int i = 0; i < n_in; ++i) map[static_cast<size_t>(i)] = i;
  for (int i = n_in; i < fwd.size(); ++i) {
    const Node& n = fwd.node(i);
    std::vector<Operand> ops;
    for (auto& o : n.operands) ops.push_back(o.is_value() ? Operand::of(map[static_cast<size_t>(o.value)]) : o);
    map[static_cast<size_t>(i)] = g.add_node(n.name, n.op, ops, n.attrs);
  }
  for (int o : fwd.outputs) g.outputs.push_back(map[static_cast<size_t>(o)]);
  jg.num_forward_outputs = static_cast<int>(fwd.outputs.size());

  // active: depends on a grad input through differentiable ops and is floating.
  std::vector<bool> active(static_cast<size_t>(fwd.size()), false);
  for (int i : jg.grad_inputs) active[static_cast<size_t>(i)] = true;
  for (int i = n_in; i < fwd.size(); ++i) {
    const Node& n = fwd.node(i);
    if (!is_floating(n.type.dtype) || !op_schema(n.op).differentiable()) continue;
    for (auto& o : n.operands)
      if (o.is_value() && active[static_cast<size_t>(o.value)]) active[static_cast<size_t>(i)] = true;
  }
  // useful: some floating output depends on it (only such nodes need a rule).
  std::vector<bool> useful(static_cast<size_t>(fwd.size()), false);
  for (int o : fwd.outputs) useful[static_cast<size_t>(o)] = active[static_cast<size_t>(o)];
  for (int i = fwd.size() - 1; i >= n_in; --i) {
    if (!useful[static_cast<size_t>(i)]) continue;
    for (auto& o : fwd.node(i).operands)
      if (o.is_value() && active[static_cast<size_t>(o.value)]) useful[static_cast<size_t>(o.value)] = true;
  }
  auto has_rule = [&](const Node& n) {
    for (Op w : opts.without_rules)
      if (w == n.op) return false;
    return has_backward_rule(n.op);
  };
  for (int i = n_in; i < fwd.size(); ++i)
    if (useful[static_cast<size_t>(i)] && !has_rule(fwd.node(i)))
      throw UserError(fmt::format("graph {}, node {}: op '{}' has no backward rule, but a gradient flows through it", fwd.name, print_node(fwd, i),
                                  op_name(fwd.node(i).op)));

  const int first_backward = g.size();  // nodes from here on are backward nodes
  // grad[i]: joint-graph id of dL/d(fwd node i), or -1.
  std::vector<int> grad(static_cast<size_t>(fwd.size()), -1);
  auto accumulate = [&](int fwd_id, int gid, const std::string& base) {
    int& slot = grad[static_cast<size_t>(fwd_id)];
    if (slot < 0) slot = gid;
    else slot = g.add_node(names.fresh("d_" + base + ".acc"), Op::add, {Operand::of(slot), Operand::of(gid)});
  };
  for (size_t k = 0; k < fwd.outputs.size(); ++k)
    if (active[static_cast<size_t>(fwd.outputs[k])]) accumulate(fwd.outputs[k], tangents[k], fwd.node(fwd.outputs[k]).name);

  for (int i = fwd.size() - 1; i >= n_in; --i) {
    if (!useful[static_cast<size_t>(i)] || grad[static_cast<size_t>(i)] < 0) continue;
    const Node n = fwd.node(i);  // a copy: adding nodes to g must not invalidate it
    Builder b(g, names, "d_" + n.name);
    std::vector<Arg> args;
    std::vector<bool> need;
    for (auto& o : n.operands) {
      args.push_back(b.arg(o.is_value() ? Operand::of(map[static_cast<size_t>(o.value)]) : o));
      need.push_back(o.is_value() && active[static_cast<size_t>(o.value)]);
    }
    aot_detail::Grads grads = aot_detail::backward(b, n, args, b.value(map[static_cast<size_t>(i)]), b.value(grad[static_cast<size_t>(i)]), need);
    for (size_t k = 0; k < n.operands.size(); ++k) {
      if (!need[k]) continue;
      if (k >= grads.size() || grads[k].id() < 0)
        throw InternalError(fmt::format("backward rule of {} gave no gradient for operand {}", print_node(fwd, i), k + 1));
      const TensorType& want = fwd.node(n.operands[k].value).type;
      Expr gk = cast(aot_detail::sum_to(grads[k], want.shape), want.dtype);
      accumulate(n.operands[k].value, gk.id(), fwd.node(n.operands[k].value).name);
    }
  }

  std::set<int> renamed;
  for (int i : jg.grad_inputs) {
    int gi = grad[static_cast<size_t>(i)];
    const TensorType& t = fwd.node(i).type;
    if (gi < 0) {
      // No output depends on this input: its gradient is zero (PyTorch would give None).
      Builder b(g, names, "grad_" + fwd.node(i).name);
      gi = aot_detail::zeros(b.value(i), t.shape, t.dtype).id();
    }
    // Readable gradient names, unless the node is a tangent, a forward value or already named.
    std::string want = "grad_" + fwd.node(i).name;
    if (gi >= first_backward && !renamed.count(gi) && !names.contains(want)) {
      g.node(gi).name = want;
      names.reserve(want);
      renamed.insert(gi);
    }
    g.outputs.push_back(gi);
  }
  verify(g);
  return jg;
}

}  // namespace reprokit
