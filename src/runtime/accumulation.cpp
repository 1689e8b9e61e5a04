// Sums in a chosen order (see accumulation.h).
#include "accumulation.h"

#include <algorithm>

namespace reprokit::kernels {

namespace {
// Interleaved partial sums: 8 (a 256-bit float vector), 32 (512-bit vectors, two accumulators).
int64_t lanes_of(AccumulationOrder o) { return o == AccumulationOrder::wide ? 32 : 8; }
bool interleaved(AccumulationOrder o) { return o == AccumulationOrder::blocked || o == AccumulationOrder::wide; }
}  // namespace

StepSum::StepSum(AccumulationOrder order, int64_t n, int64_t steps, bool f64)
    : order_(order), n_(n), steps_(steps), f64_(f64), step_(static_cast<size_t>(n), 0.0) {
  size_t parts = interleaved(order) ? static_cast<size_t>(lanes_of(order)) : order == AccumulationOrder::pairwise ? 64 : 1;
  if (order != AccumulationOrder::pairwise) parts_.assign(parts, std::vector<double>(static_cast<size_t>(n), 0.0));
  else parts_.resize(parts), used_.assign(parts, false);
}

double* StepSum::open() {
  std::fill(step_.begin(), step_.end(), 0.0);
  return step_.data();
}

void StepSum::fold(std::vector<double>& into, const std::vector<double>& t) const {
  for (size_t i = 0; i < into.size(); ++i) into[i] = round(into[i] + t[i]);
}

void StepSum::close() {
  switch (order_) {
    case AccumulationOrder::exact:
      for (size_t i = 0; i < step_.size(); ++i) parts_[0][i] += step_[i];
      break;
    case AccumulationOrder::forward:
    case AccumulationOrder::reversed: fold(parts_[0], step_); break;
    case AccumulationOrder::blocked:
    case AccumulationOrder::wide: fold(parts_[static_cast<size_t>(done_ % lanes_of(order_))], step_); break;
    case AccumulationOrder::pairwise: {
      // A binary counter of partial sums: level L holds the sum of 2^L consecutive steps.
      std::vector<double> carry(step_.begin(), step_.end());
      for (size_t level = 0;; ++level) {
        if (!used_[level]) {
          parts_[level] = std::move(carry);
          used_[level] = true;
          break;
        }
        fold(carry, parts_[level]);
        used_[level] = false;
      }
      break;
    }
  }
  ++done_;
}

void StepSum::finish(double* out) {
  std::vector<double> total(static_cast<size_t>(n_), 0.0);
  if (order_ == AccumulationOrder::pairwise) {
    for (size_t level = 0; level < parts_.size(); ++level)
      if (used_[level]) fold(total, parts_[level]);
  } else if (interleaved(order_)) {
    // The lanes combined pairwise, as a horizontal SIMD sum does.
    for (int64_t width = lanes_of(order_) / 2; width >= 1; width /= 2)
      for (int64_t l = 0; l < width; ++l) fold(parts_[static_cast<size_t>(l)], parts_[static_cast<size_t>(l + width)]);
    total = parts_[0];
  } else {
    total = parts_[0];
  }
  for (size_t i = 0; i < total.size(); ++i) out[i] = order_ == AccumulationOrder::exact ? out[i] + total[i] : round(out[i] + total[i]);
}

namespace {
double rounded(double v, bool f64) { return f64 ? v : static_cast<double>(static_cast<float>(v)); }

double pairwise_sum(const double* t, int64_t k, bool f64) {
  if (k <= 2) return k == 0 ? 0.0 : k == 1 ? t[0] : rounded(t[0] + t[1], f64);
  int64_t half = k / 2;
  return rounded(pairwise_sum(t, half, f64) + pairwise_sum(t + half, k - half, f64), f64);
}
}  // namespace

double ordered_sum(const double* t, int64_t k, AccumulationOrder order, bool f64) {
  double acc = 0;
  switch (order) {
    case AccumulationOrder::exact:
      for (int64_t i = 0; i < k; ++i) acc += t[i];
      return acc;
    case AccumulationOrder::forward:
      for (int64_t i = 0; i < k; ++i) acc = rounded(acc + t[i], f64);
      return acc;
    case AccumulationOrder::reversed:
      for (int64_t i = k - 1; i >= 0; --i) acc = rounded(acc + t[i], f64);
      return acc;
    case AccumulationOrder::pairwise: return pairwise_sum(t, k, f64);
    case AccumulationOrder::blocked:
    case AccumulationOrder::wide: {
      const int64_t n = lanes_of(order);
      double lanes[32] = {};
      for (int64_t i = 0; i < k; ++i) lanes[i % n] = rounded(lanes[i % n] + t[i], f64);
      for (int64_t width = n / 2; width >= 1; width /= 2)
        for (int64_t l = 0; l < width; ++l) lanes[l] = rounded(lanes[l] + lanes[l + width], f64);
      return lanes[0];
    }
  }
  return acc;
}

}  // namespace reprokit::kernels
