// TensorProto <-> Tensor, checked as untrusted input.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

#include "proto_util.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/shape_check.h"
#include "reprokit/onnx/onnx_tensor.h"
#include "reprokit/support/files.h"

namespace reprokit {

using onnx::TensorProto;

std::optional<DType> dtype_from_onnx(int elem_type) {
  switch (elem_type) {
    case TensorProto::FLOAT: return DType::f32;
    case TensorProto::DOUBLE: return DType::f64;
    case TensorProto::FLOAT16: return DType::f16;
    case TensorProto::BFLOAT16: return DType::bf16;
    case TensorProto::INT32: return DType::i32;
    case TensorProto::INT64: return DType::i64;
    case TensorProto::BOOL: return DType::boolean;
    case TensorProto::INT8: return DType::i8;
    case TensorProto::UINT8: return DType::u8;
    case TensorProto::INT16: return DType::i16;
    case TensorProto::UINT16: return DType::u16;
    default: return std::nullopt;
  }
}

int onnx_elem_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return TensorProto::FLOAT;
    case DType::f64: return TensorProto::DOUBLE;
    case DType::f16: return TensorProto::FLOAT16;
    case DType::bf16: return TensorProto::BFLOAT16;
    case DType::i32: return TensorProto::INT32;
    case DType::i64: return TensorProto::INT64;
    case DType::boolean: return TensorProto::BOOL;
    case DType::i8: return TensorProto::INT8;
    case DType::u8: return TensorProto::UINT8;
    case DType::i16: return TensorProto::INT16;
    case DType::u16: return TensorProto::UINT16;
  }
  return TensorProto::UNDEFINED;
}

std::string onnx_elem_type_name(int elem_type) {
  if (TensorProto::DataType_IsValid(elem_type)) return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(elem_type));
  return fmt::format("type {}", elem_type);
}

namespace onnx_detail {

Tensor tensor_from_proto(const TensorProto& t, const std::string& where) {
  auto dt = dtype_from_onnx(t.data_type());
  if (!dt)
    throw UserError(fmt::format("{}: tensor element type {} is not supported (reprokit has f16 bf16 f32 f64 i8 u8 i16 u16 i32 i64 bool)", where,
                                onnx_elem_type_name(t.data_type())));
  if (t.data_location() == TensorProto::EXTERNAL || t.external_data_size() > 0)
    throw UserError(fmt::format("{}: tensors stored in external data files are not supported", where));
  if (t.has_segment()) throw UserError(fmt::format("{}: segmented tensors are not supported", where));
  Shape shape;
  for (int64_t d : t.dims()) {
    if (d < 0) throw UserError(fmt::format("{}: negative dimension {}", where, d));
    shape.push_back(d);
  }
  if (shape.size() > 64) throw UserError(fmt::format("{}: {} dimensions (at most 64 are supported)", where, shape.size()));
  try {
    check_shape(shape, "the tensor");
  } catch (const UserError& e) { throw UserError(fmt::format("{}: {}", where, e.what())); }
  const int64_t n = numel(shape);
  const size_t esize = dtype_size(*dt);
  auto count_error = [&](const char* field, int64_t have) {
    return UserError(fmt::format("{}: {} holds {} elements, the dims [{}] need {}", where, field, have, fmt::join(shape, ", "), n));
  };
  if (t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    if (static_cast<int64_t>(raw.size()) != n * static_cast<int64_t>(esize))
      throw UserError(fmt::format("{}: raw_data has {} bytes, the dims [{}] of {} need {}", where, raw.size(), fmt::join(shape, ", "),
                                  onnx_elem_type_name(t.data_type()), n * static_cast<int64_t>(esize)));
    Tensor out = Tensor::zeros(*dt, shape);
    if (n) std::memcpy(out.data(), raw.data(), raw.size());
    if (*dt == DType::boolean)
      for (int64_t i = 0; i < n; ++i) out.data()[i] = out.data()[i] != 0;
    return out;
  }
  // Element counts are checked before anything is allocated.
  const char* field = "int32_data";
  int64_t have = t.int32_data_size();
  if (*dt == DType::f32) field = "float_data", have = t.float_data_size();
  if (*dt == DType::f64) field = "double_data", have = t.double_data_size();
  if (*dt == DType::i64) field = "int64_data", have = t.int64_data_size();
  if (have != n) throw count_error(field, have);
  Tensor out = Tensor::zeros(*dt, shape);
  switch (*dt) {
    case DType::f32:
      if (n) std::memcpy(out.data(), t.float_data().data(), static_cast<size_t>(n) * 4);
      break;
    case DType::f64:
      if (n) std::memcpy(out.data(), t.double_data().data(), static_cast<size_t>(n) * 8);
      break;
    case DType::i64:
      if (n) std::memcpy(out.data(), t.int64_data().data(), static_cast<size_t>(n) * 8);
      break;
    case DType::i32:
      if (n) std::memcpy(out.data(), t.int32_data().data(), static_cast<size_t>(n) * 4);
      break;
    case DType::boolean:
      for (int64_t i = 0; i < n; ++i) out.data()[i] = t.int32_data(static_cast<int>(i)) != 0;
      break;
    case DType::i8:
    case DType::u8:
    case DType::i16:
    case DType::u16:  // one value per int32_data element, wrapped to the width
      for (int64_t i = 0; i < n; ++i) out.set_int(i, t.int32_data(static_cast<int>(i)));
      break;
    case DType::f16:
    case DType::bf16: {  // bit patterns in int32_data
      auto* p = reinterpret_cast<uint16_t*>(out.data());
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<uint16_t>(t.int32_data(static_cast<int>(i)));
      break;
    }
  }
  return out;
}

void tensor_to_proto(const Tensor& t, TensorProto* out) {
  out->set_data_type(onnx_elem_type(t.dtype()));
  for (int64_t d : t.shape()) out->add_dims(d);
  Tensor c = t.contiguous();
  out->set_raw_data(std::string(reinterpret_cast<const char*>(c.data()), static_cast<size_t>(c.numel()) * dtype_size(c.dtype())));
}

}  // namespace onnx_detail

Tensor parse_onnx_tensor(std::string_view bytes, const std::string& where, std::string* name) {
  TensorProto t;
  if (bytes.size() > onnx_detail::kMaxModelBytes || !t.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw UserError(fmt::format("{}: not a serialized ONNX TensorProto", where));
  if (name) *name = t.name();
  return onnx_detail::tensor_from_proto(t, where);
}

std::string encode_onnx_tensor(const Tensor& t, const std::string& name) {
  TensorProto p;
  p.set_name(name);
  onnx_detail::tensor_to_proto(t, &p);
  return p.SerializeAsString();
}

}  // namespace reprokit
