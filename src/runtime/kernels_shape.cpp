// Reference kernels of shape, indexing and creation ops: reshape permute transpose expand slice
// cat squeeze unsqueeze, embedding gather, full. Views are read through strides.
#include <fmt/format.h>

#include "kernel_util.h"
#include "reprokit/ir/errors.h"
#include "reprokit/ir/op_registry.h"

namespace reprokit::kernels {

namespace {

std::vector<double> same_values(const Node&, const std::vector<Arg>& a, const Shape&) { return a[0].v; }

std::vector<double> permute_kernel(const Node& n, const std::vector<Arg>& a, const Shape& out_shape) {
  const Arg& x = a[0];
  int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> dims;
  if (n.op == "permute") {
    for (auto d : attr_ints(n, "dims")) dims.push_back(normalize_dim(d, rank));
  } else {
    for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
    std::swap(dims[static_cast<size_t>(normalize_dim(attr_int(n, "dim0"), rank))],
              dims[static_cast<size_t>(normalize_dim(attr_int(n, "dim1"), rank))]);
  }
  Shape in_strides = contiguous_strides(x.shape), view(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) view[d] = in_strides[static_cast<size_t>(dims[d])];
  return read_view(x.v, out_shape, view, 0);
}

std::vector<double> expand_kernel(const Node&, const std::vector<Arg>& a, const Shape& out_shape) {
  auto map = broadcast_map(out_shape, a[0].shape);
  std::vector<double> out(map.size());
  for (size_t i = 0; i < map.size(); ++i) out[i] = a[0].v[static_cast<size_t>(map[i])];
  return out;
}

std::vector<double> slice_kernel(const Node& n, const std::vector<Arg>& a, const Shape& out_shape) {
  const Arg& x = a[0];
  int64_t dim = normalize_dim(attr_int(n, "dim"), static_cast<int64_t>(x.shape.size()));
  int64_t size = x.shape[static_cast<size_t>(dim)];
  int64_t start = attr_int(n, "start");
  if (start < 0) start += size;
  start = std::clamp<int64_t>(start, 0, size);
  Shape strides = contiguous_strides(x.shape);
  int64_t offset = start * strides[static_cast<size_t>(dim)];
  strides[static_cast<size_t>(dim)] *= attr_int(n, "step");
  return read_view(x.v, out_shape, strides, offset);
}

std::vector<double> cat_kernel(const Node& n, const std::vector<Arg>& a, const Shape& out_shape) {
  int64_t dim = normalize_dim(attr_int(n, "dim"), static_cast<int64_t>(out_shape.size()));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= out_shape[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(dim) + 1; d < out_shape.size(); ++d) inner *= out_shape[d];
  std::vector<double> out;
  out.reserve(static_cast<size_t>(numel(out_shape)));
  for (int64_t o = 0; o < outer; ++o)
    for (auto& x : a) {
      int64_t chunk = x.shape[static_cast<size_t>(dim)] * inner;
      out.insert(out.end(), x.v.begin() + o * chunk, x.v.begin() + (o + 1) * chunk);
    }
  return out;
}

int64_t checked_index(double v, int64_t size, const Node& n) {
  auto i = static_cast<int64_t>(v);
  if (i < 0) i += size;  // negative indices count from the end, as in torch.gather
  if (i < 0 || i >= size)
    throw UserError(fmt::format("node %{} = {}: index {} is out of range for a dimension of size {}", n.name, n.op,
                                static_cast<int64_t>(v), size));
  return i;
}

std::vector<double> embedding_kernel(const Node& n, const std::vector<Arg>& a, const Shape&) {
  const Arg &w = a[0], &idx = a[1];
  int64_t rows = w.shape[0], cols = w.shape[1];
  std::vector<double> out;
  out.reserve(idx.v.size() * static_cast<size_t>(cols));
  for (double v : idx.v) {
    int64_t r = static_cast<int64_t>(v);
    if (r < 0 || r >= rows)
      throw UserError(fmt::format("node %{} = embedding: index {} is out of range for {} embeddings", n.name, r, rows));
    out.insert(out.end(), w.v.begin() + r * cols, w.v.begin() + (r + 1) * cols);
  }
  return out;
}

std::vector<double> gather_kernel(const Node& n, const std::vector<Arg>& a, const Shape& out_shape) {
  const Arg &x = a[0], &idx = a[1];
  int64_t dim = normalize_dim(attr_int(n, "dim"), static_cast<int64_t>(x.shape.size()));
  Shape xs = contiguous_strides(x.shape);
  std::vector<double> out(idx.v.size());
  std::vector<int64_t> pos(out_shape.size(), 0);
  for (size_t i = 0; i < idx.v.size(); ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < pos.size(); ++d) {
      int64_t coord = static_cast<int64_t>(d) == dim ? checked_index(idx.v[i], x.shape[d], n) : pos[d];
      off += coord * xs[d];
    }
    out[i] = x.v[static_cast<size_t>(off)];
    for (size_t d = pos.size(); d-- > 0;) {
      if (++pos[d] < out_shape[d]) break;
      pos[d] = 0;
    }
  }
  return out;
}

std::vector<double> full_kernel(const Node& n, const std::vector<Arg>&, const Shape& out_shape) {
  const AttrValue& v = attr(n, "value");
  double value = v.is_bool() ? (v.as_bool() ? 1.0 : 0.0) : v.as_float();
  return std::vector<double>(static_cast<size_t>(numel(out_shape)), value);
}

}  // namespace

KernelList shape_kernels() {
  return {{"reshape", same_values},     {"squeeze", same_values},  {"unsqueeze", same_values},
          {"permute", permute_kernel},  {"transpose", permute_kernel}, {"expand", expand_kernel},
          {"slice", slice_kernel},      {"cat", cat_kernel},       {"embedding", embedding_kernel},
          {"gather", gather_kernel},    {"full", full_kernel}};
}

}  // namespace reprokit::kernels
