// Partitioner: the forward graph computes exactly what the forward outputs need; everything else
// the gradients need (values that depend on a tangent, and forward-only values no forward output
// needs, like cos(x) for sin's backward or layer_norm's recomputed statistics) runs in the
// backward graph. The saved values are the forward values a backward node reads directly, so
// nothing crosses the boundary that the backward does not read, and the forward does no work
// for the backward's sake. Constants (like the iotas of embedding's backward) are never saved.
#include "reprokit/aot/partition.h"

#include <fmt/format.h>

#include "reprokit/support/errors.h"
#include "reprokit/ir/graph_utils.h"
#include "reprokit/ir/verifier.h"

namespace reprokit {

namespace {

// Builds a graph whose inputs are `inputs` (joint ids, in order), whose body is the joint nodes
// with `body[i]` set (in joint order) and which returns `outputs` (joint ids).
Graph build_part(const Graph& j, std::string name, const std::vector<int>& inputs, const std::vector<bool>& body, const std::vector<int>& outputs,
                 bool plain_inputs) {
  Graph g;
  g.name = std::move(name);
  std::vector<int> map(static_cast<size_t>(j.size()), -1);
  for (int id : inputs) {
    Node in = j.node(id);
    in.op = Op::input;
    in.operands.clear();
    in.attrs.clear();
    if (plain_inputs) {  // saved values and tangents arrive as fresh contiguous tensors
      in.type.strides.clear();
      in.type.requires_grad = false;
    }
    g.nodes.push_back(in);
    map[static_cast<size_t>(id)] = g.size() - 1;
  }
  for (int i = 0; i < j.size(); ++i) {
    if (!body[static_cast<size_t>(i)] || map[static_cast<size_t>(i)] >= 0) continue;
    const Node& n = j.node(i);
    std::vector<Operand> ops;
    for (auto& o : n.operands) {
      if (o.is_value() && map[static_cast<size_t>(o.value)] < 0)
        throw InternalError(fmt::format("partition: {} needs %{}, which is on neither side", n.name, j.node(o.value).name));
      ops.push_back(o.is_value() ? Operand::of(map[static_cast<size_t>(o.value)]) : o);
    }
    map[static_cast<size_t>(i)] = g.add_node(n.name, n.op, ops, n.attrs);
  }
  for (int o : outputs) g.outputs.push_back(map[static_cast<size_t>(o)]);
  verify(g);
  return g;
}

}  // namespace

PartitionedGraphs partition_joint_graph(const JointGraph& joint) {
  const Graph& j = joint.graph;
  const int n_out = joint.num_forward_outputs;
  const int n_in = j.num_inputs() - n_out;  // forward inputs; the tangents follow them
  if (n_in < 0 || static_cast<int>(j.outputs.size()) != n_out + static_cast<int>(joint.grad_inputs.size()))
    throw InternalError(fmt::format("partition: joint graph {} does not have the joint layout", j.name));

  // tangent[i]: depends on a tangent (so it is backward); constant[i]: depends on no input at all.
  std::vector<bool> tangent(static_cast<size_t>(j.size()), false), constant(static_cast<size_t>(j.size()), false);
  for (int i = n_in; i < n_in + n_out; ++i) tangent[static_cast<size_t>(i)] = true;
  for (int i = j.num_inputs(); i < j.size(); ++i) {
    bool c = true;
    for (auto& o : j.node(i).operands) {
      if (!o.is_value()) continue;
      if (tangent[static_cast<size_t>(o.value)]) tangent[static_cast<size_t>(i)] = true;
      if (!constant[static_cast<size_t>(o.value)]) c = false;
    }
    constant[static_cast<size_t>(i)] = c;
  }
  std::vector<int> fwd_outputs(j.outputs.begin(), j.outputs.begin() + n_out);
  std::vector<bool> fwd_needed = ancestors(j, fwd_outputs);
  auto in_backward = [&](int i) {
    if (tangent[static_cast<size_t>(i)] || constant[static_cast<size_t>(i)]) return true;
    return i >= j.num_inputs() && !fwd_needed[static_cast<size_t>(i)];
  };

  std::vector<int> grads(j.outputs.begin() + n_out, j.outputs.end());
  for (int o : fwd_outputs)
    if (tangent[static_cast<size_t>(o)]) throw InternalError(fmt::format("partition: forward output %{} depends on a tangent", j.node(o).name));

  // Backward nodes are the backward-side ancestors of the gradients; the forward values they read
  // (or return directly) are the saved values.
  std::vector<bool> needed = ancestors(j, grads), bwd_body(static_cast<size_t>(j.size()), false);
  std::vector<bool> saved(static_cast<size_t>(j.size()), false);
  for (int i = 0; i < j.size(); ++i) {
    if (!needed[static_cast<size_t>(i)] || !in_backward(i)) continue;
    bwd_body[static_cast<size_t>(i)] = true;
    for (auto& o : j.node(i).operands)
      if (o.is_value() && !in_backward(o.value)) saved[static_cast<size_t>(o.value)] = true;
  }
  for (int o : grads)
    if (!in_backward(o)) saved[static_cast<size_t>(o)] = true;

  PartitionedGraphs p;
  p.num_forward_outputs = n_out;
  p.grad_inputs = joint.grad_inputs;
  std::vector<int> saved_ids;
  for (int i = 0; i < j.size(); ++i)
    if (saved[static_cast<size_t>(i)]) saved_ids.push_back(i);
  p.num_saved = static_cast<int>(saved_ids.size());

  std::string base = j.name;
  if (base.size() > 6 && base.ends_with("_joint")) base.resize(base.size() - 6);

  std::vector<int> fwd_roots = fwd_outputs;
  fwd_roots.insert(fwd_roots.end(), saved_ids.begin(), saved_ids.end());
  std::vector<bool> fwd_body = ancestors(j, fwd_roots);
  std::vector<int> fwd_inputs;
  for (int i = 0; i < n_in; ++i) fwd_inputs.push_back(i);
  std::vector<int> fwd_outs = fwd_outputs;
  fwd_outs.insert(fwd_outs.end(), saved_ids.begin(), saved_ids.end());
  p.forward = build_part(j, base + "_forward", fwd_inputs, fwd_body, fwd_outs, false);

  std::vector<int> bwd_inputs = saved_ids;
  for (int i = n_in; i < n_in + n_out; ++i) bwd_inputs.push_back(i);
  p.backward = build_part(j, base + "_backward", bwd_inputs, bwd_body, grads, true);
  return p;
}

}  // namespace reprokit
