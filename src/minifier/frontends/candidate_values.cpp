// A candidate's input values (see candidate_values.h).
#include "reprokit/minifier/candidate_values.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "reprokit/runtime/interpreter.h"
#include "reprokit/support/errors.h"

namespace reprokit {

KnownValues::KnownValues(const Bundle& b) : b_(b), values_(static_cast<size_t>(b.graph.size())) {
  for (int i = 0; i < b.graph.num_inputs(); ++i) values_[static_cast<size_t>(i)] = b.inputs.at(static_cast<size_t>(i));
}

// The original run's node values are computed on first use and only as far back as needed, so
// a worker answering small candidates never runs the whole model.
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

namespace {

// The part of `t` at `start` with the shape `shape` (a window), contiguous.
Tensor window(const Tensor& t, const Shape& shape, const std::vector<int64_t>& start, const std::string& name) {
  if (shape == t.shape() && start.empty()) return t;
  if (shape.size() != t.shape().size() || (!start.empty() && start.size() != shape.size()))
    throw UserError(fmt::format("candidate input %{} is {}-d, its known value {}-d", name, shape.size(), t.rank()));
  Shape in_strides = contiguous_strides(t.shape());
  int64_t offset = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t s = start.empty() ? 0 : start[d];
    if (s < 0 || shape[d] < 0 || s > t.shape()[d] - shape[d])  // no s + size: a tampered start overflows it
      throw UserError(fmt::format("candidate input %{}: the window does not fit in the known value", name));
    offset += s * in_strides[d];
  }
  Tensor c = t.contiguous(), out = Tensor::zeros(t.dtype(), shape);
  // Element-wise copy through the window (small: shrunk inputs), exact for every dtype.
  Shape os = contiguous_strides(shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t src = offset;
    for (size_t d = 0; d < shape.size(); ++d) src += ((i / os[d]) % shape[d]) * in_strides[d];
    if (is_floating(t.dtype())) out.set(i, c.get(src));
    else out.set_int(i, c.get_int(src));
  }
  return out;
}

}  // namespace

std::vector<Tensor> candidate_inputs(const Candidate& c, const Bundle& b, KnownValues& known_values) {
  std::vector<Tensor> inputs;
  for (int i = 0; i < c.graph.num_inputs(); ++i) {
    const Node& in = c.graph.node(i);
    int id = b.graph.find(in.name);
    if (id < 0) throw UserError(fmt::format("candidate input %{} is neither an input nor a node of the bundle's graph", in.name));
    const InputEdit& e = c.edit(in.name);
    const Tensor& known = known_values.of(id);
    if (known.dtype() != in.type.dtype)
      throw UserError(fmt::format("candidate input %{} is declared {} but the known value is {}", in.name, in.type.str(), dtype_name(known.dtype())));
    Tensor t = window(known, in.type.shape, e.start, in.name);
    if (e.fill != InputFill::original || !e.zeroed.empty()) {
      t = t.to(t.dtype());  // a fresh copy: the known value is shared between candidates
      for (int64_t k = 0; k < t.numel(); ++k) {
        switch (e.fill) {
          case InputFill::original: break;
          case InputFill::zeros: t.set(k, 0.0); break;
          case InputFill::ones: t.set(k, 1.0); break;
          case InputFill::integers:
            t.set(k, std::clamp(std::nearbyint(is_floating(t.dtype()) ? t.get(k) : static_cast<double>(t.get_int(k))), -4.0, 4.0));
            break;
        }
      }
      for (int64_t z : e.zeroed) {
        if (z < 0 || z >= t.numel()) throw UserError(fmt::format("candidate input %{}: zeroed element {} is out of range", in.name, z));
        t.set(z, 0.0);
      }
    }
    if (!in.type.strides.empty() && t.strides() != in.type.strides) t = t.with_strides(in.type.strides);
    inputs.push_back(t);
  }
  return inputs;
}

std::optional<std::string> value_edit_leaves_domain(const Candidate& c, const Bundle& b, KnownValues& known) {
  bool edited = false;
  Candidate plain = c;
  for (auto& [name, e] : plain.edits) {
    edited |= e.fill != InputFill::original || !e.zeroed.empty();
    e.fill = InputFill::original;
    e.zeroed.clear();
  }
  if (!edited) return std::nullopt;
  InterpretOptions f64;
  f64.cast_to_f64 = true;
  // Values that take the graph out of what it accepts (an index past a smaller dimension) make the
  // candidate invalid, not the reduction.
  std::vector<Tensor> with_edit, without;
  try {
    without = interpret_all(c.graph, candidate_inputs(plain, b, known), f64);
  } catch (const UserError& e) { return fmt::format("the candidate's input values do not fit its graph: {}", e.what()); }
  try {
    with_edit = interpret_all(c.graph, candidate_inputs(c, b, known), f64);
  } catch (const UserError& e) { return fmt::format("the edited input values do not fit the graph: {}", e.what()); }
  for (int id = 0; id < c.graph.size(); ++id) {
    const Tensor &e = with_edit[static_cast<size_t>(id)], &o = without[static_cast<size_t>(id)];
    if (!is_floating(e.dtype())) continue;
    for (int64_t k = 0; k < e.numel(); ++k)
      if (!std::isfinite(e.get(k)) && std::isfinite(o.get(k)))
        return fmt::format("the edited input values make %{} {} (element {}) where the original values keep it finite", c.graph.node(id).name,
                           std::isnan(e.get(k)) ? "NaN" : "infinite", k);
  }
  return std::nullopt;
}

}  // namespace reprokit
