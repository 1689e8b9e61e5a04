// Batch slicing (batch_slicing.h): which dim of each value holds the samples, the graph for a
// slice of them, and how many samples a slice takes.
#include "batch_slicing.h"

#include <algorithm>

#include "reprokit/ir/dtype.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/op_semantics.h"
#include "reprokit/support/errors.h"

namespace reprokit {

namespace {

constexpr int kMixes = -2;  // the node mixes samples: the graph cannot be sliced

// The batch dims of a node's value operands (kNoBatch for literals).
std::vector<int> operand_dims(const Node& n, const std::vector<int>& dim) {
  std::vector<int> out;
  for (const Operand& o : n.operands) out.push_back(o.is_value() ? dim[static_cast<size_t>(o.value)] : kNoBatch);
  return out;
}

int64_t rank_of(const Graph& g, const Operand& o) { return o.is_value() ? g.node(o.value).type.rank() : 0; }

// Operands broadcast against each other (pointwise ops; a matmul's batch dims, `tail` = 2): every
// batched operand holds the batch in the same result dim, and an unbatched one is 1 long there
// (or does not reach it). The result dim, kNoBatch or kMixes.
int broadcast_dim(const Graph& g, const Node& n, const std::vector<int>& dims, int64_t rank, int64_t tail) {
  int at = kNoBatch;
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] == kNoBatch) continue;
    const int64_t r = rank_of(g, n.operands[k]);
    if (dims[k] >= r - tail) return kMixes;  // a matmul's row or contracted dim: handled by the caller
    const int here = static_cast<int>(dims[k] + (rank - r));
    if (at != kNoBatch && at != here) return kMixes;
    at = here;
  }
  if (at == kNoBatch) return kNoBatch;
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] != kNoBatch || !n.operands[k].is_value()) continue;
    const Shape& s = g.node(n.operands[k].value).type.shape;
    const int64_t pos = at - (rank - static_cast<int64_t>(s.size()));
    if (pos >= 0 && s[static_cast<size_t>(pos)] != 1) return kMixes;
  }
  return at;
}

// Only operand 0 may hold the batch (the others are weights); the result holds it where `moved`
// says operand 0's dim d lands, or kMixes.
template <typename Moved> int first_operand_only(const std::vector<int>& dims, Moved moved) {
  for (size_t k = 1; k < dims.size(); ++k)
    if (dims[k] != kNoBatch) return kMixes;
  return dims[0] == kNoBatch ? kNoBatch : moved(dims[0]);
}

// matmul: the batch in a's or b's batch dims (broadcast), in a's rows or in b's columns.
int matmul_dim(const Graph& g, const Node& n, const std::vector<int>& dims) {
  const int64_t ra = rank_of(g, n.operands[0]), rb = rank_of(g, n.operands[1]);
  if (ra < 2 || rb < 2) return (dims[0] == kNoBatch && dims[1] == kNoBatch) ? kNoBatch : kMixes;
  const int rank = static_cast<int>(n.type.rank());
  if (dims[0] == ra - 2) return dims[1] == kNoBatch ? rank - 2 : kMixes;  // rows of a
  if (dims[1] == rb - 1) return dims[0] == kNoBatch ? rank - 1 : kMixes;  // columns of b
  return broadcast_dim(g, n, dims, rank, 2);
}

// reshape: the batch dim stays a dim of its own, at the same count of elements before it.
int reshape_dim(const Shape& in, const Shape& out, int d) {
  int64_t before = 1;
  for (int k = 0; k < d; ++k) before *= in[static_cast<size_t>(k)];
  int64_t acc = 1;
  for (size_t k = 0; k < out.size(); ++k) {
    if (acc == before && out[k] == in[static_cast<size_t>(d)]) return static_cast<int>(k);
    if (acc > before) break;
    acc *= out[k];
  }
  return kMixes;
}

// The batch dim of node n's value from its operands'.
int node_dim(const Graph& g, const Node& n, const std::vector<int>& dim) {
  const std::vector<int> dims = operand_dims(n, dim);
  if (std::all_of(dims.begin(), dims.end(), [](int d) { return d == kNoBatch; })) return kNoBatch;  // weights alone
  if (std::any_of(dims.begin(), dims.end(), [](int d) { return d == kMixes; })) return kMixes;
  const int64_t rank = n.type.rank();
  if (is_pointwise(n.op)) return broadcast_dim(g, n, dims, rank, 0);
  const auto unless = [](bool mixes, int d) { return mixes ? kMixes : d; };
  const Shape& in = g.node(n.operands[0].value).type.shape;  // operand 0 is a value past pointwise ops
  switch (n.op) {
    case Op::sum:
    case Op::amax:
    case Op::amin:
    case Op::mean:
    case Op::var:
    case Op::argmax: {
      const auto reduced = reduction_dims(n, static_cast<int64_t>(in.size()));
      if (std::find(reduced.begin(), reduced.end(), dims[0]) != reduced.end()) return kMixes;
      if (attr_bool(n, "keepdim")) return dims[0];
      return dims[0] - static_cast<int>(std::count_if(reduced.begin(), reduced.end(), [&](int64_t r) { return r < dims[0]; }));
    }
    case Op::softmax:
    case Op::log_softmax: return unless(normalize_dim(attr_int(n, "dim"), rank) == dims[0], dims[0]);
    case Op::layer_norm: {
      const auto normalized = layer_norm_dims(n, rank);
      return first_operand_only(dims, [&](int d) { return unless(std::find(normalized.begin(), normalized.end(), d) != normalized.end(), d); });
    }
    case Op::batch_norm: return first_operand_only(dims, [&](int d) { return unless(d == 1, d); });
    case Op::group_norm:
    case Op::instance_norm: return first_operand_only(dims, [&](int d) { return unless(d != 0, d); });
    case Op::matmul: return matmul_dim(g, n, dims);
    case Op::linear: return first_operand_only(dims, [&](int d) { return unless(d == rank - 1, d); });
    case Op::conv2d:
    case Op::conv3d:
    case Op::conv_transpose2d:
    case Op::conv_transpose3d:
    case Op::max_pool2d:
    case Op::avg_pool2d:
    case Op::adaptive_avg_pool2d:
    case Op::max_pool3d:
    case Op::avg_pool3d: return first_operand_only(dims, [&](int d) { return unless(d != 0, d); });
    case Op::reshape: return reshape_dim(in, n.type.shape, dims[0]);
    case Op::permute:
    case Op::transpose: {
      const auto source = permutation(n, rank);
      return static_cast<int>(std::find(source.begin(), source.end(), dims[0]) - source.begin());
    }
    case Op::expand: return dims[0] + static_cast<int>(rank - static_cast<int64_t>(in.size()));
    case Op::slice: return unless(slice_bounds(n, in).dim == dims[0], dims[0]);
    case Op::cat: {
      const bool all_at_d = std::all_of(dims.begin(), dims.end(), [&](int d) { return d == dims[0]; });
      return unless(!all_at_d || normalize_dim(attr_int(n, "dim"), rank) == dims[0], dims[0]);
    }
    case Op::squeeze: {
      if (rank == static_cast<int64_t>(in.size())) return dims[0];  // not 1 long: no-op, as torch
      const int64_t sq = normalize_dim(attr_int(n, "dim"), static_cast<int64_t>(in.size()));
      return unless(sq == dims[0], dims[0] - (sq < dims[0] ? 1 : 0));
    }
    case Op::unsqueeze: return dims[0] + (normalize_dim(attr_int(n, "dim"), rank) <= dims[0] ? 1 : 0);
    case Op::contiguous: return dims[0];
    case Op::pad: {
      const auto amounts = pad_amounts(n, static_cast<int64_t>(in.size()));
      return unless(amounts[static_cast<size_t>(dims[0])] != std::pair<int64_t, int64_t>{0, 0}, dims[0]);
    }
    case Op::pixel_shuffle:
    case Op::pixel_unshuffle: return unless(dims[0] >= rank - 3, dims[0]);
    case Op::embedding: return dims[0] == kNoBatch ? dims[1] : kMixes;
    case Op::gather: return unless(dims[1] != dims[0] || normalize_dim(attr_int(n, "dim"), rank) == dims[0], dims[0]);
    case Op::grid_sample: return unless(dims[0] != 0 || dims[1] != 0, 0);
    case Op::cumsum:
    case Op::cumprod:
    case Op::sort:
    case Op::argsort:
    case Op::topk:
    case Op::topk_indices: return unless(scan_lines(n, in).dim == dims[0], dims[0]);
    default: return kMixes;  // einsum, scatter_add, affine_grid, the backward ops: not analysed
  }
}

}  // namespace

namespace {

// The batch dims of every node given those of the inputs (`dims`, the rest kNoBatch); nullopt
// when a node mixes samples or an output does not hold the batch in dim 0.
std::optional<BatchDims> follow_batch(const Graph& g, BatchDims dims) {
  for (int id = g.num_inputs(); id < g.size(); ++id) {
    const int d = node_dim(g, g.node(id), dims.dim);
    if (d == kMixes) return std::nullopt;
    dims.dim[static_cast<size_t>(id)] = d;
  }
  for (int o : g.outputs)
    if (dims.dim[static_cast<size_t>(o)] != 0) return std::nullopt;
  return dims;
}

}  // namespace

std::optional<BatchDims> batch_dims(const Graph& g, const std::set<std::string>& frozen) {
  BatchDims all, first;  // every input not frozen that is as long as the batch holds it; the first alone
  all.dim.assign(static_cast<size_t>(g.size()), kNoBatch);
  first.dim = all.dim;
  for (int i = 0; i < g.num_inputs(); ++i) {
    const Node& in = g.node(i);
    if (frozen.count(in.name) || in.type.rank() == 0) continue;
    if (all.batch == 0) all.batch = first.batch = in.type.shape[0], first.dim[static_cast<size_t>(i)] = 0;
    if (in.type.shape[0] == all.batch) all.dim[static_cast<size_t>(i)] = 0;
  }
  if (all.batch < 2) return std::nullopt;
  // Without frozen inputs a weight as long as the batch (32 filters at batch 32) looks batched,
  // and a conv then mixes samples; the first input alone may still slice. Either is sound: the
  // analysis proves each output sample reads only its own slice of the inputs it marks.
  if (auto dims = follow_batch(g, std::move(all))) return dims;
  return follow_batch(g, std::move(first));
}

std::optional<Graph> graph_for_slice(const Graph& g, const BatchDims& dims, int64_t slice) {
  const auto sliced = [&](int id) {
    TensorType t = g.node(id).type;
    if (const int d = dims.dim[static_cast<size_t>(id)]; d != kNoBatch) t.shape[static_cast<size_t>(d)] = slice;
    return t;
  };
  Graph out;
  out.name = g.name;
  for (int i = 0; i < g.num_inputs(); ++i) {
    Node in = g.node(i);
    in.type = sliced(i);
    if (!in.type.strides.empty()) return std::nullopt;  // slices of declared strides: not taken
    out.nodes.push_back(std::move(in));
  }
  try {
    for (int id = g.num_inputs(); id < g.size(); ++id) {
      const Node& n = g.node(id);
      Attrs attrs = n.attrs;
      const int d = dims.dim[static_cast<size_t>(id)];
      if (d != kNoBatch && (n.op == Op::reshape || n.op == Op::expand)) {
        Shape shape = n.op == Op::reshape ? n.type.shape : attr_ints(n, "shape");
        if (n.op == Op::reshape || shape[static_cast<size_t>(d)] != -1) shape[static_cast<size_t>(d)] = slice;
        attrs["shape"] = AttrValue::ints(shape);
      }
      out.add_node(n.name, n.op, n.operands, std::move(attrs));
      TensorType& t = out.nodes.back().type;
      t.requires_grad = n.type.requires_grad;  // as the graph had it: inference may mark more
      if (t != sliced(id)) return std::nullopt;
    }
  } catch (const VerifyError&) { return std::nullopt; }
  out.outputs = g.outputs;
  return out;
}

int64_t slice_samples(const Graph& g, const BatchDims& dims) {
  int64_t largest = 0;  // bytes of one sample of the largest batched value
  for (int id = g.num_inputs(); id < g.size(); ++id)
    if (dims.dim[static_cast<size_t>(id)] != kNoBatch) {
      const TensorType& t = g.node(id).type;
      largest = std::max(largest, t.numel() / dims.batch * static_cast<int64_t>(dtype_size(t.dtype)));
    }
  if (largest * dims.batch <= kSliceValueBytes) return dims.batch;
  // Down from the most that fit (not up from 1: a graph may declare a batch of 2^31).
  for (int64_t s = std::min(dims.batch - 1, kSliceValueBytes / std::max<int64_t>(largest, 1)); s >= 2; --s)
    if (dims.batch % s == 0) return s;
  return 1;
}

std::optional<BatchSlicing> plan_batch_slicing(const Graph& g, const std::set<std::string>& frozen) {
  std::optional<BatchDims> dims = batch_dims(g, frozen);
  if (!dims) return std::nullopt;
  const int64_t samples = slice_samples(g, *dims);
  if (samples == dims->batch) return std::nullopt;
  std::optional<Graph> slice = graph_for_slice(g, *dims, samples);
  if (!slice) return std::nullopt;
  BatchSlicing out{std::move(*slice), samples, dims->batch / samples, {}};
  for (int i = 0; i < g.num_inputs(); ++i) out.input_batched.push_back(dims->dim[static_cast<size_t>(i)] == 0);
  return out;
}

}  // namespace reprokit
