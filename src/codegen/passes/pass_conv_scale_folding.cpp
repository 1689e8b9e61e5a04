// Conv scale folding: conv2d(mul(x, s), w, b) -> conv2d(x, mul(w, s), b), where s scales x's
// channels alone ([1, C, 1, 1], a squeeze-and-excite block's gate, or a scalar). Each output is
// a sum over input channels c of w[., c] x[c], so scaling channel c of the input is scaling
// column c of the weights (zero padding stays zero either way). The mul then runs over the
// weights instead of the input: done only where they are much the smaller (efficientnet_b0's and
// regnet_y_400mf's projection convs at 56 x 56 and 28 x 28, where the gate's multiply was a pass
// over the whole input of its own), and only for ungrouped convs (a group's weights see their
// channels at another index).
#include "graph_builder.h"
#include "passes.h"
#include "reprokit/ir/graph_utils.h"
#include "reprokit/ir/op_registry.h"

namespace reprokit {

namespace {

// Whether operand `o` of a mul whose result has `shape` (rank 4, [N, C, H, W]) scales whole
// channels: a literal, or a value of at most rank 4 that is 1 in every dim but the channels'.
bool scales_channels(const Graph& g, const Operand& o, const Shape& shape, DType dtype) {
  if (!o.is_value()) return true;
  const Node& s = g.node(o.value);
  if (s.type.dtype != dtype || s.type.shape.size() > 4) return false;
  const Shape& d = s.type.shape;
  for (size_t k = 0; k < d.size(); ++k) {
    const size_t dim = 4 - d.size() + k;  // right-aligned against [N, C, H, W]
    if (d[k] != 1 && !(dim == 1 && d[k] == shape[1])) return false;
  }
  return true;
}

// The operand index of mul m's input x (the other operand being the channel scale), or -1.
int scaled_input(const Graph& g, const Node& m) {
  if (m.op != Op::mul || m.operands.size() != 2) return -1;
  for (int k = 0; k < 2; ++k) {
    const Operand &x = m.operands[static_cast<size_t>(k)], &s = m.operands[static_cast<size_t>(1 - k)];
    if (x.is_value() && g.node(x.value).type.shape == m.type.shape && g.node(x.value).type.dtype == m.type.dtype &&
        scales_channels(g, s, m.type.shape, m.type.dtype))
      return k;
  }
  return -1;
}

}  // namespace

bool run_conv_scale_folding(Graph& g, RewriteBudget& budget) {
  const auto users = compute_users(g);
  std::vector<bool> is_output(static_cast<size_t>(g.size()), false);
  for (int o : g.outputs) is_output[static_cast<size_t>(o)] = true;
  std::vector<int> input_of(static_cast<size_t>(g.size()), -1);    // conv -> the operand index of its mul's x
  std::vector<bool> folded(static_cast<size_t>(g.size()), false);  // the muls folded (read by their conv alone: dead after)
  int injected = -1;                                               // the conv whose folded weights are wrong
  bool any = false;
  for (int c = g.num_inputs(); c < g.size(); ++c) {
    const Node& conv = g.node(c);
    if (conv.op != Op::conv2d || attr_int(conv, "groups") != 1 || !conv.operands[0].is_value() || !conv.operands[1].is_value()) continue;
    const int m = conv.operands[0].value, w = conv.operands[1].value;
    const Node& mul = g.node(m);
    if (mul.is_input() || m == w || users[static_cast<size_t>(m)].size() != 1 || is_output[static_cast<size_t>(m)]) continue;
    const Node& weights = g.node(w);
    if (mul.type.shape.size() != 4 || weights.type.dtype != mul.type.dtype || !is_floating(mul.type.dtype)) continue;
    const int k = scaled_input(g, mul);
    // Where the weights are over a quarter of the input, it costs more than it saves: they
    // are read cold from memory, the input warm from the kernel before (efficientnet_b0's
    // 672 -> 112 conv at 14 x 14, weights 0.57 of the input: its gate's multiply 7 us, the
    // weights' 22).
    if (k < 0 || 4 * numel(weights.type.shape) > numel(mul.type.shape) || !budget.allow()) continue;
    input_of[static_cast<size_t>(c)] = k;
    folded[static_cast<size_t>(m)] = true;
    any = true;
    if (budget.inject_now()) injected = c;
  }
  if (!any) return false;
  GraphBuilder b(g);
  for (int i = 0; i < g.size(); ++i) {
    const int k = input_of[static_cast<size_t>(i)];
    if (folded[static_cast<size_t>(i)]) continue;
    if (k < 0) {
      b.copy(i);
      continue;
    }
    const Node& conv = g.node(i);
    const Node& mul = g.node(conv.operands[0].value);
    const Operand x = mul.operands[static_cast<size_t>(k)], s = mul.operands[static_cast<size_t>(1 - k)];
    int scaled = b.graph().add_node(mul.name, Op::mul, {b.map_operand(conv.operands[1]), b.map_operand(s)});
    if (i == injected) scaled = b.perturb(scaled);
    std::vector<Operand> ops = {b.map_operand(x), Operand::of(scaled)};
    for (size_t o = 2; o < conv.operands.size(); ++o) ops.push_back(b.map_operand(conv.operands[o]));
    b.alias(i, b.graph().add_node(conv.name, conv.op, std::move(ops), conv.attrs));
  }
  g = b.finish();
  return true;
}

}  // namespace reprokit
