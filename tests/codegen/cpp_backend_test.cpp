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

// Regression: the node name was pasted into an snprintf format, so an out-of-range index printed
// "node 1.9e-322 = embedding" (and a name like %s%n would have been a format attack).
TEST(CppBackend, OutOfRangeIndexErrorNamesTheNodeVerbatim) {
  Graph g = parse_graph("graph t(%w: f32[4, 2], %i: i64[3]) {\n  %e = embedding(%w, %i)\n  return (%e)\n}");
  auto inputs = generate_inputs(g, 1);
  inputs[1] = Tensor::from_int64s(DType::i64, {3}, {0, 1000, 2});
  try {
    compile_graph(g, cpp_options())->run(inputs);
    FAIL() << "an out-of-range index ran";
  } catch (const CompileFailure& e) {
    EXPECT_EQ(e.kind, FailureKind::runtime_error);
    EXPECT_NE(std::string(e.what()).find("node %e = embedding: index 1000 is out of range for a dimension of size 4"), std::string::npos)
        << e.what();
  }
}

// Integer arithmetic in generated code wraps as PyTorch's (and the reference's) does.
TEST(CppBackend, IntegerArithmeticMatchesTheExactReference) {
  Graph g = parse_graph("graph t(%a: i64[3], %f: f32[3]) {\n  %b = add(%a, 1)\n  %m = amax(%a)\n  %i = to(%f, dtype=i64)\n  return (%b, %m, %i)\n}");
  std::vector<Tensor> in = {Tensor::from_int64s(DType::i64, {3}, {INT64_MAX, -5, 9007199254740993}),
                            Tensor::from_doubles(DType::f32, {3}, {NAN, 1e30, -2.5})};
  auto ref = interpret(g, in), got = compile_graph(g, cpp_options())->run(in);
  for (size_t k = 0; k < ref.size(); ++k) EXPECT_EQ(got[k].to_int64s(), ref[k].to_int64s()) << "output " << k;
  EXPECT_EQ(got[1].get_int(0), INT64_MAX);  // amax starts from the lowest integer, not from -inf (= 0)
}
