// Data-movement kernels: views that could not be folded into their consumers (a reshape of a
// layout that is not viewable, or a view with an injected fault), cat, embedding and gather
// with their index checks, and full.
#include <fmt/format.h>

#include "codegen.h"
#include "reprokit/ir/names.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/op_semantics.h"

namespace reprokit::codegen_detail {

// Where the trailing dims of `shape` that `a` reads one after another begin: the dims whose strides
// are those of a contiguous block (dims of size 1 skipped).
static size_t contiguous_from(const Access& a, const Shape& shape) {
  size_t first = shape.size();
  for (int64_t run = 1; first > 0; --first) {
    const size_t d = first - 1;
    if (shape[d] == 1) continue;
    if (a.strides[d] != run) break;
    run *= shape[d];
  }
  return first;
}

std::string Codegen::copy_kernel(int id) {
  const Node& n = g_.node(id);
  int src = n.operands[0].value;
  const char* ct = compute_type(n.type.dtype);
  // What is read: the view over the output's shape, or, for a reshape, the operand in its own
  // C order (element i of either is element i of the output).
  const std::optional<Access> view = view_access(id);
  const Access a = view ? *view : access(src);
  const Shape& shape = view ? n.type.shape : g_.node(src).type.shape;
  const size_t first = contiguous_from(a, shape);
  const Shape outer_shape(shape.begin(), shape.begin() + static_cast<std::ptrdiff_t>(first));
  const int64_t total = n.type.numel(), run = numel(Shape(shape.begin() + static_cast<std::ptrdiff_t>(first), shape.end()));
  if (target_.openmp && run >= 16 && run < total) {
    // Runs of the source that are contiguous (a permute that keeps the last dim: attention's heads
    // put back together) copied run by run, vectorised, the run's start computed once: through the
    // flat index it was four divisions and a gather an element (BERT's 4 x 12 x 128 x 64: 10x).
    Access outer = a;  // the dims before the run
    outer.strides.resize(first);
    std::string v = fmt::format("({}){}", ct, load_expr(a.dtype, ptr(outer), "start + j"));
    if (perturbs(id)) v = perturb_open(id) + v + ")";
    return loop("o", total / run, run) + fmt::format(
                                             " {{\n    const int64_t start = {};\n    #pragma omp simd\n    for (int64_t j = 0; j < {}; ++j) {{ "
                                             "const int64_t i = o * {} + j; {}[i] = {}; }}\n  }}\n",
                                             index_of(outer, outer_shape, outer_shape, "o"), run, run, buf(id), store_value(n.type.dtype, v));
  }
  std::string v = fmt::format("({}){}", ct, load_expr(a.dtype, ptr(a), index_of(a, shape, shape, "i")));
  if (perturbs(id)) v = perturb_open(id) + v + ")";
  return loop("i", total, 1, true) + fmt::format(" {}[i] = {};\n", buf(id), store_value(n.type.dtype, v));
}

std::string Codegen::cat_kernel(int id) {
  const Node& n = g_.node(id);
  int64_t dim = normalize_dim(attr_int(n, "dim"), n.type.rank());
  std::string s;
  int64_t offset = 0;
  Shape os = contiguous_strides(n.type.shape);
  for (auto& o : n.operands) {
    int src = o.value;
    const TensorType& t = g_.node(src).type;
    if (auto it = in_cat_.find(src); it != in_cat_.end() && it->second.first == id) {  // written in place by its own kernel
      offset += t.shape[static_cast<size_t>(dim)];
      continue;
    }
    std::string v = load(src, compute_type(n.type.dtype), t.shape, "i");
    if (perturbs(id)) v = perturb_open(id) + v + ")";
    const int64_t inner = os[static_cast<size_t>(dim)], run = t.shape[static_cast<size_t>(dim)] * inner;
    if (target_.openmp && run > 0) {
      // The operand is `outer` runs of `run` consecutive elements, each landing `offset` rows into
      // a run of the output: copied run by run, vectorised, without a division per element
      // (DenseNet's concatenations, copied element by element, took a tenth of its time).
      const int64_t outer = t.numel() / run, out_run = n.type.shape[static_cast<size_t>(dim)] * inner;
      std::string body = fmt::format("{}[b * {} + {} + j] = {};", buf(id), out_run, offset * inner, store_value(n.type.dtype, v));
      if (outer == 1) s += loop("i", run, 1, true) + fmt::format(" {{ const int64_t b = 0, j = i; {} }}\n", body);
      else
        s += loop("b", outer, run) +
             fmt::format(" {{\n    #pragma omp simd\n    for (int64_t j = 0; j < {}; ++j) {{ const int64_t i = b * {} + j; {} }}\n  }}\n", run, run,
                         body);
    } else {
      // Output element of source element i: the same index with `offset` added along dim.
      std::string out_idx = fmt::format("{} * {}", offset, inner);
      Shape ts = contiguous_strides(t.shape);
      for (size_t d = 0; d < t.shape.size(); ++d) out_idx += fmt::format(" + ((i / {}) % {}) * {}", ts[d], t.shape[d], os[d]);
      s += loop("i", t.numel(), 1) + fmt::format(" {}[{}] = {};\n", buf(id), out_idx, store_value(n.type.dtype, v));
    }
    offset += t.shape[static_cast<size_t>(dim)];
  }
  return s;
}

std::string Codegen::index_kernel(int id) {
  const Node& n = g_.node(id);
  int x = n.operands[0].value, ix = n.operands[1].value;
  const TensorType &xt = g_.node(x).type, &it = g_.node(ix).type;
  bool embedding = n.op == Op::embedding;
  std::string idx = load(ix, "int64_t", it.shape, embedding ? "q" : "i");
  int64_t bound = embedding ? xt.shape[0] : gather_dim_size(n, xt.shape);
  // The node is named through a string literal handed to a fixed format: never as a format.
  std::string node = c_string_literal(fmt::format("node %{} = {}", n.name, op_name(n.op)));
  // A bad index is recorded and reported after the loop: a parallel loop cannot be left early.
  const std::string flag = local("rk_bad_", id), flag_raw = local("rk_bad_raw_", id);
  std::string bad =
      !target_.errors_as_text
          ? fail(fmt::format("node %{} = {}: an index is out of range for a dimension of size {}", n.name, op_name(n.op), bound))
                .insert(1, " raw = 0; c = 0;")
          : fmt::format("{{\n#pragma omp critical(rk_index)\n      if (!{0}) {0} = 1, {1} = raw;\n      continue;\n    }}", flag, flag_raw);
  const std::string report =
      !target_.errors_as_text ? "" : fmt::format("  if ({}) {{ rk_index_error(err, errlen, {}, {}, {}); return 1; }}\n", flag, node, flag_raw, bound);
  std::string s = !target_.errors_as_text ? "" : fmt::format("  int {} = 0; long long {} = 0;\n", flag, flag_raw);
  Access xa = access(x);
  if (embedding) {
    int64_t rows = xt.shape[0], cols = xt.shape[1];
    s += loop("q", it.numel(), cols) + fmt::format(" {{\n    int64_t raw = {}, c = 0;\n", idx);
    s += fmt::format("    if (raw < 0 || raw >= {}) {}\n", rows, bad);
    std::string v = load_expr(xt.dtype, ptr(xa), fmt::format("{} + raw * {} + c * {}", xa.offset, xa.strides[0], xa.strides[1]));
    if (perturbs(id)) v = perturb_open(id) + v + ")";
    s += fmt::format("    for (c = 0; c < {}; ++c) {}[q * {} + c] = {};\n  }}\n", cols, buf(id), cols, store_value(n.type.dtype, v));
    return s + report;
  }
  int64_t dim = normalize_dim(attr_int(n, "dim"), xt.rank());
  Shape os = contiguous_strides(n.type.shape);
  int64_t size = gather_dim_size(n, xt.shape);
  std::string off = std::to_string(xa.offset);
  for (size_t d = 0; d < xt.shape.size(); ++d) {
    std::string coord = static_cast<int64_t>(d) == dim ? "c" : fmt::format("((i / {}) % {})", os[d], n.type.shape[d]);
    off += fmt::format(" + {} * {}", coord, xa.strides[d]);
  }
  s += loop("i", n.type.numel(), 1) + fmt::format(" {{\n    int64_t raw = {};\n    int64_t c = raw < 0 ? raw + {} : raw;\n", idx, size);
  s += fmt::format("    if (c < 0 || c >= {}) {}\n", size, bad);
  std::string v = load_expr(xt.dtype, ptr(xa), off);
  if (perturbs(id)) v = perturb_open(id) + v + ")";
  s += fmt::format("    {}[i] = {};\n  }}\n", buf(id), store_value(n.type.dtype, v));
  return s + report;
}

std::string Codegen::full_kernel(int id) {
  const Node& n = g_.node(id);
  std::string v = literal(attr(n, "value"), compute_type(n.type.dtype));
  return loop("i", n.type.numel(), 1, true) +
         fmt::format(" {}[i] = {};\n", buf(id), store_value(n.type.dtype, perturbs(id) ? perturb_open(id) + v + ")" : v));
}

}  // namespace reprokit::codegen_detail
