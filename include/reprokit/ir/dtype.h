// Element types of reprokit tensors and PyTorch's type-promotion rules over them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace reprokit {

// The small integer types (i8 u8 i16 u16) are those of quantised models and of ONNX's tests.
enum class DType { f16, bf16, f32, f64, i32, i64, boolean, i8, u8, i16, u16 };

std::string_view dtype_name(DType t);                  // "f16", ..., "bool"
std::optional<DType> parse_dtype(std::string_view s);  // inverse of dtype_name
std::size_t dtype_size(DType t);
bool is_floating(DType t);
// One unit in the last place of |x| in floating dtype t (f16, bf16, f32, f64); below the smallest
// normal, that of the smallest normal; 0 for inf and NaN.
double ulp_of(double x, DType t);
bool is_integral(DType t);  // i8 u8 i16 u16 i32 i64 (not bool)
bool is_unsigned(DType t);  // u8 u16
// The range of an integral dtype (bool: [0, 1]).
int64_t dtype_min(DType t);
int64_t dtype_max(DType t);

// Result type of a binary op between two tensors, as torch.result_type does.
DType promote_types(DType a, DType b);

// Category of a Python-like scalar operand, for tensor-scalar promotion.
enum class ScalarKind { boolean, integer, floating };
// Tensor-scalar promotion: the scalar only changes the type when it is of a
// higher category (int tensor * 2.5 -> f32; f16 tensor * 2.5 -> f16).
DType promote_with_scalar(DType tensor, ScalarKind scalar);

}  // namespace reprokit
