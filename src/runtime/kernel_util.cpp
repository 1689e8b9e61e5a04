// Values and index helpers of the reference kernels (see kernel_util.h).
#include "kernel_util.h"

#include "strided_walk.h"

namespace reprokit::kernels {

Values Values::of(const Tensor& t) {
  Values v;
  v.dtype = t.dtype();
  v.shape = t.shape();
  if (v.is_int()) v.i = t.to_int64s();
  else v.f = t.to_doubles();
  return v;
}

Values Values::floats(DType dtype, Shape shape, std::vector<double> v) {
  Values r;
  r.dtype = dtype;
  r.shape = std::move(shape);
  r.f = std::move(v);
  return r;
}

Values Values::ints(DType dtype, Shape shape, std::vector<int64_t> v) {
  Values r;
  r.dtype = dtype;
  r.shape = std::move(shape);
  r.i = std::move(v);
  return r;
}

std::vector<int64_t> view_map(const Shape& shape, const Shape& strides, int64_t offset) {
  std::vector<int64_t> out(static_cast<size_t>(numel(shape)));
  walk_strided(shape, strides, offset, [&](int64_t i, int64_t off) { out[static_cast<size_t>(i)] = off; });
  return out;
}

std::vector<int64_t> broadcast_map(const Shape& out_shape, const Shape& in_shape) {
  // A view of `in` with stride 0 on broadcast dimensions.
  Shape strides(out_shape.size(), 0);
  Shape in_strides = contiguous_strides(in_shape);
  size_t lead = out_shape.size() - in_shape.size();
  for (size_t d = 0; d < in_shape.size(); ++d) strides[lead + d] = in_shape[d] == 1 ? 0 : in_strides[d];
  return view_map(out_shape, strides, 0);
}

Values take(const Values& v, const std::vector<int64_t>& map, DType dtype, const Shape& shape) {
  Values r;
  r.dtype = dtype;
  r.shape = shape;
  if (v.is_int()) {
    r.i.resize(map.size());
    for (size_t k = 0; k < map.size(); ++k) r.i[k] = v.i[static_cast<size_t>(map[k])];
  } else {
    r.f.resize(map.size());
    for (size_t k = 0; k < map.size(); ++k) r.f[k] = v.f[static_cast<size_t>(map[k])];
  }
  return r;
}

}  // namespace reprokit::kernels
