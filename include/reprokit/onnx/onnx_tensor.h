// ONNX tensors (TensorProto) as reprokit Tensors, and ONNX element types as reprokit dtypes.
// TensorProto bytes are untrusted input: sizes are checked against the dims before anything is
// allocated, and anything reprokit cannot hold is a UserError naming `where`.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "reprokit/runtime/tensor.h"

namespace reprokit {

// ONNX TensorProto.DataType <-> DType. nullopt for types reprokit has no dtype for (uint8, int8,
// int16, uint16/32/64, string, complex).
std::optional<DType> dtype_from_onnx(int elem_type);
int onnx_elem_type(DType dtype);
std::string onnx_elem_type_name(int elem_type);  // "FLOAT", "UINT8", ... ("type 42" when unknown)

// A serialized TensorProto (ONNX test data's input_0.pb). `name` receives the tensor's name.
Tensor parse_onnx_tensor(std::string_view bytes, const std::string& where, std::string* name = nullptr);
// A serialized TensorProto holding t (raw_data, little-endian, C order).
std::string encode_onnx_tensor(const Tensor& t, const std::string& name);

}  // namespace reprokit
