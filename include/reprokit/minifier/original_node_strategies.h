// The strategy table of a reduction whose unit is the ONNX model's own node
// (onnx_original_nodes.h): the node-removing strategies act on values of the model (a node's
// output), so a node's ops go or stay together; strategies that rewrite a node (its operands, its
// attributes) are left out, since the model's node could not say it; smaller input shapes stay
// where no written node may name a size; and every candidate that cannot be written as the model's nodes is
// invalid before any check runs.
#pragma once
#include <memory>
#include <vector>

#include "reprokit/minifier/strategies.h"
#include "reprokit/onnx/onnx_original_nodes.h"

namespace reprokit {

std::vector<Strategy> original_node_strategies(std::shared_ptr<const OriginalOnnxModel> model);

}  // namespace reprokit
