// Helpers of the codegen tests: run a graph through a backend and compare with the reference.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "../../src/codegen/cuda_backend.h"

#include "reprokit/codegen/compiler.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/runtime/input_gen.h"
#include "reprokit/runtime/interpreter.h"

namespace reprokit::testing {

inline std::string test_cache_dir() { return std::string(REPROKIT_BINARY_DIR) + "/test-cache"; }

// Largest error of outputs `got` against the reference's `ref`, relative to each output's scale
// (NaN where the reference has NaN, and equal infinities, are no error; a size mismatch is infinite).
inline double max_error_against(const std::vector<Tensor>& got, const std::vector<Tensor>& ref) {
  double worst = 0;
  for (size_t k = 0; k < ref.size(); ++k) {
    auto a = got[k].to_doubles(), b = ref[k].to_doubles();
    if (a.size() != b.size()) return INFINITY;
    double scale = 1;
    for (double v : b)
      if (std::isfinite(v)) scale = std::max(scale, std::fabs(v));
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::isnan(a[i]) && std::isnan(b[i])) continue;
      if (std::isinf(b[i]) && a[i] == b[i]) continue;
      worst = std::max(worst, std::fabs(a[i] - b[i]) / scale);
    }
  }
  return worst;
}

// Largest error of a compiled graph's run on `inputs` against the float64 reference (a graph run
// again on other inputs: what it keeps from run to run must not go stale).
inline double run_error_vs_f64(CompiledGraph& compiled, const Graph& g, const std::vector<Tensor>& inputs) {
  InterpretOptions f64;
  f64.cast_to_f64 = true;
  return max_error_against(compiled.run(inputs), interpret(g, inputs, f64));
}

// Largest error of the backend against the float64 reference on inputs drawn with `seed`.
inline double max_error_vs_f64(const Graph& g, const CompileOptions& opts, uint64_t seed = 5) {
  return run_error_vs_f64(*compile_graph(g, opts), g, generate_inputs(g, seed));
}

// Output 0 of `compiled` on `inputs` (with a NaN, or values far past a function's range, planted
// in them) element by element against the reference interpreter's: NaN exactly where the
// reference has NaN, its infinities, and elsewhere within `rel` of it (relative to the larger of
// 1 and the value). Returns how many NaNs and how many values above 1e20 the reference has.
struct ExtremeValues {
  size_t nans = 0, huge = 0;
};
inline ExtremeValues expect_as_the_reference(CompiledGraph& compiled, const Graph& g, const std::vector<Tensor>& inputs, double rel) {
  const std::vector<double> got = compiled.run(inputs)[0].to_doubles(), want = interpret(g, inputs)[0].to_doubles();
  ExtremeValues seen;
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    seen.nans += std::isnan(want[i]);
    seen.huge += std::fabs(want[i]) > 1e20;
    EXPECT_EQ(std::isnan(got[i]), std::isnan(want[i])) << "element " << i;
    if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << "element " << i;
    } else if (!std::isnan(want[i])) {
      EXPECT_NEAR(got[i], want[i], rel * std::max(1.0, std::fabs(want[i]))) << "element " << i;
    }
  }
  return seen;
}

inline CompileOptions cpp_options() {
  CompileOptions o;
  o.backend = "cpp";
  o.cache_dir = test_cache_dir();
  return o;
}

// What max_error_vs_f64 may be for a graph: float32 rounding, or half precision where a node holds it.
inline double tolerance_for(const Graph& g) {
  double tol = 1e-5;
  for (auto& n : g.nodes)
    if (n.type.dtype == DType::f16) tol = std::max(tol, 5e-3);
    else if (n.type.dtype == DType::bf16) tol = std::max(tol, 4e-2);
  return tol;
}

inline CompileOptions cuda_options() {
  CompileOptions o;
  o.backend = "cuda";
  return o;
}

// What the backend itself loads: NVRTC, and a driver whose cuInit found a device. The tests that
// launch CUDA kernels run only then, and skip elsewhere (REQUIRE_GPU).
inline bool have_gpu() { return nvrtc_available() && cuda_driver_available(); }

#define REQUIRE_GPU() \
  if (!::reprokit::testing::have_gpu()) GTEST_SKIP() << "no GPU here (or no NVRTC): the CUDA launch path was not run"

}  // namespace reprokit::testing
