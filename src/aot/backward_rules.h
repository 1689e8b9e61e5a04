// The backward-rule table of reverse-mode autodiff: one rule per differentiable op. A rule emits,
// into the joint graph, the gradient of each operand given the node's output and its gradient.
// The driver (autodiff.cpp) sums gradients back to operand shapes, casts to operand dtypes and
// accumulates gradients of values with several users, so rules stay short.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "reprokit/ir/graph.h"

namespace reprokit::aot_detail {

// Emits backward nodes named after the forward node ("d_<name>.<op>"), with small helpers.
class GradEmitter {
 public:
  GradEmitter(Graph& g, std::string base) : g_(g), base_(std::move(base)) {}
  int op(const std::string& op, std::vector<Operand> operands, Attrs attrs = {});
  static Operand v(int id) { return Operand::of(id); }
  static Operand s(double x) { return Operand::scalar(AttrValue(x)); }
  const TensorType& type(int id) const { return g_.node(id).type; }
  const TensorType& type(const Operand& o) const { return g_.node(o.value).type; }

  int reshape(int x, const Shape& shape);
  // Sums x over the dims that broadcasting added or stretched, so it has `shape` again.
  int sum_to(int x, const Shape& shape);
  int cast(int x, DType dtype);
  // Zeros on the device of value `like`: `full` makes cpu tensors only, so on another device
  // they come from summing an empty slice of `like` (an exact 0, even where `like` holds NaN).
  int zeros(const Shape& shape, DType dtype, int like);
  // 0, 1, ..., n-1 as i64 on the device of `like`, built by doubling with cat (log2(n) nodes):
  // the op set has no iota.
  int iota(int64_t n, int like);

  Graph& g_;
  std::string base_;
};

// Gradients of each operand (-1 where the rule gives none); `need[i]` says which are wanted.
// `a` are the node's operands (possibly upcast to f32 by the driver), y its output, g dL/dy.
using BackwardRule = std::function<std::vector<int>(GradEmitter&, const Node&, const std::vector<Operand>& a,
                                                    int y, int g, const std::vector<bool>& need)>;

const std::map<std::string, BackwardRule, std::less<>>& backward_rules();

}  // namespace reprokit::aot_detail
