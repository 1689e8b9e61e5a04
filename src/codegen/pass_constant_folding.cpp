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
    bool foldable = !n.is_input() && n.op != "full" && !n.operands.empty() && n.type.numel() > 0;
    std::vector<Tensor> values;
    for (auto& o : n.operands) {
      if (!foldable) break;
      if (!o.is_value()) {
        values.push_back(Tensor::from_doubles(DType::f64, {}, {o.literal.is_bool() ? (o.literal.as_bool() ? 1.0 : 0.0) : o.literal.as_float()}));
        continue;
      }
      const Node& src = b.graph().node(b.mapped(o.value));
      if (src.op != "full") {
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
    auto v = r.to_doubles();
    bool uniform = true;
    for (double x : v) uniform &= (x == v[0]) || (std::isnan(x) && std::isnan(v[0]));
    if (!uniform || !budget.allow()) {
      b.copy(i);
      continue;
    }
    double value = v[0];
    if (budget.inject_now()) value = value * 1.01 + 0.01;  // the injected bug: folded slightly off
    AttrValue lit = is_floating(n.type.dtype) ? AttrValue(value) : n.type.dtype == DType::boolean ? AttrValue(value != 0) : AttrValue(static_cast<int64_t>(value));
    int f = b.graph().add_node(n.name, "full", {}, {{"shape", AttrValue::ints(n.type.shape)}, {"value", lit}, {"dtype", AttrValue(n.type.dtype)}});
    b.alias(i, f);
    changed = true;
  }
  if (changed) g = b.finish();
  return changed;
}

}  // namespace reprokit
