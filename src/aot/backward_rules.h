// The backward rules of reverse-mode autodiff: one per differentiable primitive op, written as
// algebra over Expr. A rule gives the gradient of each operand from the node's output y and its
// gradient g. The driver (autodiff.cpp) sums gradients back to operand shapes, casts them to
// operand dtypes and accumulates gradients of values with several users, so rules stay short.
// Composite ops have no rule: autodiff decomposes them first.
#pragma once
#include <vector>

#include "reprokit/ir/builder.h"
#include "reprokit/ir/op_semantics.h"

namespace reprokit::aot_detail {

// One gradient per operand; an Expr with id -1 where none is wanted or defined.
using Grads = std::vector<Expr>;

// The gradients of node n's operands `a` (values in the joint graph, or literals), given its
// output y and dL/dy g. `need[i]` says which are wanted.
Grads backward(Builder& b, const Node& n, const std::vector<Arg>& a, Expr y, Expr g, const std::vector<bool>& need);

// A convolution's gradients, as reprokit writes them (convolutions; no transposed op), given its
// output gradient g, window and groups: of an input of shape xs with weight w, and of a weight
// with spatial dims `kernel` applied to `input`.
Expr conv_input_grad(Expr g, const Shape& xs, Expr w, const Window& win, int64_t groups);
Expr conv_weight_grad(Expr input, Expr g, const Window& win, int64_t groups, const Shape& kernel);
// src (cut to index's size) summed at the positions index names along dim into zeros of `target`
// (gather's backward; scatter_add less its input).
Expr scatter_sum(Expr index, Expr src, const Shape& target, int64_t dim);
// conv2d or conv3d, by the rank of x.
Expr conv_nd(Expr x, Expr w, const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
             int64_t groups);

// Sums x over the dims that broadcasting added or stretched, so it has `shape` again.
Expr sum_to(Expr x, const Shape& shape);

// Zeros of `shape` on the device of value `like`: `full` makes cpu tensors only, so on another
// device they come from summing an empty slice of `like` (an exact 0, even where `like` is NaN).
Expr zeros(Expr like, const Shape& shape, DType dtype);

}  // namespace reprokit::aot_detail
