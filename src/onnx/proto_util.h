// Internal to rk_onnx: TensorProto <-> Tensor on the protobuf types.
#pragma once
#include <onnx/onnx_pb.h>

#include <string>

#include "reprokit/runtime/tensor.h"

namespace reprokit::onnx_detail {

// The largest model file read (protobuf's own limit is 2 GiB).
constexpr size_t kMaxModelBytes = (size_t{2} << 30) - 1;

// UserError "where: ..." on a tensor reprokit cannot hold or one whose data does not match its dims.
Tensor tensor_from_proto(const onnx::TensorProto& t, const std::string& where);
void tensor_to_proto(const Tensor& t, onnx::TensorProto* out);

}  // namespace reprokit::onnx_detail
