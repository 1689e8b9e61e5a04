// Reference kernels of matmul (batched, broadcasting batch dims) and linear (x @ w^T + b), in
// double. Independent of any BLAS: this is the ground truth the cpp backend is checked against.
#include "kernel_util.h"
#include "reprokit/ir/op_registry.h"

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

std::vector<double> matmul(const std::vector<Values>& a, const Shape& out_shape) {
  const Values &A = a[0], &B = a[1];
  int64_t n = A.shape[A.shape.size() - 2], k = A.shape.back(), m = B.shape.back();
  Shape batch(out_shape.begin(), out_shape.end() - 2);
  Shape ab(A.shape.begin(), A.shape.end() - 2), bb(B.shape.begin(), B.shape.end() - 2);
  auto ia = broadcast_map(batch, ab), ib = broadcast_map(batch, bb);
  std::vector<double> out(static_cast<size_t>(numel(out_shape)), 0.0);
  for (size_t bi = 0; bi < ia.size(); ++bi)
    matmul_2d(A.f.data() + ia[bi] * n * k, B.f.data() + ib[bi] * k * m, out.data() + static_cast<int64_t>(bi) * n * m, n, k, m, false);
  return out;
}

std::vector<double> linear(const std::vector<Values>& a, const Shape& out_shape) {
  const Values &X = a[0], &W = a[1];
  int64_t in = W.shape[1], outf = W.shape[0];
  int64_t rows = in ? static_cast<int64_t>(X.f.size()) / in : numel(out_shape) / std::max<int64_t>(outf, 1);
  std::vector<double> out(static_cast<size_t>(rows * outf), 0.0);
  matmul_2d(X.f.data(), W.f.data(), out.data(), rows, in, outf, true);
  if (a.size() > 2)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < outf; ++j) out[static_cast<size_t>(r * outf + j)] += a[2].f[static_cast<size_t>(j)];
  return out;
}

}  // namespace

Values linalg(const Node& n, const std::vector<Values>& a, const Shape& out) {
  return Values::floats(n.type.dtype, out, n.op == Op::linear ? linear(a, out) : matmul(a, out));
}

}  // namespace reprokit::kernels
