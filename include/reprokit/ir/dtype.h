// Element types of reprokit tensors and PyTorch's type-promotion rules over them.
#pragma once
#include <cstddef>
#include <optional>
#include <string_view>

namespace reprokit {

enum class DType { f16, bf16, f32, f64, i32, i64, boolean };

std::string_view dtype_name(DType t);                 // "f16", ..., "bool"
std::optional<DType> parse_dtype(std::string_view s); // inverse of dtype_name
std::size_t dtype_size(DType t);
bool is_floating(DType t);
// One unit in the last place of |x| in floating dtype t (f16, bf16, f32, f64); below the smallest
// normal, that of the smallest normal; 0 for inf and NaN.
double ulp_of(double x, DType t);
bool is_integral(DType t);  // i32, i64 (not bool)

// Result type of a binary op between two tensors, as torch.result_type does.
DType promote_types(DType a, DType b);

// Category of a Python-like scalar operand, for tensor-scalar promotion.
enum class ScalarKind { boolean, integer, floating };
// Tensor-scalar promotion: the scalar only changes the type when it is of a
// higher category (int tensor * 2.5 -> f32; f16 tensor * 2.5 -> f16).
DType promote_with_scalar(DType tensor, ScalarKind scalar);

}  // namespace reprokit
