// KnownValues (minify_bundle.h): the original run's node values, computed on first use and only
// as far back as needed, so a worker answering small candidates never runs the whole model.
#include <algorithm>

#include "reprokit/minifier/minify_bundle.h"
#include "reprokit/runtime/interpreter.h"

namespace reprokit {

KnownValues::KnownValues(const Bundle& b) : b_(b), values_(static_cast<size_t>(b.graph.size())) {
  for (int i = 0; i < b.graph.num_inputs(); ++i) values_[static_cast<size_t>(i)] = b.inputs.at(static_cast<size_t>(i));
}

const Tensor& KnownValues::of(int id) {
  if (values_.at(static_cast<size_t>(id))) return *values_[static_cast<size_t>(id)];
  // The nodes id depends on that are not known yet; computed in id (topological) order.
  std::vector<int> todo, stack{id};
  std::vector<bool> seen(values_.size(), false);
  while (!stack.empty()) {
    int n = stack.back();
    stack.pop_back();
    if (seen[static_cast<size_t>(n)] || values_[static_cast<size_t>(n)]) continue;
    seen[static_cast<size_t>(n)] = true;
    todo.push_back(n);
    for (const auto& o : b_.graph.node(n).operands)
      if (o.is_value()) stack.push_back(o.value);
  }
  std::sort(todo.begin(), todo.end());
  for (int n : todo) {
    const Node& node = b_.graph.node(n);
    std::vector<Tensor> operands;
    for (const auto& o : node.operands) operands.push_back(o.is_value() ? *values_[static_cast<size_t>(o.value)] : Tensor());
    values_[static_cast<size_t>(n)] = run_reference_kernel(node, operands, false);
  }
  return *values_[static_cast<size_t>(id)];
}

}  // namespace reprokit
