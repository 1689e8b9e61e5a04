// Reference kernels of data movement: shape ops (reshape permute transpose expand slice cat
// squeeze unsqueeze contiguous pixel_shuffle pixel_unshuffle), indexing (embedding gather) and creation (full). Each computes
// which source element every output element comes from, so values move exactly, in any dtype.
#include <fmt/format.h>

#include "kernel_util.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/op_semantics.h"

namespace reprokit::kernels {

namespace {

std::vector<int64_t> identity_map(size_t n) {
  std::vector<int64_t> m(n);
  for (size_t i = 0; i < n; ++i) m[i] = static_cast<int64_t>(i);
  return m;
}

std::vector<int64_t> permute_map(const Node& n, const Shape& in, const Shape& out) {
  auto dims = permutation(n, static_cast<int64_t>(in.size()));
  Shape in_strides = contiguous_strides(in), view(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) view[d] = in_strides[static_cast<size_t>(dims[d])];
  return view_map(out, view, 0);
}

std::vector<int64_t> slice_map(const Node& n, const Shape& in, const Shape& out) {
  SliceBounds b = slice_bounds(n, in);
  Shape strides = contiguous_strides(in);
  int64_t offset = b.start * strides[static_cast<size_t>(b.dim)];
  strides[static_cast<size_t>(b.dim)] *= b.step;
  return view_map(out, strides, offset);
}

// Converts values to the representation of dtype (cat promotes its operands).
Values convert(const Values& v, DType dtype) {
  if (v.is_int() == !is_floating(dtype)) return v;
  Values r;
  r.dtype = dtype;
  r.shape = v.shape;
  if (v.is_int()) {
    for (auto x : v.i) r.f.push_back(static_cast<double>(x));
  } else {
    for (auto x : v.f) r.i.push_back(to_integer_dtype(x, dtype));
  }
  return r;
}

Values cat(const Node& n, const std::vector<Values>& a, const Shape& out) {
  int64_t dim = normalize_dim(attr_int(n, "dim"), static_cast<int64_t>(out.size()));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= out[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(dim) + 1; d < out.size(); ++d) inner *= out[d];
  // All operands as one source: operand j starts at base[j].
  Values all;
  all.dtype = n.type.dtype;
  std::vector<int64_t> base;
  for (auto& x : a) {
    Values c = convert(x, n.type.dtype);
    base.push_back(static_cast<int64_t>(all.size()));
    all.f.insert(all.f.end(), c.f.begin(), c.f.end());
    all.i.insert(all.i.end(), c.i.begin(), c.i.end());
  }
  std::vector<int64_t> map;
  map.reserve(static_cast<size_t>(numel(out)));
  for (int64_t o = 0; o < outer; ++o)
    for (size_t j = 0; j < a.size(); ++j) {
      int64_t chunk = a[j].shape[static_cast<size_t>(dim)] * inner;
      for (int64_t k = 0; k < chunk; ++k) map.push_back(base[j] + o * chunk + k);
    }
  return take(all, map, n.type.dtype, out);
}

// pixel_shuffle / pixel_unshuffle: the output is the input viewed as PixelShuffle::split,
// permuted by perm.
std::vector<int64_t> pixel_shuffle_map(const Node& n, const Shape& in, const Shape& out) {
  const PixelShuffle p = pixel_shuffle_of(n, in);
  const Shape split_strides = contiguous_strides(p.split);
  Shape permuted(p.perm.size()), view(p.perm.size());
  for (size_t d = 0; d < p.perm.size(); ++d) {
    permuted[d] = p.split[static_cast<size_t>(p.perm[d])];
    view[d] = split_strides[static_cast<size_t>(p.perm[d])];
  }
  if (numel(permuted) != numel(out)) throw InternalError("pixel_shuffle: the permuted view and the output differ in size");
  return view_map(permuted, view, 0);
}

int64_t checked_index(int64_t i, int64_t size, const Node& n) {
  int64_t r = i < 0 ? i + size : i;  // negative indices count from the end, as in torch.gather
  if (r < 0 || r >= size)
    throw UserError(fmt::format("node %{} = {}: index {} is out of range for a dimension of size {}", n.name, op_name(n.op), i, size));
  return r;
}

std::vector<int64_t> embedding_map(const Node& n, const Values& w, const Values& idx) {
  int64_t rows = w.shape[0], cols = w.shape[1];
  std::vector<int64_t> map;
  map.reserve(idx.size() * static_cast<size_t>(cols));
  for (size_t k = 0; k < idx.size(); ++k) {
    int64_t r = idx.as_int(k);
    if (r < 0 || r >= rows) throw UserError(fmt::format("node %{} = embedding: index {} is out of range for {} embeddings", n.name, r, rows));
    for (int64_t c = 0; c < cols; ++c) map.push_back(r * cols + c);
  }
  return map;
}

std::vector<int64_t> gather_map(const Node& n, const Values& x, const Values& idx, const Shape& out) {
  int64_t dim = normalize_dim(attr_int(n, "dim"), static_cast<int64_t>(x.shape.size()));
  Shape xs = contiguous_strides(x.shape);
  std::vector<int64_t> map(idx.size());
  std::vector<int64_t> pos(out.size(), 0);
  for (size_t i = 0; i < idx.size(); ++i) {
    int64_t off = 0;
    if (x.shape.empty()) checked_index(idx.as_int(i), gather_dim_size(n, x.shape), n);  // a 0-d input: no dim loop checks it
    for (size_t d = 0; d < pos.size(); ++d) {
      int64_t coord = static_cast<int64_t>(d) == dim ? checked_index(idx.as_int(i), x.shape[d], n) : pos[d];
      off += coord * xs[d];
    }
    map[i] = off;
    for (size_t d = pos.size(); d-- > 0;) {
      if (++pos[d] < out[d]) break;
      pos[d] = 0;
    }
  }
  return map;
}

// scatter_add: x, then each src element (at index's positions) added where its index points,
// in index order.
Values scatter_add(const Node& n, const Values& x, const Values& idx, const Values& src, const Shape& out) {
  const int64_t dim = normalize_dim(attr_int(n, "dim"), static_cast<int64_t>(x.shape.size()));
  const Shape xs = contiguous_strides(x.shape), ss = contiguous_strides(src.shape);
  std::vector<double> r = x.f;
  std::vector<int64_t> pos(idx.shape.size(), 0);
  for (size_t i = 0; i < idx.size(); ++i) {
    int64_t to = 0, from = 0;
    for (size_t d = 0; d < pos.size(); ++d) {
      const int64_t coord = static_cast<int64_t>(d) == dim ? checked_index(idx.as_int(i), x.shape[d], n) : pos[d];
      to += coord * xs[d];
      from += pos[d] * ss[d];
    }
    if (pos.empty()) checked_index(idx.as_int(i), 1, n);
    r[static_cast<size_t>(to)] += src.f[static_cast<size_t>(from)];
    for (size_t d = pos.size(); d-- > 0;) {
      if (++pos[d] < idx.shape[d]) break;
      pos[d] = 0;
    }
  }
  return Values::floats(n.type.dtype, out, std::move(r));
}

// Constant padding: the input's values, and `value` where a padded position has none.
Values pad(const Node& n, const Values& x, const Shape& out) {
  auto amounts = pad_amounts(n, static_cast<int64_t>(x.shape.size()));
  Shape in_strides = contiguous_strides(x.shape);
  std::vector<int64_t> map(static_cast<size_t>(numel(out)), -1);
  std::vector<int64_t> pos(out.size(), 0);
  for (size_t i = 0; i < map.size(); ++i) {
    int64_t src = 0;
    bool inside = true;
    for (size_t d = 0; d < out.size(); ++d) {
      int64_t c = pos[d] - amounts[d].first;
      inside &= c >= 0 && c < x.shape[d];
      src += c * in_strides[d];
    }
    if (inside) map[i] = src;
    for (size_t d = out.size(); d-- > 0;) {
      if (++pos[d] < out[d]) break;
      pos[d] = 0;
    }
  }
  double value = attr_float(n, "value");
  Values r;
  r.dtype = n.type.dtype;
  r.shape = out;
  if (x.is_int()) {
    r.i.resize(map.size());
    for (size_t k = 0; k < map.size(); ++k) r.i[k] = map[k] < 0 ? to_integer_dtype(value, r.dtype) : x.i[static_cast<size_t>(map[k])];
  } else {
    r.f.resize(map.size());
    for (size_t k = 0; k < map.size(); ++k) r.f[k] = map[k] < 0 ? value : x.f[static_cast<size_t>(map[k])];
  }
  return r;
}

}  // namespace

Values data_movement(const Node& n, const std::vector<Values>& a, const Shape& out) {
  DType dt = n.type.dtype;
  if (n.op == Op::cat) return cat(n, a, out);
  if (n.op == Op::pad) return pad(n, a[0], out);
  if (n.op == Op::embedding) return take(a[0], embedding_map(n, a[0], a[1]), dt, out);
  if (n.op == Op::gather) return take(a[0], gather_map(n, a[0], a[1], out), dt, out);
  if (n.op == Op::scatter_add) return scatter_add(n, a[0], a[1], a[2], out);
  if (n.op == Op::permute || n.op == Op::transpose) return take(a[0], permute_map(n, a[0].shape, out), dt, out);
  if (n.op == Op::slice) return take(a[0], slice_map(n, a[0].shape, out), dt, out);
  if (n.op == Op::pixel_shuffle || n.op == Op::pixel_unshuffle) return take(a[0], pixel_shuffle_map(n, a[0].shape, out), dt, out);
  if (n.op == Op::expand) return take(a[0], broadcast_map(out, a[0].shape), dt, out);
  return take(a[0], identity_map(a[0].size()), dt, out);  // reshape, squeeze, unsqueeze: same order
}

Values creation(const Node& n, const Shape& out) {
  const AttrValue& v = attr(n, "value");
  auto count = static_cast<size_t>(numel(out));
  if (!is_floating(n.type.dtype)) {
    int64_t x = v.is_bool() ? v.as_bool() : v.is_int() ? v.as_int() : to_integer_dtype(v.as_float(), n.type.dtype);
    return Values::ints(n.type.dtype, out, std::vector<int64_t>(count, x));
  }
  double x = v.is_bool() ? (v.as_bool() ? 1.0 : 0.0) : v.as_float();
  return Values::floats(n.type.dtype, out, std::vector<double>(count, x));
}

}  // namespace reprokit::kernels
