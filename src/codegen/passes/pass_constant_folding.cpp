// Constant folding: a node whose operands are all constants (full nodes or literals) is evaluated
// with its reference kernel; a uniform result becomes a single full node.
#include <cmath>

#include "graph_builder.h"
#include "passes.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/runtime/interpreter.h"

namespace reprokit {

bool run_constant_folding(Graph& g, RewriteBudget& budget) {
  GraphBuilder b(g);
  bool changed = false;
  for (int i = 0; i < g.size(); ++i) {
    const Node& n = g.node(i);
    bool foldable = !n.is_input() && n.op != Op::full && !n.operands.empty() && n.type.numel() > 0;
    std::vector<Tensor> values;
    for (auto& o : n.operands) {
      if (!foldable) break;
      if (!o.is_value()) {
        values.emplace_back();  // the kernel reads the node's literal
        continue;
      }
      const Node& src = b.graph().node(b.mapped(o.value));
      if (src.op != Op::full) {
        foldable = false;
        break;
      }
      values.push_back(run_reference_kernel(src, {}, false));
    }
    if (!foldable) {
      b.copy(i);
      continue;
    }
    Tensor r = run_reference_kernel(n, values, false);
    AttrValue lit;
    bool uniform = true;
    if (is_floating(n.type.dtype)) {
      auto v = r.to_doubles();
      for (double x : v) uniform &= (x == v[0]) || (std::isnan(x) && std::isnan(v[0]));
      lit = AttrValue(v[0]);
    } else {  // integers fold exactly
      auto v = r.to_int64s();
      for (int64_t x : v) uniform &= x == v[0];
      lit = n.type.dtype == DType::boolean ? AttrValue(v[0] != 0) : AttrValue(v[0]);
    }
    if (!uniform || !budget.allow()) {
      b.copy(i);
      continue;
    }
    if (budget.inject_now()) {  // the injected bug: folded slightly off
      if (lit.is_float()) lit = AttrValue(lit.as_float() * 1.01 + 0.01);
      else if (lit.is_int()) lit = AttrValue(lit.as_int() + 1);
      else lit = AttrValue(!lit.as_bool());
    }
    int f = b.graph().add_node(n.name, Op::full, {}, {{"shape", AttrValue::ints(n.type.shape)}, {"value", lit}, {"dtype", AttrValue(n.type.dtype)}});
    b.alias(i, f);
    changed = true;
  }
  if (changed) g = b.finish();
  return changed;
}

}  // namespace reprokit
