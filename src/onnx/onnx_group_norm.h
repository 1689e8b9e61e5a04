// PyTorch's ONNX exporter (opset < 18) writes nn.GroupNorm as Reshape to [N, groups, -1],
// InstanceNormalization with ones and zeros, Reshape back, Mul by the weight and Add the bias. The
// importer folds that chain back into one group_norm, so a repro names the layer the model has.
#pragma once
#include <map>
#include <string>

#include "reprokit/ir/graph.h"
#include "reprokit/runtime/tensor.h"

namespace reprokit {

// g with every such chain whose inner values are used by nothing else replaced by
// reshape(weight) and reshape(bias) to [C] and group_norm (named as the chain's last value).
// `known`: the values of inputs that hold constants (initializers), by name; the ones and zeros
// may be such inputs, and those the fold leaves unused are dropped. Every other node is unchanged.
Graph fold_exported_group_norm(const Graph& g, const std::map<std::string, Tensor>& known);

}  // namespace reprokit
