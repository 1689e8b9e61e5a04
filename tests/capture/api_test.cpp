// The C++ tracing API: traced graphs, guard misses, the cache limit, graph breaks, and the harness
// wrapping a compiled function (a C++ program using reprokit::api::compile).
#include <gtest/gtest.h>

#include <cmath>

#include "../harness/cli_util.h"
#include "reprokit/capture/api.h"
#include "reprokit/support/errors.h"

using namespace reprokit;
namespace rk = reprokit::api;
using namespace reprokit::testing;

namespace {

Tensor ramp(Shape s, double scale = 0.1) {
  Tensor t = Tensor::zeros(DType::f32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, static_cast<double>(i % 7) * scale - 0.3);
  return t;
}

double max_diff(const Tensor& a, const Tensor& b) {
  double w = 0;
  for (int64_t i = 0; i < a.numel(); ++i) w = std::max(w, std::fabs(a.get(i) - b.get(i)));
  return w;
}

rk::CompileSpec cpp_spec() {
  rk::CompileSpec s;
  s.compile.backend = "cpp";
  s.compile.cache_dir = std::string(REPROKIT_BINARY_DIR) + "/test-cache";
  return s;
}

}  // namespace

TEST(CaptureApi, TracesTheExpectedGraph) {
  auto f = rk::compile([](const std::vector<rk::Var>& in) { return std::vector<rk::Var>{rk::relu(rk::add(in[0], in[1]))}; }, cpp_spec());
  f({ramp({2, 3}), ramp({3})});
  ASSERT_EQ(f.stats().graphs.size(), 1u);
  EXPECT_EQ(f.stats().graphs[0],
            "graph compiled_0(%in0: f32[2, 3], %in1: f32[3]) {\n  %v0 = add(%in0, %in1)\n  %v1 = relu(%v0)\n  return (%v1)\n}\n");
}

TEST(CaptureApi, CompiledEqualsEagerOnEveryExposedOp) {
  auto fn = [](const std::vector<rk::Var>& in) {
    const rk::Var &x = in[0], &w = in[1];
    std::vector<rk::Var> out;
    out.push_back(rk::sub(rk::div(rk::exp(x), rk::add(x, 2.0)), rk::neg(rk::tanh(x))));
    out.push_back(rk::silu(rk::sigmoid(rk::gelu(x))));
    out.push_back(rk::softmax(rk::linear(x, w), 0));
    out.push_back(rk::layer_norm(rk::matmul(x, rk::transpose(w, 0, 1)), {5}));
    out.push_back(rk::amax(rk::reshape(x, {3, 4}), {1}, true));
    out.push_back(rk::sum(rk::mul(x, x), {0}));
    return out;
  };
  std::vector<Tensor> in = {ramp({4, 3}), ramp({5, 3}, 0.2)};
  auto f = rk::compile(fn, cpp_spec());
  auto got = f(in);
  auto eager = fn({rk::Var(in[0]), rk::Var(in[1])});
  ASSERT_EQ(got.size(), eager.size());
  for (size_t k = 0; k < got.size(); ++k) EXPECT_LT(max_diff(got[k], eager[k].value()), 1e-5) << "output " << k;
}

TEST(CaptureApi, GuardMissRecompilesAndTheCacheHasALimit) {
  rk::CompileSpec spec = cpp_spec();
  spec.cache_limit = 2;
  auto f = rk::compile([](const std::vector<rk::Var>& in) { return std::vector<rk::Var>{rk::exp(in[0])}; }, spec);
  f({ramp({4})});
  f({ramp({4})});
  EXPECT_EQ(f.stats().compiles, 1);
  EXPECT_EQ(f.stats().cache_hits, 1);
  f({ramp({5})});  // new shape: guard miss
  EXPECT_EQ(f.stats().compiles, 2);
  Tensor strided = Tensor::empty_strided(DType::f32, {2, 2}, {1, 2});
  f({strided});  // new layout: guard miss too
  EXPECT_EQ(f.stats().compiles, 3);
  EXPECT_EQ(f.stats().evictions, 1);
  f({ramp({4})});  // evicted: compiled again
  EXPECT_EQ(f.stats().compiles, 4);
}

TEST(CaptureApi, ItemIsAGraphBreak) {
  auto fn = [](const std::vector<rk::Var>& in) {
    rk::Var s = rk::sum(in[0], {0});
    double v = rk::item(s);
    return std::vector<rk::Var>{v > 0 ? rk::mul(in[0], 2.0) : rk::neg(in[0])};
  };
  auto f = rk::compile(fn, cpp_spec());
  Tensor x = ramp({6});
  Tensor out = f({x})[0];
  EXPECT_EQ(f.stats().graph_breaks, 1);
  EXPECT_EQ(f.stats().graphs.size(), 2u);
  EXPECT_LT(max_diff(out, fn({rk::Var(x)})[0].value()), 1e-6);
}

TEST(CaptureApi, ShapeErrorsAreUserErrors) {
  auto f = rk::compile([](const std::vector<rk::Var>& in) { return std::vector<rk::Var>{rk::matmul(in[0], in[0])}; }, cpp_spec());
  EXPECT_THROW(f({ramp({2, 3})}), UserError);
}

TEST(CaptureApi, HarnessWrapsACompiledFunction) {
  // The example program under the harness, with an injected codegen bug.
  auto dir = fresh_dir("capture_harness");
  ProcessSpec s;
  s.argv = {std::string(REPROKIT_BINARY_DIR) + "/traced_mlp"};
  s.cwd = dir.string();
  s.env_set = {{"REPRO_AFTER", "dynamo"},
               {"REPRO_DIR", "out"},
               {"REPRO_INJECT", "gelu:runtime_error"},
               {"REPRO_CACHE_DIR", std::string(REPROKIT_BINARY_DIR) + "/test-cache"},
               {"REPROKIT_EXE", REPROKIT_EXE}};
  s.timeout_s = 120;
  auto r = run_process(s);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto b = bundles_in(dir / "out");
  ASSERT_EQ(b.size(), 1u) << r.err;
  EXPECT_EQ(read_json(b[0] / "manifest.json")["failure"]["kind"], "runtime_error");
  auto rep = reprokit_cli({"repro", (b[0] / "original" / "repro.rk").string()}, dir);
  EXPECT_EQ(rep.exit_code, 1) << rep.out;
  auto clean = s;
  clean.env_set.erase("REPRO_INJECT");
  auto ok = run_process(clean);
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
}
