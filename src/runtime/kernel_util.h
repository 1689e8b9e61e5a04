// Shared pieces of the reference kernels: the kernel signature, the registry, and index helpers
// (broadcasting and strided views over values held as doubles in C order).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "reprokit/ir/graph.h"
#include "reprokit/runtime/tensor.h"

namespace reprokit::kernels {

// Operand values in C order, with their shapes. Literal operands arrive as 0-d operands.
struct Arg {
  Shape shape;
  std::vector<double> v;
};

// A reference kernel computes the output values (C order, out_shape) in double precision; the
// interpreter rounds them to the output dtype on store.
using Kernel = std::function<std::vector<double>(const Node& n, const std::vector<Arg>& args, const Shape& out_shape)>;

using KernelList = std::vector<std::pair<std::string, Kernel>>;
// One list per op group, each in its own file; the registry is built from all of them (explicit
// calls rather than static registrars, which a static library's linker may drop).
KernelList pointwise_kernels();
KernelList reduction_kernels();
KernelList linalg_kernels();
KernelList shape_kernels();

const Kernel* find_kernel(std::string_view op);

// For each element of out_shape, the flat index of the element of `in` (broadcast to out_shape).
std::vector<int64_t> broadcast_map(const Shape& out_shape, const Shape& in_shape);
// Reads values of a view (shape, strides in elements, offset) over contiguous `src`.
std::vector<double> read_view(const std::vector<double>& src, const Shape& shape, const Shape& strides, int64_t offset);

}  // namespace reprokit::kernels
