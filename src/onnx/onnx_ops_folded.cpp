// The importer's handlers for ONNX ops that reprokit evaluates at import time only: their inputs
// must be known then (constants, shape arithmetic on static shapes, or model inputs whose values
// the user gives), and their result is a constant of the imported graph. Exporters emit them for
// index bookkeeping — swin_t's shifted-window masks are a ScatterND into zeros and a Mod of
// constant offsets — where the op set has no need of them at run time. On a value computed at run
// time they are refused naming the node and the input (NodeCtx::need_constant).
#include <fmt/format.h>

#include <cmath>
#include <string>
#include <vector>

#include "handler_util.h"
#include "import_context.h"
#include "reprokit/ir/op_semantics.h"
#include "reprokit/support/errors.h"

namespace reprokit::onnx_detail {

namespace {

// For each flat index of `out`, the flat index of the tensor of shape `in` broadcast to it.
std::vector<int64_t> broadcast_index(const Shape& in, const Shape& out) {
  const size_t r = out.size(), off = r - in.size();
  Shape stride(r, 0);
  int64_t s = 1;
  for (size_t k = in.size(); k-- > 0;) {
    stride[k + off] = in[k] == 1 ? 0 : s;
    s *= in[k];
  }
  std::vector<int64_t> idx(static_cast<size_t>(numel(out)));
  Shape pos(r, 0);
  for (size_t flat = 0; flat < idx.size(); ++flat) {
    int64_t at = 0;
    for (size_t k = 0; k < r; ++k) at += pos[k] * stride[k];
    idx[flat] = at;
    for (size_t k = r; k-- > 0;) {
      if (++pos[k] < out[k]) break;
      pos[k] = 0;
    }
  }
  return idx;
}

// Mod: fmod=0 is the remainder with the divisor's sign (integers only, as ONNX specifies),
// fmod=1 the one with the dividend's sign (C's fmod).
void mod(NodeCtx& c) {
  c.allow({"fmod"});
  const int64_t fmod = c.attr_int("fmod", 0);
  if (fmod != 0 && fmod != 1) c.bad(fmt::format("fmod {} (0 or 1)", fmod));
  if (c.dtype(0) != c.dtype(1)) c.bad(fmt::format("A is {}, B is {}", dtype_name(c.dtype(0)), dtype_name(c.dtype(1))));
  const DType dt = c.dtype(0);
  const bool floating = is_floating(dt);
  if (floating && fmod == 0) c.bad("fmod must be 1 for floating-point inputs");
  if (dt == DType::boolean) c.bad("Mod of booleans");
  const Tensor a = c.need_constant(0, "A"), b = c.need_constant(1, "B");
  const auto shape = broadcast_shapes(a.shape(), b.shape());
  if (!shape) c.bad(fmt::format("A {} and B {} do not broadcast", shape_str(a.shape()), shape_str(b.shape())));
  if (numel(*shape) > kFoldLimit) c.unsupported(fmt::format("a Mod of {} elements (import-time evaluation stops at {})", numel(*shape), kFoldLimit));
  const auto ia = broadcast_index(a.shape(), *shape), ib = broadcast_index(b.shape(), *shape);
  Tensor out = Tensor::zeros(dt, *shape);
  for (size_t k = 0; k < ia.size(); ++k) {
    const auto flat = static_cast<int64_t>(k);
    if (floating) {
      out.set(flat, std::fmod(a.get(ia[k]), b.get(ib[k])));
      continue;
    }
    const int64_t x = a.get_int(ia[k]), y = b.get_int(ib[k]);
    if (y == 0) c.bad(fmt::format("integer Mod by zero (element {} of B)", ib[k]));
    if (y == -1) {  // also INT64_MIN % -1, which traps
      out.set_int(flat, 0);
      continue;
    }
    int64_t r = x % y;
    if (fmod == 0 && r != 0 && ((r < 0) != (y < 0))) r += y;
    out.set_int(flat, r);
  }
  c.set_const(0, out);
}

// ScatterND: a copy of data with the slices that indices' last dim addresses replaced by (or
// combined with, reduction add/mul) the matching slices of updates.
void scatter_nd(NodeCtx& c) {
  c.allow({"reduction"});
  const std::string reduction = c.attr_string("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul") c.unsupported(fmt::format("reduction '{}' (none, add or mul)", reduction));
  const Tensor data = c.need_constant(0, "data");
  const Tensor indices = c.need_constant(1, "indices");
  const Tensor updates = c.need_constant(2, "updates");
  if (!is_integral(indices.dtype()) || indices.dtype() == DType::boolean) c.bad("indices must be integers");
  if (updates.dtype() != data.dtype()) c.bad(fmt::format("updates are {}, data is {}", dtype_name(updates.dtype()), dtype_name(data.dtype())));
  const Shape& ds = data.shape();
  const Shape& is = indices.shape();
  if (is.empty()) c.bad("indices must have rank >= 1");
  const int64_t k = is.back();
  if (k < 1 || k > data.rank()) c.bad(fmt::format("indices' last dim {} must be in [1, {}] (data's rank)", k, data.rank()));
  // updates' shape: indices' shape without its last dim, then data's dims after the first k.
  Shape want(is.begin(), is.end() - 1);
  want.insert(want.end(), ds.begin() + k, ds.end());
  if (updates.shape() != want)
    c.bad(fmt::format("updates are {}, indices {} and data {} need {}", shape_str(updates.shape()), shape_str(is), shape_str(ds), shape_str(want)));
  int64_t slice = 1;
  for (size_t d = static_cast<size_t>(k); d < ds.size(); ++d) slice *= ds[d];
  const bool ints = !is_floating(data.dtype());
  Tensor out = data.to(data.dtype());  // a copy (constants share storage)
  const std::vector<int64_t> idx = indices.to_int64s();
  const int64_t tuples = numel(is) / k;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t base = 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t dim = ds[static_cast<size_t>(j)];
      int64_t x = idx[static_cast<size_t>(t * k + j)];
      if (x < -dim || x >= dim) c.bad(fmt::format("index {} is out of range for dim {} of size {}", x, j, dim));
      if (x < 0) x += dim;
      base = base * dim + x;
    }
    base *= slice;
    for (int64_t e = 0; e < slice; ++e) {
      const int64_t to = base + e, from = t * slice + e;
      if (ints) {
        // In uint64, so overflow wraps (as set_int wraps to the dtype) instead of being undefined.
        const auto u = static_cast<uint64_t>(updates.get_int(from)), cur = static_cast<uint64_t>(out.get_int(to));
        out.set_int(to, static_cast<int64_t>(reduction == "add" ? cur + u : reduction == "mul" ? cur * u : u));
      } else {
        const double u = updates.get(from), cur = out.get(to);
        out.set(to, reduction == "add" ? cur + u : reduction == "mul" ? cur * u : u);
      }
    }
  }
  c.set_const(0, out);
}

}  // namespace

const std::map<std::string, Handler, std::less<>>& folded_handlers() {
  static const std::map<std::string, Handler, std::less<>> table{
      {"Mod", mod},
      {"ScatterND", scatter_nd},
  };
  return table;
}

}  // namespace reprokit::onnx_detail
