// The cpp backend agrees with the float64 reference on every op and every example model, with and
// without passes; the compile cache avoids the compiler on a second compile.
#include <gtest/gtest.h>

#include "../ir/all_ops.h"
#include "backend_test_util.h"
#include "reprokit/codegen/pass_manager.h"

using namespace reprokit;
using namespace reprokit::testing;


static double tolerance_for(const Graph& g) {
  double tol = 1e-5;
  for (auto& n : g.nodes)
    if (n.type.dtype == DType::f16) tol = std::max(tol, 5e-3);
    else if (n.type.dtype == DType::bf16) tol = std::max(tol, 4e-2);
  return tol;
}

TEST(CppBackend, EveryOpMatchesTheReference) {
  Graph g = parse_graph(kAllOpsGraph);
  EXPECT_LT(max_error_vs_f64(g, cpp_options()), 5e-3);  // the graph holds f16 values too
  CompileOptions nopass = cpp_options();
  nopass.run_passes = false;
  EXPECT_LT(max_error_vs_f64(g, nopass), 5e-3);
}

TEST(CppBackend, EveryExampleModelMatchesTheReference) {
  for (auto name : {"mlp", "attention", "embedding_classifier", "mixed_precision"}) {
    SCOPED_TRACE(name);
    Graph g = load_module_file(std::string(REPROKIT_SOURCE_DIR) + "/examples/" + name + ".rk").entry();
    EXPECT_LT(max_error_vs_f64(g, cpp_options()), tolerance_for(g));
  }
}

TEST(CppBackend, SecondCompileHitsTheCache) {
  Graph g = parse_graph("graph cache_probe(%x: f32[7, 3]) {\n  %y = exp(%x)\n  %z = sum(%y, dims=[1])\n  return (%z)\n}");
  auto opts = cpp_options();
  opts.cache_dir = std::string(REPROKIT_BINARY_DIR) + "/test-cache-probe-" + std::to_string(::getpid());
  int before = compiler_invocations();
  compile_graph(g, opts);
  EXPECT_EQ(compiler_invocations(), before + 1);
  compile_graph(g, opts);
  EXPECT_EQ(compiler_invocations(), before + 1) << "the second compile invoked the compiler";
}

TEST(CppBackend, FusionFiresOnEveryExampleModel) {
  for (auto name : {"mlp", "attention", "embedding_classifier", "mixed_precision"}) {
    SCOPED_TRACE(name);
    Graph g = load_module_file(std::string(REPROKIT_SOURCE_DIR) + "/examples/" + name + ".rk").entry();
    Graph d = g;
    CompileOptions o = cpp_options();
    std::vector<PassRecord> records;
    lower_for_codegen(g, o, &records);
    int64_t fused = 0;
    for (auto& r : records)
      if (r.name == "pointwise-fusion" || r.name == "reduction-fusion") fused += r.rewrites;
    EXPECT_GT(fused, 0);
  }
}
