// Permute hoisting: permute(pointwise(x, b)) -> pointwise(permute(x), b'), so that the op writes
// its result in the order its users read it. ConvNeXt's layer norms run over the channels of an
// NCHW tensor between two permutes (to NHWC and back): the norm's output, written NHWC, reached the
// next conv through the permute to NCHW, which read it a channel plane at a time with a step of 96
// floats and fell off the depthwise conv's row kernel (convnext_tiny's first 7x7 conv: 0.93 ms
// against 0.47 on a contiguous input). Hoisted to the norm's input, the permute meets the one
// before the norm and the two read the conv's output in its own order. A block's last bias add,
// computed NHWC and then permuted to NCHW for the layer scale and the residual add, becomes one
// kernel with them.
// The op reads its operands at the permuted index: a full-shape operand is permuted with it; a
// broadcast one is first given the op's rank (leading 1s) and then permuted the same way. An op
// the permute does not read alone (x - mean, read by a layer norm's variance and its output) is
// computed again for the permute where it is one instruction reading one full-shape operand, as
// pointwise duplication would; other shared ops stay where they are. Repeated, so that a permute
// climbs a chain, up to kMaxSteps ops (a layer norm's output is four below its x - mean): each
// step rebuilds the graph, and a 10,000-op chain under a permute would take 10,000 of them.
#include <algorithm>

#include "graph_builder.h"
#include "passes.h"
#include "reprokit/ir/graph_utils.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/op_semantics.h"

namespace reprokit {

namespace {

constexpr int kMaxSteps = 8;

bool is_permute(Op op) { return op == Op::permute || op == Op::transpose; }

// Whether permute r can take the place of its operand p, computing p's op on permuted operands:
// moved where the permute is p's only user, copied where p is cheap and reads one full-shape operand.
// Not where only matmuls read the permute: they take a transposed operand as it lies (attention's
// keys), and the op would do the transposing instead.
bool hoistable(const Graph& g, int id, const std::vector<std::vector<int>>& users, const std::vector<bool>& is_output) {
  const Node& r = g.node(id);
  if (!is_permute(r.op) || !r.operands[0].is_value()) return false;
  const auto& readers = users[static_cast<size_t>(id)];
  if (!readers.empty() && std::all_of(readers.begin(), readers.end(), [&](int u) { return g.node(u).op == Op::matmul; })) return false;
  const int p = r.operands[0].value;
  const Node& prod = g.node(p);
  if (prod.is_input() || !is_pointwise(prod.op) || is_output[static_cast<size_t>(p)]) return false;
  if (users[static_cast<size_t>(p)].size() == 1) return true;
  int full = 0;
  for (auto& o : prod.operands) full += is_full_shape_operand(g, prod, o);
  return is_cheap_pointwise(prod.op) && full <= 1;
}

// Rewrites every hoistable permute once; whether any was.
bool hoist_once(Graph& g, RewriteBudget& budget) {
  const auto users = compute_users(g);
  std::vector<bool> is_output(static_cast<size_t>(g.size()), false);
  for (int o : g.outputs) is_output[static_cast<size_t>(o)] = true;
  // hoisted[r]: the pointwise op that permute r now computes in its own order; moved[p]: p is
  // emitted at its permute's place instead of its own.
  std::vector<int> hoisted(static_cast<size_t>(g.size()), -1);
  std::vector<bool> moved(static_cast<size_t>(g.size()), false);
  int injected = -1;
  bool any = false;
  for (int r = g.num_inputs(); r < g.size(); ++r) {
    const Node& n = g.node(r);
    if (!hoistable(g, r, users, is_output)) continue;
    const int p = n.operands[0].value;
    if (!budget.allow()) continue;
    hoisted[static_cast<size_t>(r)] = p;
    if (users[static_cast<size_t>(p)].size() == 1) moved[static_cast<size_t>(p)] = true;
    any = true;
    if (budget.inject_now()) injected = r;
  }
  if (!any) return false;
  // Every operand read through the permute; a broadcast one given the op's rank first (leading
  // 1s). The first full-shape operand's permute keeps the permute's name.
  g = rebuild_with_hoisted_views(g, hoisted, moved, injected, [&](GraphBuilder& b, const Node& r, const Node& prod, size_t k, bool, bool first_full) {
    const Operand& o = prod.operands[k];
    if (!o.is_value()) return o;
    Operand v = b.map_operand(o);
    const Shape& s = g.node(o.value).type.shape;
    if (s.size() < prod.type.shape.size()) {
      Shape ranked(prod.type.shape.size() - s.size(), 1);
      ranked.insert(ranked.end(), s.begin(), s.end());
      v = Operand::of(b.graph().add_node(b.fresh_name(r.name), Op::reshape, {v}, {{"shape", AttrValue::ints(ranked)}}));
    }
    const std::string name = first_full ? r.name : b.fresh_name(r.name);
    return Operand::of(b.graph().add_node(name, Op::permute, {v}, {{"dims", AttrValue::ints(permutation(r, r.type.rank()))}}));
  });
  return true;
}

}  // namespace

bool run_permute_hoisting(Graph& g, RewriteBudget& budget) {
  bool any = false;
  for (int step = 0; step < kMaxSteps && hoist_once(g, budget); ++step) any = true;
  return any;
}

}  // namespace reprokit
