// Reference kernels of matmul (batched, broadcasting batch dims), linear (x @ w^T + b) and einsum,
// in double. Independent of any BLAS: this is the ground truth the cpp backend is checked against.
#include <algorithm>

#include "accumulation.h"
#include "kernel_util.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/op_semantics.h"

namespace reprokit::kernels {

namespace {

// c[i, j] += sum_k a[i, k] * b[k, j] for one matrix pair (b given as [m, k] when transposed).
void matmul_2d(const double* a, const double* b, double* c, int64_t n, int64_t k, int64_t m, bool b_transposed) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t p = 0; p < k; ++p) {
      double av = a[i * k + p];
      if (b_transposed) {
        for (int64_t j = 0; j < m; ++j) c[i * m + j] += av * b[j * k + p];
      } else {
        const double* brow = b + p * m;
        for (int64_t j = 0; j < m; ++j) c[i * m + j] += av * brow[j];
      }
    }
}

// The same product with the k terms of each element added in `order` (one k per step).
void matmul_2d_ordered(const double* a, const double* b, double* c, int64_t n, int64_t k, int64_t m, bool b_transposed, AccumulationOrder order,
                       bool f64) {
  StepSum sum(order, n * m, k, f64);
  for (int64_t s = 0; s < k; ++s) {
    const int64_t p = sum.step_at(s);
    double* t = sum.open();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) t[i * m + j] = a[i * k + p] * (b_transposed ? b[j * k + p] : b[p * m + j]);
    sum.close();
  }
  sum.finish(c);
}

void product(const double* a, const double* b, double* c, int64_t n, int64_t k, int64_t m, bool b_transposed, AccumulationOrder order, bool f64) {
  if (order == AccumulationOrder::exact) matmul_2d(a, b, c, n, k, m, b_transposed);
  else matmul_2d_ordered(a, b, c, n, k, m, b_transposed, order, f64);
}

std::vector<double> matmul(const std::vector<Values>& a, const Shape& out_shape, AccumulationOrder order, bool f64) {
  const Values &A = a[0], &B = a[1];
  int64_t n = A.shape[A.shape.size() - 2], k = A.shape.back(), m = B.shape.back();
  Shape batch(out_shape.begin(), out_shape.end() - 2);
  Shape ab(A.shape.begin(), A.shape.end() - 2), bb(B.shape.begin(), B.shape.end() - 2);
  auto ia = broadcast_map(batch, ab), ib = broadcast_map(batch, bb);
  std::vector<double> out(static_cast<size_t>(numel(out_shape)), 0.0);
  for (size_t bi = 0; bi < ia.size(); ++bi)
    product(A.f.data() + ia[bi] * n * k, B.f.data() + ib[bi] * k * m, out.data() + static_cast<int64_t>(bi) * n * m, n, k, m, false, order, f64);
  return out;
}

std::vector<double> linear(const std::vector<Values>& a, const Shape& out_shape, AccumulationOrder order, bool f64) {
  const Values &X = a[0], &W = a[1];
  int64_t in = W.shape[1], outf = W.shape[0];
  int64_t rows = in ? static_cast<int64_t>(X.f.size()) / in : numel(out_shape) / std::max<int64_t>(outf, 1);
  std::vector<double> out(static_cast<size_t>(rows * outf), 0.0);
  product(X.f.data(), W.f.data(), out.data(), rows, in, outf, true, order, f64);
  if (a.size() > 2)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < outf; ++j) out[static_cast<size_t>(r * outf + j)] += a[2].f[static_cast<size_t>(j)];
  return out;
}

// einsum: every combination of the letters' indices, output letters outermost; the product of
// the operands' elements summed into the output element.
std::vector<double> einsum(const Node& n, const std::vector<Values>& a, const Shape& out) {
  std::vector<Shape> shapes;
  for (const auto& v : a) shapes.push_back(v.shape);
  const EinsumSpec s = einsum_spec(attr(n, "equation").as_string(), shapes);
  std::string letters = s.output;
  for (const auto& [c, size] : s.sizes)
    if (s.output.find(c) == std::string::npos) letters += c;
  Shape extent;
  for (char c : letters) extent.push_back(s.sizes.at(c));
  std::vector<Shape> stride(a.size(), Shape(letters.size(), 0));  // operand k's stride per letter
  for (size_t k = 0; k < a.size(); ++k) {
    const Shape st = contiguous_strides(a[k].shape);
    for (size_t i = 0; i < s.inputs[k].size(); ++i) stride[k][letters.find(s.inputs[k][i])] = st[i];
  }
  std::vector<double> result(static_cast<size_t>(numel(out)), 0.0);
  const int64_t total = numel(extent), inner = total / std::max<int64_t>(numel(out), 1);
  std::vector<int64_t> idx(letters.size(), 0), offset(a.size(), 0);
  for (int64_t flat = 0; flat < total; ++flat) {
    double p = 1;
    for (size_t k = 0; k < a.size(); ++k) p *= a[k].f[static_cast<size_t>(offset[k])];
    result[static_cast<size_t>(flat / inner)] += p;
    for (size_t d = letters.size(); d-- > 0;) {  // the next index, last letter fastest
      for (size_t k = 0; k < a.size(); ++k) offset[k] += stride[k][d];
      if (++idx[d] < extent[d]) break;
      for (size_t k = 0; k < a.size(); ++k) offset[k] -= stride[k][d] * extent[d];
      idx[d] = 0;
    }
  }
  return result;
}

}  // namespace

Values linalg(const Node& n, const std::vector<Values>& a, const Shape& out, AccumulationOrder order) {
  bool f64 = n.type.dtype == DType::f64;
  if (n.op == Op::einsum) return Values::floats(n.type.dtype, out, einsum(n, a, out));
  return Values::floats(n.type.dtype, out, n.op == Op::linear ? linear(a, out, order, f64) : matmul(a, out, order, f64));
}

}  // namespace reprokit::kernels
