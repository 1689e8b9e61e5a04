// ONNX export: a reprokit Graph as an ONNX model (opset 17, IR version 8) that passes
// onnx::checker::check_model and strict shape inference.
//
// Ops map one to one where ONNX has the op; otherwise: rsqrt -> Reciprocal(Sqrt), silu -> x *
// Sigmoid(x), gelu -> its Erf (or tanh) formula, var -> ReduceMean/Sub/Mul/ReduceSum/Div, ne ->
// Not(Equal), linear -> Gemm(transB=1) (inputs of rank != 2 are reshaped to 2-D and back),
// layer_norm -> LayerNormalization, instance_norm -> InstanceNormalization, group_norm ->
// InstanceNormalization over [N, groups, rest] then Mul/Add per channel, softmax/log_softmax ->
// Softmax/LogSoftmax(axis), gather -> GatherElements, embedding -> Gather, full -> ConstantOfShape,
// pixel_shuffle of rank 4 -> DepthToSpace(CRD), pixel_unshuffle (and pixel_shuffle of other
// ranks) -> Reshape, Transpose, Reshape, einsum -> Einsum (its explicit equation), cumsum ->
// CumSum, cumprod -> the running Mul of its dim's slices, Concat'ed (ONNX has no CumProd),
// sort/argsort/topk/topk_indices -> TopK (sort's k the dim's length; values output 0, indices
// output 1), grid_sample -> GridSample, affine_grid -> its constant base grid MatMul theta
// transposed, reshaped (AffineGrid is opset 20). Attributes become the inputs opset 17 wants (Reshape shape, Slice bounds,
// Squeeze/Unsqueeze/ReduceSum axes). Mixed operand
// dtypes get Casts to the dtype reprokit computes in; an op ONNX does not define for f16/bf16 is
// computed in f32 between Casts, as reprokit does. Graph inputs are contiguous (strides dropped).
// What ONNX cannot express is a UserError naming the node.
#pragma once
#include <map>
#include <string>

#include "reprokit/ir/graph.h"
#include "reprokit/runtime/tensor.h"
#include "reprokit/support/files.h"

namespace reprokit {

// The serialized ModelProto. Inputs named in `initializers` become initializers holding those
// values (an imported model's weights stay weights); the rest are graph inputs.
std::string export_onnx(const Graph& g, const std::map<std::string, Tensor>& initializers = {});
// Writes dir/repro.onnx (atomically).
void write_onnx_repro(const Dir& dir, const Graph& g);

}  // namespace reprokit
