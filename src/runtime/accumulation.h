// Sums accumulated in a chosen order at the working precision of a compiled kernel, for the noise
// floor: a compiled sum, matmul or convolution adds its terms in float32 in some order (forward, or
// reversed, split across SIMD lanes or threads, pairwise), and every order is as right as another.
// The reference kernels normally add in double ("exact"); with another order they round every
// partial sum as a float32 kernel (f64 results: a float64 kernel) would.
#pragma once
#include <cstdint>
#include <vector>

#include "reprokit/runtime/interpreter.h"

namespace reprokit::kernels {

// n running sums fed one step at a time: step s adds t[i] to sum i for every i. Kernels in axpy
// form (conv2d: one tap per step; matmul: one k per step) write each step's terms into the
// buffer `open()` returns and call `close()`; `finish` adds the sums into out.
class StepSum {
 public:
  // f64: round partial sums to double (a float64 result) instead of float.
  StepSum(AccumulationOrder order, int64_t n, int64_t steps, bool f64);
  // The step to compute at loop iteration s (the reversed order runs the steps backwards).
  int64_t step_at(int64_t s) const { return order_ == AccumulationOrder::reversed ? steps_ - 1 - s : s; }
  double* open();
  void close();
  void finish(double* out);

 private:
  double round(double v) const { return f64_ ? v : static_cast<double>(static_cast<float>(v)); }
  void fold(std::vector<double>& into, const std::vector<double>& t) const;

  AccumulationOrder order_;
  int64_t n_, steps_, done_ = 0;
  bool f64_;
  std::vector<double> step_;
  std::vector<std::vector<double>> parts_;  // forward/reversed: 1; blocked: one per lane; pairwise: one per level
  std::vector<bool> used_;                  // pairwise: levels holding a partial sum
};

// The sum of t[0..k) in `order`, partial sums rounded as above (a scalar StepSum).
double ordered_sum(const double* t, int64_t k, AccumulationOrder order, bool f64);

}  // namespace reprokit::kernels
