// The cpp backend agrees with the float64 reference on every op and every example model, with and
// without passes; the compile cache avoids the compiler on a second compile.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <thread>

#include "../ir/all_ops.h"
#include "../scratch_dir.h"
#include "backend_test_util.h"
#include "reprokit/codegen/passes/pass_manager.h"
#include "reprokit/support/errors.h"

using namespace reprokit;
using namespace reprokit::testing;

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

// The kernel timer (rk_graph_profile, reprokit run --profile): a label for each kernel, naming its
// first node, the nodes after it and its ops, in the order the entry point runs them; a timed run
// gives the same outputs as a plain one and a time for every kernel; a backend without a timer
// times nothing.
TEST(CppBackend, TimesEachKernel) {
  Graph g = parse_graph(
      "graph timed(%a: f32[64, 64], %b: f32[64, 64]) {\n  %m = matmul(%a, %b)\n  %e = exp(%a)\n  %s = sum(%e, dims=[1])\n"
      "  %r = relu(%m)\n  return (%r, %s)\n}");
  auto compiled = compile_graph(g, cpp_options());
  const std::vector<std::string> labels = compiled->kernel_labels();
  ASSERT_GE(labels.size(), 2u);
  std::string all;
  for (const auto& l : labels) all += l + "\n";
  EXPECT_NE(all.find("[matmul"), std::string::npos) << all;
  EXPECT_NE(all.find("f32[64, 64]"), std::string::npos) << all;
  EXPECT_NE(all.find("[exp, sum]"), std::string::npos) << all;
  const std::vector<Tensor> inputs = {Tensor::from_doubles(DType::f32, {64, 64}, std::vector<double>(4096, 0.5)),
                                      Tensor::from_doubles(DType::f32, {64, 64}, std::vector<double>(4096, -0.25))};
  std::vector<double> seconds;
  const std::vector<Tensor> timed = compiled->run_timing_kernels(inputs, &seconds), plain = compiled->run(inputs);
  ASSERT_EQ(seconds.size(), labels.size());
  double total = 0;
  for (double t : seconds) {
    EXPECT_GE(t, 0.0);
    total += t;
  }
  EXPECT_GT(total, 0.0);
  ASSERT_EQ(timed.size(), plain.size());
  for (size_t k = 0; k < timed.size(); ++k) EXPECT_EQ(timed[k].to_doubles(), plain[k].to_doubles());
  // A second timed run starts from zero: the vector is the run's, not a running total.
  std::vector<double> again(labels.size(), 1e9);
  compiled->run_timing_kernels(inputs, &again);
  for (double t : again) EXPECT_LT(t, 1e9);

  CompileOptions eager = cpp_options();
  eager.backend = "eager";
  auto interpreted = compile_graph(g, eager);
  EXPECT_TRUE(interpreted->kernel_labels().empty());
  std::vector<double> none;
  interpreted->run_timing_kernels(inputs, &none);
  EXPECT_TRUE(none.empty());
}

TEST(CppBackend, SecondCompileHitsTheCache) {
  Graph g = parse_graph("graph cache_probe(%x: f32[7, 3]) {\n  %y = exp(%x)\n  %z = sum(%y, dims=[1])\n  return (%z)\n}");
  auto opts = cpp_options();
  opts.cache_dir = (scratch_root("rk_cpp_backend_test_") / "cache-probe").string();
  int before = compiler_invocations();
  compile_graph(g, opts);
  int after_first = compiler_invocations();
  EXPECT_GT(after_first, before);
  compile_graph(g, opts);
  EXPECT_EQ(compiler_invocations(), after_first) << "the second compile invoked the compiler";
}

// Two compiles of one graph at once into one cache (the ONNX conformance runner's threads, two
// minifier workers): each links its own entry object, so neither removes the other's before its
// link (a shared one did: "ld: cannot find rk_<key>.o").
TEST(CppBackend, TheSameGraphCompiledTwiceAtOnceLinksBoth) {
  Graph g = parse_graph("graph twice(%x: f32[6, 4]) {\n  %y = tanh(%x)\n  %z = sum(%y, dims=[0])\n  return (%z)\n}");
  for (int round = 0; round < 6; ++round) {
    auto opts = cpp_options();
    opts.cache_dir = (scratch_root("rk_cpp_backend_test_") / fmt::format("cache-twice-{}", round)).string();
    std::vector<std::string> errors(4);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < errors.size(); ++t)
      threads.emplace_back([&, t] {
        try {
          compile_graph(g, opts);
        } catch (const std::exception& e) { errors[t] = e.what(); }
      });
    for (auto& t : threads) t.join();
    for (auto& e : errors) EXPECT_EQ(e, "") << "round " << round;
    std::filesystem::remove_all(opts.cache_dir);
  }
}

// A candidate that keeps most of a graph (the minifier's truncations and cuts) reuses the
// compiled units of the kernels it kept: only the units around the edit, the entry point and
// the link run the compiler.
// Units are named by their text, so one graph can hold the same unit twice (here: 100 copies of
// an input into the caller's outputs, 32 identical kernels a unit): it is compiled and linked once.
TEST(CppBackend, AUnitThatOccursTwiceInOneGraphLinks) {
  std::string s = "graph twice(%x: f32[3]) {\n  %y = neg(%x)\n  return (%y";
  for (int i = 0; i < 100; ++i) s += ", %x";
  Graph g = parse_graph(s + ")\n}");
  auto opts = cpp_options();
  opts.cache_dir = (scratch_root("rk_cpp_backend_test_") / "cache-twice").string();  // cold: really linked
  auto outs = compile_graph(g, opts)->run({Tensor::from_doubles(DType::f32, {3}, {1, 2, 3})});
  std::filesystem::remove_all(opts.cache_dir);
  ASSERT_EQ(outs.size(), 101u);
  EXPECT_EQ(outs[0].to_doubles(), (std::vector<double>{-1, -2, -3}));
  EXPECT_EQ(outs[100].to_doubles(), (std::vector<double>{1, 2, 3}));
}

TEST(CppBackend, AGraphThatKeepsMostKernelsRecompilesOnlyWhatChanged) {
  auto chain = [](int n, int first) {
    auto name = [](int i) { return i < 0 ? std::string("x") : fmt::format("n{}", i); };
    std::string s = fmt::format("graph chain(%{}: f32[16]) {{\n", name(first - 1));
    static const char* ops[] = {"neg", "relu", "abs", "sin", "cos", "tanh"};
    for (int i = first; i < n; ++i) s += fmt::format("  %n{} = {}(%{})\n", i, ops[i % 6], name(i - 1));
    return parse_graph(s + fmt::format("  return (%n{})\n}}", n - 1));
  };
  auto opts = cpp_options();
  opts.cache_dir = (scratch_root("rk_cpp_backend_test_") / "cache-units").string();
  int before = compiler_invocations();
  compile_graph(chain(6000, 0), opts);
  int whole = compiler_invocations() - before;
  EXPECT_GE(whole, 10) << "6,000 ops should make many units";
  // Cut at the back, at the front, at both ends: a unit or two at each edge, the entry point.
  for (auto [n, first] : {std::pair{4000, 0}, std::pair{6000, 2000}, std::pair{5000, 1000}}) {
    int at = compiler_invocations();
    compile_graph(chain(n, first), opts);
    EXPECT_LE(compiler_invocations() - at, 5) << "ops [" << first << ", " << n << ") recompiled " << compiler_invocations() - at << " of " << whole;
  }
  std::filesystem::remove_all(opts.cache_dir);
}

TEST(CppBackend, ARejectedSourceIsRejectedAgainFromTheCache) {
  Graph g = parse_graph("graph cache_reject(%x: f32[5, 2]) {\n  %y = exp(%x)\n  return (%y)\n}");
  auto opts = cpp_options();
  opts.cache_dir = (scratch_root("rk_cpp_backend_test_") / "cache-reject").string();
  opts.injections = {parse_fault_injection("exp:compile_error")};
  opts.injection_nodes = {{"y", FaultKind::compile_error}};
  const int before = compiler_invocations();
  std::string first, second;
  try {
    compile_graph(g, opts);
  } catch (const CompileFailure& e) { first = e.what(); }
  const int after_first = compiler_invocations();  // the rejected unit, and the entry beside it
  EXPECT_GT(after_first, before);
  for (auto& f : std::filesystem::directory_iterator(opts.cache_dir))
    EXPECT_NE(f.path().extension(), ".o") << f.path() << ": the entry's object outlived the rejected unit beside it";
  try {
    compile_graph(g, opts);
  } catch (const CompileFailure& e) { second = e.what(); }
  EXPECT_NE(first.find("C++ compiler rejected the generated code"), std::string::npos) << first;
  EXPECT_EQ(second, first) << "the cached rejection says what the compiler said";
  EXPECT_EQ(compiler_invocations(), after_first) << "the second compile invoked the compiler";
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
    EXPECT_NE(std::string(e.what()).find("node %e = embedding: index 1000 is out of range for a dimension of size 4"), std::string::npos) << e.what();
  }
}

// scatter_add reaches cpp decomposed (a one-hot mask, which alone would drop a bad index without a
// word): an index out of range is still an error there, as in the interpreter, and a negative one
// counts from the end.
TEST(CppBackend, ScatterAddRefusesAnIndexOutOfRange) {
  Graph g = parse_graph("graph t(%x: f32[2, 3], %i: i64[2, 2], %s: f32[2, 2]) {\n  %z = scatter_add(%x, %i, %s, dim=1)\n  return (%z)\n}");
  auto in = generate_inputs(g, 1);
  in[1] = Tensor::from_int64s(DType::i64, {2, 2}, {0, -1, 2, 1});
  auto got = compile_graph(g, cpp_options())->run(in)[0].to_doubles(), ref = interpret(g, in)[0].to_doubles();
  for (size_t k = 0; k < ref.size(); ++k) EXPECT_NEAR(got[k], ref[k], 1e-5) << k;
  in[1] = Tensor::from_int64s(DType::i64, {2, 2}, {0, 3, 2, 1});
  EXPECT_THROW(interpret(g, in), UserError);
  try {
    compile_graph(g, cpp_options())->run(in);
    FAIL() << "an out-of-range index ran";
  } catch (const CompileFailure& e) {
    EXPECT_EQ(e.kind, FailureKind::runtime_error);
    EXPECT_NE(std::string(e.what()).find("out of range for a dimension of size 3"), std::string::npos) << e.what();
  }
}

// Index checks inside loops big enough to run in parallel (OpenMP forbids leaving them early):
// right values when the indices are good, the error when one is not.
TEST(CppBackend, IndexChecksInParallelLoops) {
  const int64_t n = int64_t{1} << 21;
  Graph g =
      parse_graph(fmt::format("graph t(%w: f32[4, 2], %x: f32[4], %i: i64[{0}], %j: i64[{0}]) {{\n  %e = embedding(%w, %i)\n"
                              "  %g = gather(%x, %j, dim=0)\n  return (%e, %g)\n}}",
                              n));
  auto in = generate_inputs(g, 3);
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) idx[static_cast<size_t>(k)] = (k * 7) % 4 - (k % 3 == 0 ? 4 : 0);  // negative indices count from the end in gather
  for (auto& v : idx) v = v < 0 ? v + 4 : v;
  in[2] = Tensor::from_int64s(DType::i64, {n}, idx);
  in[3] = Tensor::from_int64s(DType::i64, {n}, idx);
  auto program = compile_graph(g, cpp_options());
  auto ref = interpret(g, in), got = program->run(in);
  for (size_t k = 0; k < ref.size(); ++k) EXPECT_EQ(got[k].to_doubles(), ref[k].to_doubles()) << "output " << k;
  for (int which : {2, 3}) {
    auto bad = in;
    auto b = idx;
    b[static_cast<size_t>(n - 5)] = 1000;
    bad[static_cast<size_t>(which)] = Tensor::from_int64s(DType::i64, {n}, b);
    try {
      program->run(bad);
      ADD_FAILURE() << "an out-of-range index ran (input " << which << ")";
    } catch (const CompileFailure& e) {
      EXPECT_EQ(e.kind, FailureKind::runtime_error);
      EXPECT_NE(std::string(e.what()).find(which == 2 ? "node %e = embedding: index 1000" : "node %g = gather: index 1000"), std::string::npos)
          << e.what();
    }
  }
}

// An injected op that only the decomposition has (the exp of a softmax) still misbehaves when
// the graph is compiled before decomposition (REPRO_AFTER=dynamo compiles the captured graph).
TEST(CppBackend, InjectionsReachOpsOfTheDecomposition) {
  Graph g = parse_graph("graph t(%x: f32[4, 8]) {\n  %p = softmax(%x, dim=1)\n  return (%p)\n}");
  CompileOptions o = cpp_options();
  o.injections = {parse_fault_injection("exp:runtime_error")};
  auto inj = resolve_injections(g, o);
  EXPECT_EQ(inj.size(), 1u);
  EXPECT_TRUE(inj.count("p.exp")) << (inj.empty() ? "none" : inj.begin()->first);
  auto in = generate_inputs(g, 1);
  try {
    compile_graph(g, o)->run(in);
    FAIL() << "the injected runtime error did not happen";
  } catch (const CompileFailure& e) { EXPECT_EQ(e.kind, FailureKind::runtime_error); }
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

// A clamp in generated code (its bounds out of the compiler's sight, for vmaxps and vminps) is
// the reference's, bit for bit: a NaN kept, -0 kept by a bound of 0, the infinities clamped, min >
// max giving max; in a vector loop and its remainder, in float and in double.
TEST(CppBackend, ClampMatchesTheReferenceBitForBit) {
  std::vector<double> x = {NAN, -0.0, 0.0, INFINITY, -INFINITY, 6.0, 7.5, -1.0, -3.0, 0.25, 1.5, 2.0};
  for (int k = 0; x.size() < 37; ++k) x.push_back(k % 3 == 0 ? NAN : (k - 12) * 0.75);
  Graph g = parse_graph(
      "graph t(%x: f32[37], %d: f64[37]) {\n  %a = clamp(%x, min=0, max=6)\n  %b = clamp(%x, min=-1)\n  %c = clamp(%x, max=0.5)\n"
      "  %e = clamp(%x, min=2, max=1)\n  %f = clamp(%d, min=0, max=6)\n  %h = relu(%x)\n  return (%a, %b, %c, %e, %f, %h)\n}");
  const std::vector<Tensor> in = {Tensor::from_doubles(DType::f32, {37}, x), Tensor::from_doubles(DType::f64, {37}, x)};
  const auto ref = interpret(g, in), got = compile_graph(g, cpp_options())->run(in);
  ASSERT_EQ(got.size(), ref.size());
  for (size_t k = 0; k < ref.size(); ++k) {
    const auto r = ref[k].to_doubles(), o = got[k].to_doubles();
    for (size_t e = 0; e < r.size(); ++e) {
      if (std::isnan(r[e])) EXPECT_TRUE(std::isnan(o[e])) << "output " << k << " [" << e << "]";
      else EXPECT_TRUE(o[e] == r[e] && std::signbit(o[e]) == std::signbit(r[e])) << "output " << k << " [" << e << "]: " << o[e] << " != " << r[e];
    }
  }
}

// A float max or min over rows (a softmax's row max: a vector loop, NaN tracked beside it) is the
// reference's: a NaN in any lane or in the remainder makes the row's result NaN, the infinities
// and -0 are kept; in float and in double.
TEST(CppBackend, FloatMaxAndMinOverRowsKeepNaNAndTheInfinities) {
  const int64_t rows = 8, cols = 37;
  std::vector<double> x(static_cast<size_t>(rows * cols));
  for (size_t k = 0; k < x.size(); ++k) x[k] = static_cast<double>(static_cast<int>(k * 11 % 23) - 11) * 0.5;
  const auto at = [&](int64_t r, int64_t c) -> double& { return x[static_cast<size_t>(r * cols + c)]; };
  at(0, 0) = NAN, at(1, 15) = NAN, at(2, 16) = NAN, at(3, 36) = NAN;  // first lane, a vector's last, the next's first, the remainder
  at(4, 5) = INFINITY, at(4, 30) = -INFINITY;
  for (int64_t c = 0; c < cols; ++c) at(5, c) = -INFINITY;
  for (int64_t c = 0; c < cols; ++c) at(6, c) = c % 2 ? -0.0 : -1.0;
  Graph g = parse_graph(
      "graph t(%x: f32[8, 37], %d: f64[8, 37]) {\n  %a = amax(%x, dims=[1])\n  %b = amin(%x, dims=[1])\n  %c = amax(%d, dims=[1])\n"
      "  %e = amin(%d, dims=[1])\n  return (%a, %b, %c, %e)\n}");
  const std::vector<Tensor> in = {Tensor::from_doubles(DType::f32, {rows, cols}, x), Tensor::from_doubles(DType::f64, {rows, cols}, x)};
  const auto ref = interpret(g, in), got = compile_graph(g, cpp_options())->run(in);
  ASSERT_EQ(got.size(), ref.size());
  for (size_t k = 0; k < ref.size(); ++k) {
    const auto r = ref[k].to_doubles(), o = got[k].to_doubles();
    ASSERT_EQ(o.size(), r.size()) << "output " << k;
    for (size_t e = 0; e < r.size(); ++e)
      if (std::isnan(r[e])) EXPECT_TRUE(std::isnan(o[e])) << "output " << k << " row " << e;
      else EXPECT_EQ(o[e], r[e]) << "output " << k << " row " << e;
    for (size_t e = 0; e < 4; ++e) EXPECT_TRUE(std::isnan(o[e])) << "output " << k << " row " << e << " holds a NaN";
  }
}

// exp in generated code (the prelude's vectorisable rk_expf) within 1 ulp of the exact value from
// where it rounds to 0 to where it overflows, both ends included: results in the subnormals
// within one subnormal step, exp(x) inf exactly where the float result overflows (88.72 to 89
// was clamped to exp(88.7) once), 0 exactly where it rounds to 0 (results below 1.2e-38 were 0),
// and NaN and the infinities.
TEST(CppBackend, ExpIsWithinOneUlpFromUnderflowToOverflow) {
  std::vector<double> x = {NAN, INFINITY, -INFINITY, 0.0, 88.72283172607422, 88.72283935546875, -103.97208, -103.97209, -87.4, -87.0, 88.71};
  for (double v = -110.0; v < 95.0; v += 0.0071) x.push_back((double)(float)v);
  const int64_t n = (int64_t)x.size();
  Graph g = parse_graph(fmt::format("graph t(%x: f32[{}]) {{\n  %e = exp(%x)\n  return (%e)\n}}", n));
  const auto got = compile_graph(g, cpp_options())->run({Tensor::from_doubles(DType::f32, {n}, x)})[0].to_doubles();
  double worst = 0, at = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double xi = (double)(float)x[(size_t)i], exact = std::exp(xi), o = got[(size_t)i];  // the input as the f32 tensor holds it
    const float want = (float)exact;
    if (std::isnan(exact)) {
      EXPECT_TRUE(std::isnan(o)) << "at x = " << xi;
    } else if (std::isinf(want) || want == 0.0f) {
      EXPECT_EQ(o, (double)want) << "at x = " << xi;  // overflows, or rounds to 0, exactly where the float result does
    } else {
      const double step = std::fabs(want) < 1.17549435e-38 ? 1.4012984643e-45 : std::nextafter(want, INFINITY) - want;
      const double err = std::fabs(o - exact) / step;
      if (err > worst) worst = err, at = xi;
    }
  }
  EXPECT_LE(worst, 1.0) << "at x = " << at;
}

// erf in generated code (the prelude's vectorisable rk_erff) within 5 ulps of the exact value
// over a sweep of every magnitude that matters, both signs (tiny arguments, where an absolute
// error bound is tens of ulps, up to where erf rounds to 1), and NaN and the infinities.
TEST(CppBackend, ErfIsWithinFiveUlpsAcrossItsRange) {
  std::vector<double> x = {0.0, INFINITY, -INFINITY, NAN};
  for (double v = 1e-7; v < 6.0; v *= 1.0003) {
    x.push_back((double)(float)v);
    x.push_back(-(double)(float)v);
  }
  const int64_t n = (int64_t)x.size();
  Graph g = parse_graph(fmt::format("graph t(%x: f32[{}]) {{\n  %e = erf(%x)\n  return (%e)\n}}", n));
  const auto got = compile_graph(g, cpp_options())->run({Tensor::from_doubles(DType::f32, {n}, x)})[0].to_doubles();
  double worst = 0, at = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double want = std::erf(x[(size_t)i]);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got[(size_t)i]));
      continue;
    }
    const float w = (float)want;
    const double ulp = std::nextafter(std::fabs(w), INFINITY) - std::fabs(w);
    const double err = std::fabs(got[(size_t)i] - want) / ulp;
    if (err > worst) worst = err, at = x[(size_t)i];
  }
  EXPECT_LE(worst, 5.0) << "at x = " << at;
}

// Scans and sorts in generated code: ties keep their order and NaN is the largest value in
// argsort and topk_indices, integer cumsum/cumprod wrap in int64, lines run along a middle dim (a
// strided line), and a long topk in a loop big enough to run in parallel.
TEST(CppBackend, ScansAndSortsMatchTheExactReference) {
  Graph g = parse_graph(
      "graph t(%x: f32[2, 5, 3], %i: i64[4], %l: f32[512, 300]) {\n  %s = sort(%x, dim=1)\n  %a = argsort(%x, dim=1, descending=true)\n"
      "  %t = topk(%x, k=2, dim=1)\n  %u = topk_indices(%x, k=3, dim=-1, largest=false)\n  %c = cumsum(%i, dim=0)\n  %p = cumprod(%i, dim=0)\n"
      "  %q = cumsum(%x, dim=1)\n  %r = cumprod(%x, dim=2)\n  %k = topk_indices(%l, k=7)\n  return (%s, %a, %t, %u, %c, %p, %q, %r, %k)\n}");
  std::vector<double> xs(30);
  for (size_t k = 0; k < xs.size(); ++k) xs[k] = static_cast<double>(static_cast<int>(k * 7 % 5) - 2);  // many ties
  xs[4] = NAN, xs[20] = NAN, xs[21] = NAN;
  auto in = generate_inputs(g, 5);
  in[0] = Tensor::from_doubles(DType::f32, {2, 5, 3}, xs);
  in[1] = Tensor::from_int64s(DType::i64, {4}, {INT64_MAX, 3, -7, 1LL << 40});
  auto ref = interpret(g, in), got = compile_graph(g, cpp_options())->run(in);
  ASSERT_EQ(got.size(), ref.size());
  for (size_t k = 0; k < ref.size(); ++k) {
    auto r = ref[k].to_doubles(), o = got[k].to_doubles();
    ASSERT_EQ(o.size(), r.size()) << "output " << k;
    for (size_t e = 0; e < r.size(); ++e)
      if (std::isnan(r[e])) EXPECT_TRUE(std::isnan(o[e])) << "output " << k << " [" << e << "]";
      else EXPECT_EQ(o[e], r[e]) << "output " << k << " [" << e << "]";
  }
  EXPECT_EQ(got[4].to_int64s(), ref[4].to_int64s());  // the wrapped sums, exactly
  EXPECT_EQ(got[5].to_int64s(), ref[5].to_int64s());
}

// grid_sample's decomposition (floor and round through int64 casts, a gather per corner) against
// the reference kernel in every mode, padding and corner convention, at the hard points: pixel
// centres, halves (nearest rounds them to even), one pixel outside, and far outside (reflection
// folds them back).
TEST(CppBackend, GridSampleMatchesTheReferenceAtEdges) {
  const std::vector<double> points = {0.0,  0.0,  -1.0, 1.0,  1.0,  -1.0, 0.5,   -0.5,   0.25, 0.75, -1.25, 1.5,
                                      1.75, -1.6, 7.3,  -9.9, -1e3, 2e3,  0.123, -0.456, 1.5,  0.5,  -0.75, -0.25};
  for (const char* mode : {"bilinear", "nearest"})
    for (const char* padding : {"zeros", "border", "reflection"})
      for (const char* align : {"false", "true"}) {
        SCOPED_TRACE(fmt::format("{} {} align_corners={}", mode, padding, align));
        Graph g = parse_graph(fmt::format(
            "graph t(%x: f32[1, 2, 3, 4], %g: f32[1, 3, 4, 2]) {{\n  %y = grid_sample(%x, %g, mode=\"{}\", padding_mode=\"{}\", align_corners={})\n"
            "  return (%y)\n}}",
            mode, padding, align));
        std::vector<double> xs(24);
        for (size_t k = 0; k < xs.size(); ++k) xs[k] = static_cast<double>(k * k % 7) - 2.5;
        std::vector<Tensor> in = {Tensor::from_doubles(DType::f32, {1, 2, 3, 4}, xs), Tensor::from_doubles(DType::f32, {1, 3, 4, 2}, points)};
        auto ref = interpret(g, in)[0].to_doubles(), got = compile_graph(g, cpp_options())->run(in)[0].to_doubles();
        ASSERT_EQ(got.size(), ref.size());
        for (size_t e = 0; e < ref.size(); ++e) EXPECT_NEAR(got[e], ref[e], 1e-5) << "element " << e;
      }
}

// The small integer dtypes wrap at their width in fused kernels too (every node's result is), and
// float-to-small-int casts go through int32 as the reference's do.
TEST(CppBackend, SmallIntegerTypesMatchTheExactReference) {
  for (const char* text : {kSmallIntsGraph, kUint16Graph}) {
    Graph g = parse_graph(text);
    SCOPED_TRACE(g.name);
    std::vector<Tensor> in = generate_inputs(g, 7);
    auto ref = interpret(g, in);
    for (bool passes : {true, false}) {
      CompileOptions o = cpp_options();
      o.run_passes = passes;
      auto got = compile_graph(g, o)->run(in);
      for (size_t k = 0; k < ref.size(); ++k) {
        EXPECT_EQ(got[k].dtype(), ref[k].dtype()) << g.node(g.outputs[k]).name;
        EXPECT_EQ(got[k].to_doubles(), ref[k].to_doubles()) << g.node(g.outputs[k]).name << (passes ? " with passes" : " without");
      }
    }
  }
  // The wrap itself, by hand: u8 200 + 200 = 144, i8 100 * 3 = 44, u16 60000 + 10000 = 4464.
  Graph g = parse_graph(
      "graph w(%a: u8[1], %b: i8[1], %w: u16[1]) {\n  %x = add(%a, %a)\n  %y = mul(%b, 3)\n  %z = add(%w, 10000)\n  return (%x, %y, %z)\n}");
  std::vector<Tensor> in = {Tensor::from_int64s(DType::u8, {1}, {200}), Tensor::from_int64s(DType::i8, {1}, {100}),
                            Tensor::from_int64s(DType::u16, {1}, {60000})};
  auto got = compile_graph(g, cpp_options())->run(in);
  EXPECT_EQ(got[0].get_int(0), 144);
  EXPECT_EQ(got[1].get_int(0), 44);
  EXPECT_EQ(got[2].get_int(0), 4464);
}

// Generated code compiles with -Wall -Wextra; a warning there is a codegen bug.
TEST(CppBackend, GeneratedCodeCompilesWithoutWarnings) {
  std::vector<Graph> graphs = {parse_graph(kAllOpsGraph), parse_graph(kSmallIntsGraph), parse_graph(kUint16Graph)};
  for (auto name : {"mlp", "attention", "embedding_classifier", "mixed_precision"})
    graphs.push_back(load_module_file(std::string(REPROKIT_SOURCE_DIR) + "/examples/" + name + ".rk").entry());
  for (auto name : {"mlp_large", "bert_layer"})
    graphs.push_back(load_module_file(std::string(REPROKIT_SOURCE_DIR) + "/bench/models/" + name + ".rk").entry());
  // Conv epilogues, with and without a bias (the conv has no buffer of its own there).
  graphs.push_back(
      parse_graph("graph epilogues(%x: f32[1, 4, 9, 9], %w: f32[8, 4, 3, 3], %w2: f32[8, 8, 3, 3], %b: f32[8], %s: f32[1, 8, 1, 1]) {\n  %p = "
                  "conv2d(%x, %w)\n  %q = mul(%p, %s)\n"
                  "  %r = relu(%q)\n  %c = conv2d(%r, %w2, %b, padding=[1, 1])\n  %t = add(%c, %r)\n  return (%t)\n}\n"));
  // A grouped conv on its kernels unit (16 x 16 transposes), with frozen weights kept below.
  graphs.push_back(
      parse_graph("graph grouped(%x: f32[1, 16, 7, 7], %w: f32[16, 8, 3, 3], %b: f32[16]) {\n"
                  "  %y = conv2d(%x, %w, %b, padding=[1, 1], groups=2)\n  %r = relu(%y)\n  return (%r)\n}\n"));
  // A batch norm and SiLU in the depthwise kernel and on the conv GEMM's blocks; squeeze-excite
  // convs of one pixel, a batch of 2 (shared out one image a thread), as matrix-vector products.
  graphs.push_back(parse_graph(
      "graph silu(%x: f32[2, 16, 9, 9], %w: f32[32, 16, 1, 1], %b: f32[32], %d: f32[32, 1, 3, 3], %s: f32[1, 32, 1, 1], %f: f32[8, 32, 1, "
      "1], %g: f32[32, 8, 1, 1]) {\n  %y = conv2d(%x, %w, %b)\n  %a = silu(%y)\n  %z = conv2d(%a, %d, padding=[1, 1], groups=32)\n"
      "  %m = mul(%z, %s)\n  %e = silu(%m)\n  %p = mean(%e, dims=[2, 3], keepdim=true)\n  %q = conv2d(%p, %f)\n  %r = relu(%q)\n"
      "  %t = conv2d(%r, %g)\n  %u = sigmoid(%t)\n  %o = mul(%e, %u)\n  return (%o)\n}\n"));
  // Layer norms' sums over the channels of an NCHW tensor seen through a permute (each row's
  // index computed once, the flat index not used): enough kernels for units that are compiled
  // with the precompiled prelude, where GCC reports unused variables that it does not without.
  std::string norms = "graph norms(%x0: f32[1, 24, 7, 7]) {\n";
  for (int i = 0; i < 48; ++i)
    norms += fmt::format(
        "  %p{0} = permute(%x{0}, dims=[0, 2, 3, 1])\n  %s{0} = sum(%p{0}, dims=[3])\n  %r{0} = reshape(%s{0}, shape=[1, 1, 7, 7])\n"
        "  %x{1} = sub(%x{0}, %r{0})\n",
        i, i + 1);
  graphs.push_back(parse_graph(norms + "  return (%x48)\n}\n"));
  auto opts = cpp_options();
  opts.cache_dir = (scratch_root("rk_cpp_backend_test_") / "cache-warnings").string();  // every compile is cold
  for (auto& g : graphs) {
    SCOPED_TRACE(g.name);
    for (bool passes : {true, false}) {
      opts.run_passes = passes;
      compile_graph(g, opts);
      EXPECT_EQ(last_compiler_output(), "") << "warnings in the generated code of " << g.name;
    }
    CompileOptions frozen = opts;  // weights kept from run to run (every input but the first)
    for (int i = 1; i < g.num_inputs(); ++i) frozen.frozen_inputs.insert(g.node(i).name);
    compile_graph(g, frozen);
    EXPECT_EQ(last_compiler_output(), "") << "warnings in the generated code of " << g.name << " with frozen weights";
  }
  std::filesystem::remove_all(opts.cache_dir);
}

// The kernels the prelude implements are units of their own: a graph compiles those it calls
// (each depthwise window and grouped conv's channels and stride its own; Winograd and the
// few-channel conv only for convs they may take) and no others, and runs as the interpreter does.
TEST(CppBackend, CompilesOnlyTheKernelsUnitsItCalls) {
  struct Case {
    std::string graph;
    std::vector<std::string> units;
  };
  const std::vector<Case> cases = {
      {"graph g(%x: f32[1, 16, 14, 14], %w: f32[16, 1, 3, 3]) {\n  %y = conv2d(%x, %w, padding=[1, 1], groups=16)\n"
       "  %p = max_pool2d(%y, kernel=[3, 3], stride=[2, 2], padding=[1, 1])\n  return (%p)\n}",
       {"#define RK_DEPTHWISE_KERNEL 3, 1, RkActivation::none\n", "#define RK_POOL_KERNELS 1\n"}},
      {"graph g(%x: f32[2, 24, 15, 15], %w: f32[24, 1, 5, 5], %v: f32[48, 24, 1, 1]) {\n"
       "  %y = conv2d(%x, %w, stride=[2, 2], padding=[2, 2], groups=24)\n  %z = conv2d(%y, %v)\n  return (%z)\n}",
       {"#define RK_CONV_KERNELS 1\n", "#define RK_DEPTHWISE_KERNEL 5, 2, RkActivation::none\n"}},
      // A depthwise conv with a SiLU (efficientnet's) and one without: each activation a unit.
      {"graph g(%x: f32[1, 16, 14, 14], %w: f32[16, 1, 3, 3], %v: f32[16, 1, 3, 3]) {\n  %y = conv2d(%x, %w, padding=[1, 1], groups=16)\n"
       "  %s = silu(%y)\n  %z = conv2d(%s, %v, padding=[1, 1], groups=16)\n  return (%z)\n}",
       {"#define RK_DEPTHWISE_KERNEL 3, 1, RkActivation::none\n", "#define RK_DEPTHWISE_KERNEL 3, 1, RkActivation::silu\n"}},
      {"graph g(%x: f32[128, 192], %w: f32[192, 160]) {\n  %y = matmul(%x, %w)\n  return (%y)\n}", {"#define RK_GEMM_KERNELS 1\n"}},
      // A 3x3 conv that Winograd takes (32 channels, 144 tiles), and a network's first conv of 3
      // channels at stride 2, each also calling the conv GEMM where it declines.
      {"graph g(%x: f32[1, 32, 24, 24], %w: f32[16, 32, 3, 3]) {\n  %y = conv2d(%x, %w, padding=[1, 1])\n  return (%y)\n}",
       {"#define RK_CONV_KERNELS 1\n", "#define RK_WINOGRAD_KERNELS 1\n"}},
      {"graph g(%x: f32[1, 3, 32, 32], %w: f32[8, 3, 3, 3]) {\n  %y = conv2d(%x, %w, stride=[2, 2], padding=[1, 1])\n  return (%y)\n}",
       {"#define RK_CONV_KERNELS 1\n", "#define RK_FEW_CHANNELS_KERNELS 2\n"}},
      // Grouped convs of 8 and 4 channels a group (as many out as in): each (G, stride) a unit of
      // its own, and, for machines without AVX-512, the few-channel conv of each stride and the
      // conv GEMM it falls back on.
      {"graph g(%x: f32[1, 32, 14, 14], %w: f32[32, 8, 3, 3], %v: f32[32, 4, 3, 3]) {\n  %y = conv2d(%x, %w, padding=[1, 1], groups=4)\n"
       "  %z = conv2d(%y, %v, stride=[2, 2], padding=[1, 1], groups=8)\n  return (%z)\n}",
       {"#define RK_GROUPED_KERNEL 8, 1\n", "#define RK_GROUPED_KERNEL 4, 2\n", "#define RK_FEW_CHANNELS_KERNELS 1\n",
        "#define RK_FEW_CHANNELS_KERNELS 2\n", "#define RK_CONV_KERNELS 1\n"}},
  };
  const std::vector<std::string> all = {"#define RK_CONV_KERNELS",  "#define RK_WINOGRAD_KERNELS", "#define RK_FEW_CHANNELS_KERNELS",
                                        "#define RK_GEMM_KERNELS",  "#define RK_POOL_KERNELS",     "#define RK_DEPTHWISE_KERNEL",
                                        "#define RK_GROUPED_KERNEL"};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.graph);
    const Graph g = parse_graph(c.graph);
    const auto compiled = compile_graph(g, cpp_options());
    const std::string src = compiled->source();
    size_t defines = 0;
    for (const std::string& d : all)
      for (size_t at = src.find(d); at != std::string::npos; at = src.find(d, at + 1)) ++defines;
    EXPECT_EQ(defines, c.units.size()) << "kernels units compiled";
    for (const std::string& u : c.units) EXPECT_NE(src.find(u), std::string::npos) << u;
    EXPECT_LE(max_error_vs_f64(g, cpp_options()), tolerance_for(g));
  }
}

// A pointwise kernel runs over rows of as many last dims as each operand walks as one: a batch
// norm's per-channel parameters over whole 7 x 9 planes, not rows of 9; a parameter that varies
// along the rows keeps rows of the last dim.
TEST(CppBackend, PerChannelPointwiseRunsOverWholePlanes) {
  const std::string planes = compile_graph(parse_graph("graph g(%x: f32[2, 24, 7, 9], %s: f32[24, 1, 1]) {\n  %a = sub(%x, %s)\n"
                                                       "  %b = relu(%a)\n  return (%b)\n}"),
                                           cpp_options())
                                 ->source();
  EXPECT_NE(planes.find("for (int64_t j = 0; j < 63; ++j)"), std::string::npos) << planes;
  const std::string rows = compile_graph(parse_graph("graph g(%x: f32[2, 24, 7, 9], %u: f32[24, 7, 1]) {\n  %a = sub(%x, %u)\n"
                                                     "  %b = relu(%a)\n  return (%b)\n}"),
                                         cpp_options())
                               ->source();
  EXPECT_NE(rows.find("for (int64_t j = 0; j < 9; ++j)"), std::string::npos) << rows;
}

// A float divided by a constant is multiplied by the constant's reciprocal (within about an ulp of
// the quotient); a constant whose reciprocal is not a normal float (0, infinity, the largest
// floats) stays a division, so x / 0 is still +-inf or NaN.
TEST(CppBackend, FloatDivisionByAConstantIsAMultiplyByItsReciprocal) {
  Graph g = parse_graph(
      "graph d(%x: f32[4, 37]) {\n  %a = div(%x, 1.4142135381698608)\n  %b = div(%x, 3)\n  %c = div(%x, 0.0)\n"
      "  %e = div(%x, 3.0e38)\n  return (%a, %b, %c, %e)\n}");
  const std::string src = compile_graph(g, cpp_options())->source();
  EXPECT_NE(src.find("* (float)(0.70710676908493042)"), std::string::npos) << "x / sqrt(2) as x * (1 / sqrt(2))";
  EXPECT_NE(src.find("* (float)(0.3333333432674408)"), std::string::npos) << "x / 3 as x * (1 / 3)";
  EXPECT_NE(src.find("/ (float)(0)"), std::string::npos) << "x / 0 stays a division";
  EXPECT_NE(src.find("/ (float)(3.0000000000000001e+38)"), std::string::npos) << "1 / 3e38 is subnormal: a division";
  std::vector<Tensor> inputs = generate_inputs(g, 5);
  inputs[0].set(0, 0.0);  // 0 / 0: NaN
  const std::vector<Tensor> ref = interpret(g, inputs), got = compile_graph(g, cpp_options())->run(inputs);
  for (size_t k = 0; k < ref.size(); ++k) {
    const auto a = got[k].to_doubles(), b = ref[k].to_doubles();
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::isnan(b[i])) {
        EXPECT_TRUE(std::isnan(a[i])) << "output " << k << " element " << i;
        continue;
      }
      if (std::isinf(b[i])) {
        EXPECT_EQ(a[i], b[i]) << "output " << k << " element " << i;
        continue;
      }
      EXPECT_LE(std::fabs(a[i] - b[i]), 2.5e-7 * std::fabs(b[i]) + 1e-45) << "output " << k << " element " << i;
    }
  }
}

// Frozen inputs (CompileOptions::frozen_inputs, a model's weights in timed runs): a GEMM that packs
// its weight packs it once into the workspace's kept region, and again when a run passes another
// tensor; a linear layer over fewer rows than outputs too (computed as x W^T on the kept panels,
// not as its transpose); a weight the GEMM reads in place (x stored transposed: C^T = W x^T)
// keeps nothing. Each run agrees with the reference.
TEST(CppBackend, FrozenWeightsArePackedOnceAndAgainForAnotherTensor) {
  Graph g = parse_graph(
      "graph frozen(%x: f32[49, 300], %w: f32[300, 200], %x2: f32[120, 300], %w2: f32[60, 300], %x3: f32[20, 300] strides=[1, 20], "
      "%w3: f32[200, 300], %x4: f32[20, 300], %w4: f32[200, 300]) {\n"
      "  %y = matmul(%x, %w)\n  %y2 = linear(%x2, %w2)\n  %y3 = linear(%x3, %w3)\n  %y4 = linear(%x4, %w4)\n  return (%y, %y2, %y3, %y4)\n}");
  CompileOptions opts = cpp_options();
  opts.frozen_inputs = {"w", "w2", "w3", "w4"};
  auto compiled = compile_graph(g, opts);
  const std::string src = compiled->source();
  size_t kept = 0;
  for (size_t at = src.find("(RkKeptPanels*)"); at != std::string::npos; at = src.find("(RkKeptPanels*)", at + 1)) ++kept;
  EXPECT_EQ(kept, 3u) << "x w, x2 w2^T and x4 w4^T pack their weights; x3 w3^T reads w3 in place";
  EXPECT_EQ(compile_graph(g, cpp_options())->source().find("(RkKeptPanels*)"), std::string::npos) << "nothing kept without frozen inputs";
  const std::vector<Tensor> first = generate_inputs(g, 5), second = generate_inputs(g, 6);
  const auto error = [&](const std::vector<Tensor>& inputs) { return run_error_vs_f64(*compiled, g, inputs); };
  EXPECT_LT(error(first), 1e-5) << "the first run packs";
  std::vector<Tensor> new_x = first;  // the same weights, other activations: the kept panels serve
  for (size_t i : {0u, 2u, 4u, 6u}) new_x[i] = second[i];
  EXPECT_LT(error(new_x), 1e-5);
  std::vector<Tensor> new_w = first;  // other weight tensors: packed again
  for (size_t i : {1u, 3u, 5u, 7u}) new_w[i] = second[i];
  EXPECT_LT(error(new_w), 1e-5);
  EXPECT_LT(error(first), 1e-5) << "the first weights again";
}

// A grouped conv's frozen weights are packed once, in the kernel's order, into the kept region, and
// again when a run passes another tensor; weights that are not frozen are packed on every run
// (into scratch) and nothing is kept. Each run agrees with the reference.
TEST(CppBackend, GroupedConvFrozenWeightsArePackedOnceAndAgainForAnotherTensor) {
  Graph g = parse_graph(
      "graph grouped(%x: f32[1, 24, 7, 7], %w: f32[24, 8, 3, 3], %b: f32[24]) {\n  %y = conv2d(%x, %w, %b, padding=[1, 1], groups=3)\n"
      "  %r = relu(%y)\n  return (%r)\n}");
  CompileOptions opts = cpp_options();
  opts.frozen_inputs = {"w"};
  auto compiled = compile_graph(g, opts);
  EXPECT_NE(compiled->source().find("rk_grouped_conv_f32<8, 1>("), std::string::npos) << "the grouped kernel should take the conv";
  EXPECT_EQ(compiled->source().find("->source = nullptr"), std::string::npos) << "frozen weights are kept from run to run";
  EXPECT_NE(compile_graph(g, cpp_options())->source().find("->source = nullptr"), std::string::npos) << "others packed on every run";
  const std::vector<Tensor> first = generate_inputs(g, 5), second = generate_inputs(g, 6);
  const auto error = [&](const std::vector<Tensor>& inputs) { return run_error_vs_f64(*compiled, g, inputs); };
  EXPECT_LT(error(first), 1e-5) << "the first run packs";
  std::vector<Tensor> new_x = first;  // the same weights, another image: the packed weights serve
  new_x[0] = second[0];
  EXPECT_LT(error(new_x), 1e-5);
  std::vector<Tensor> new_w = first;  // another weight tensor: packed again
  new_w[1] = second[1];
  EXPECT_LT(error(new_w), 1e-5);
  EXPECT_LT(error(first), 1e-5) << "the first weights again";
}

// A depthwise or grouped conv's epilogue of per-channel adds, subs and muls and then a clamp or
// relu (a bias, mobilenet's batch norm and relu6, regnet's and relu) is applied by the kernel
// (RkChannelAffine: the depthwise kernel scales the weights and starts the sums at the shift, the
// grouped kernel maps each vector of sums; both clamp them as they are stored), and agrees with
// the reference; so is a SiLU after the affine map in the depthwise kernel (efficientnet's batch
// norm and SiLU) and, for a grouped conv on machines without AVX-512 (each group on the
// few-channel conv), in the conv kernels unit's SiLU rows; anything else stays the generated
// epilogue. A NaN in the input stays NaN through either, and sums past exp's range give the
// reference's infinities and zeros.
TEST(CppBackend, ConvEpilogueOfChannelOpsAndAClampRunsInTheKernel) {
  struct Case {
    const char* name;
    std::string epilogue;  // from %y (the conv) to %r
    bool in_kernel;
  };
  const std::vector<Case> cases = {
      {"batch_norm_relu6", "  %a = sub(%y, %m)\n  %b = mul(%a, %s)\n  %c = add(%b, %t)\n  %r = clamp(%c, min=0, max=6)\n", true},
      {"shift_first_scale_per_channel_relu", "  %a = add(%t, %y)\n  %b = mul(%c3, %a)\n  %r = relu(%b)\n", true},
      {"clamp_below_only", "  %a = mul(%y, %s)\n  %r = clamp(%a, min=-0.5)\n", true},
      {"scale_alone", "  %r = mul(%y, %s)\n", true},
      {"subtracted_from", "  %r = sub(%m, %y)\n", false},
      {"residual", "  %a = mul(%y, %s)\n  %r = add(%a, %x)\n", false},
      {"clamp_then_shift", "  %a = relu(%y)\n  %r = add(%a, %t)\n", false},
      {"sigmoid", "  %a = mul(%y, %s)\n  %r = sigmoid(%a)\n", false},
      // A SiLU after the affine map (efficientnet's batch norm and SiLU), in the depthwise kernel
      // only: as the silu op and as ONNX's x * Sigmoid(x), either way round.
      {"batch_norm_silu", "  %a = mul(%y, %s)\n  %b = add(%a, %t)\n  %r = silu(%b)\n", true},
      {"sigmoid_times_value", "  %a = add(%y, %t)\n  %g = sigmoid(%a)\n  %r = mul(%g, %a)\n", true},
      {"silu_alone", "  %r = silu(%y)\n", true},
      {"sigmoid_times_another", "  %a = add(%y, %t)\n  %g = sigmoid(%a)\n  %r = mul(%g, %y)\n", false},
      {"clamp_then_silu", "  %a = relu(%y)\n  %r = silu(%a)\n", false},
  };
  for (const Case& c : cases)
    for (int group : {1, 8})  // channels a group: depthwise, grouped
      for (bool bias : {false, true}) {
        SCOPED_TRACE(fmt::format("{}, {} channels a group{}", c.name, group, bias ? ", a bias" : ""));
        const std::string text = fmt::format(
            "graph g(%x: f32[2, 24, 14, 14], %w: f32[24, {}, 3, 3], %bias: f32[24], %m: f32[1, 24, 1, 1], %s: f32[1, 24, 1, 1], "
            "%t: f32[1, 24, 1, 1], %c3: f32[24, 1, 1]) {{\n  %y = conv2d(%x, %w{}, padding=[1, 1], groups={})\n{}  return (%r)\n}}",
            group, bias ? ", %bias" : "", 24 / group, c.epilogue);
        const Graph g = parse_graph(text);
        const std::string src = compile_graph(g, cpp_options())->source();
        const bool silu = c.epilogue.find("sigmoid") != std::string::npos || c.epilogue.find("silu") != std::string::npos;
        const bool in_kernel = c.in_kernel && (group == 1 || !silu), silu_rows = c.in_kernel && group == 8 && silu;
        EXPECT_EQ(src.find("const RkChannelAffine affine") != std::string::npos, in_kernel || silu_rows) << src;
        EXPECT_EQ(src.find("RkEpilogue{rk_channel_silu_rows") != std::string::npos, silu_rows) << src;
        EXPECT_NE(src.find(group == 1 ? fmt::format("rk_depthwise_f32<3, 1, RkActivation::{}>(", in_kernel && silu ? "silu" : "none")
                                      : "rk_grouped_conv_f32<8, 1>("),
                  std::string::npos);
        EXPECT_LT(max_error_vs_f64(g, cpp_options()), 1e-5);
        // A NaN at one pixel of image 1, channel 5: NaN wherever the reference has it. And 1e30 and
        // -1e30 at pixels of other channels: sums far past where exp over- and underflows, the
        // same infinities and zeros as the reference, the rest within float rounding of it.
        std::vector<Tensor> inputs = generate_inputs(g, 3);
        std::vector<double> x = inputs[0].to_doubles();
        x[(24 + 5) * 196 + 7 * 14 + 7] = NAN;
        x[5 * 196 + 3 * 14 + 3] = 1e30;
        x[(24 + 9) * 196 + 10 * 14 + 2] = -1e30;
        inputs[0] = Tensor::from_doubles(DType::f32, {2, 24, 14, 14}, x);
        EXPECT_GE(expect_as_the_reference(*compile_graph(g, cpp_options()), g, inputs, 1e-5).nans, 9u) << "the window around the NaN";
      }
}

// A conv run on the conv GEMM, Winograd or the few-channel kernel whose epilogue is a per-channel
// affine map then a SiLU (efficientnet's batch norm and SiLU after its 1x1 convs and its first
// conv) finishes each block with the conv kernels unit's rk_channel_silu_rows: a 1x1 conv with a
// bias and batch norm, a batch of 2; a 3x3 conv Winograd takes, as x * sigmoid(x); a first conv
// of 3 channels at stride 2; two groups (the second group's channels from the middle of the
// scale and shift); small images shared out one a thread. Each agrees with the reference, a NaN
// stays NaN, and sums past exp's range give the reference's infinities and zeros.
TEST(CppBackend, ConvBatchNormAndSiluRunOnTheConvUnitsRows) {
  const std::vector<std::string> graphs = {
      "graph g(%x: f32[2, 16, 14, 14], %w: f32[24, 16, 1, 1], %b: f32[24], %s: f32[1, 24, 1, 1], %t: f32[1, 24, 1, 1]) {\n"
      "  %y = conv2d(%x, %w, %b)\n  %m = mul(%y, %s)\n  %a = add(%m, %t)\n  %r = silu(%a)\n  return (%r)\n}",
      "graph g(%x: f32[1, 16, 24, 24], %w: f32[16, 16, 3, 3], %t: f32[1, 16, 1, 1]) {\n"
      "  %y = conv2d(%x, %w, padding=[1, 1])\n  %a = add(%y, %t)\n  %g = sigmoid(%a)\n  %r = mul(%a, %g)\n  return (%r)\n}",
      "graph g(%x: f32[1, 3, 32, 32], %w: f32[8, 3, 3, 3], %b: f32[8]) {\n"
      "  %y = conv2d(%x, %w, %b, stride=[2, 2], padding=[1, 1])\n  %r = silu(%y)\n  return (%r)\n}",
      "graph g(%x: f32[1, 16, 10, 10], %w: f32[24, 8, 3, 3], %b: f32[24]) {\n"
      "  %y = conv2d(%x, %w, %b, padding=[1, 1], groups=2)\n  %r = silu(%y)\n  return (%r)\n}",
      "graph g(%x: f32[4, 32, 16, 16], %w: f32[32, 32, 1, 1], %s: f32[1, 32, 1, 1]) {\n"
      "  %y = conv2d(%x, %w)\n  %m = mul(%y, %s)\n  %r = silu(%m)\n  return (%r)\n}",
  };
  for (const std::string& text : graphs) {
    SCOPED_TRACE(text);
    const Graph g = parse_graph(text);
    const auto compiled = compile_graph(g, cpp_options());
    EXPECT_NE(compiled->source().find("RkEpilogue{rk_channel_silu_rows, &silu_rows}"), std::string::npos);
    EXPECT_LT(max_error_vs_f64(g, cpp_options()), 1e-5);
    std::vector<Tensor> inputs = generate_inputs(g, 3);
    std::vector<double> x = inputs[0].to_doubles();
    const Shape xs = inputs[0].shape();
    const int64_t plane = xs[2] * xs[3];
    x[(size_t)(plane * 1 + xs[3] * 3 + 3)] = NAN;
    x[(size_t)(plane * 2 + xs[3] * 6 + 5)] = 1e30;
    x[(size_t)(plane * 0 + xs[3] * 8 + 2)] = -1e30;
    inputs[0] = Tensor::from_doubles(DType::f32, xs, x);
    // 1e-4: Winograd's transforms round a sum of 1e30 terms a few ulp further than float rounding.
    const ExtremeValues seen = expect_as_the_reference(*compiled, g, inputs, 1e-4);
    EXPECT_GE(seen.nans, 1u);
    EXPECT_GE(seen.huge, 1u) << "a sum past exp's range";
  }
}

// A 1x1 conv of one pixel (a squeeze-excite's two convs) is a matrix-vector product of its weights'
// rows (rk_gemm of one row: rk_gemv_rows), then its epilogue on the whole column: a squeeze-excite
// with its relu and sigmoid; a batch of 2 in two groups with a SiLU; one with neither bias nor
// epilogue. Each agrees with the reference, and a NaN reaches every output it feeds.
TEST(CppBackend, AOneByOneConvOfOnePixelIsAMatrixVectorProduct) {
  const std::vector<std::string> graphs = {
      "graph g(%x: f32[1, 440, 1, 1], %w1: f32[110, 440, 1, 1], %b1: f32[110], %w2: f32[440, 110, 1, 1], %b2: f32[440]) {\n"
      "  %a = conv2d(%x, %w1, %b1)\n  %r = relu(%a)\n  %c = conv2d(%r, %w2, %b2)\n  %s = sigmoid(%c)\n  return (%s)\n}",
      "graph g(%x: f32[2, 64, 1, 1], %w: f32[96, 32, 1, 1], %b: f32[96]) {\n  %y = conv2d(%x, %w, %b, groups=2)\n  %s = silu(%y)\n  return (%s)\n}",
      "graph g(%x: f32[1, 300, 1, 1], %w: f32[700, 300, 1, 1]) {\n  %y = conv2d(%x, %w)\n  return (%y)\n}",
  };
  for (const std::string& text : graphs) {
    SCOPED_TRACE(text);
    const Graph g = parse_graph(text);
    const auto compiled = compile_graph(g, cpp_options());
    EXPECT_NE(compiled->source().find("rk_gemm(RK_NO_TRANS, RK_TRANS, 1, "), std::string::npos);
    EXPECT_EQ(compiled->source().find("#define RK_CONV_KERNELS"), std::string::npos) << "no conv GEMM, so no conv kernels unit";
    EXPECT_LE(max_error_vs_f64(g, cpp_options()), tolerance_for(g));
    std::vector<Tensor> inputs = generate_inputs(g, 3);
    std::vector<double> x = inputs[0].to_doubles();
    x[5] = NAN;
    inputs[0] = Tensor::from_doubles(DType::f32, inputs[0].shape(), x);
    EXPECT_GE(expect_as_the_reference(*compiled, g, inputs, 1e-5).nans, 1u);
  }
}

// The depthwise kernel's SiLU (AVX-512's rk_silu_lanes, AVX2's rk_silu8, each on its own exp)
// against the exact x / (1 + exp(-x)) across its range, through a conv that passes its input
// through (the middle tap 1, the others 0) and adds a shift a channel (0 but for the last five
// channels): within 3 ulp down to -80; below, where the result is under 1e-32, within that of it
// (-0 where exp(-x) overflows, as the generated decomposition gives). The last channels' shifts
// give every pixel inf (silu inf), -inf (NaN: -inf times 0, as the decomposition), NaN, 1e30 and
// -1e30 (-0). 3x3 and 5x5: AVX2's form takes only the second.
TEST(CppBackend, DepthwiseSiluIsWithinThreeUlpsAcrossItsRange) {
  for (const int taps : {3, 5}) {
    std::vector<double> x = {0.0, -0.0, 88.8, -88.8, -104.5, 3e38, -3e38};
    for (double v = -110.0; v < 100.0; v += 0.0123) x.push_back((double)(float)v);
    const std::vector<double> specials = {INFINITY, -INFINITY, NAN, 1e30, -1e30};
    const int64_t swept = ((int64_t)x.size() + 195) / 196, channels = swept + (int64_t)specials.size();
    x.resize((size_t)(channels * 196), 1.0);
    const Graph g =
        parse_graph(fmt::format("graph t(%x: f32[1, {0}, 14, 14], %w: f32[{0}, 1, {1}, {1}], %t: f32[1, {0}, 1, 1]) {{\n  %y = conv2d(%x, %w, "
                                "padding=[{2}, {2}], groups={0})\n"
                                "  %z = add(%y, %t)\n  %s = silu(%z)\n  return (%s)\n}}",
                                channels, taps, taps / 2));
    const auto compiled = compile_graph(g, cpp_options());
    EXPECT_NE(compiled->source().find("RkActivation::silu>("), std::string::npos);
    std::vector<double> w((size_t)(channels * taps * taps), 0.0), t((size_t)channels, 0.0);
    for (int64_t c = 0; c < channels; ++c) w[(size_t)(c * taps * taps + taps * taps / 2)] = 1.0;
    for (size_t k = 0; k < specials.size(); ++k) t[(size_t)swept + k] = specials[k];
    const std::vector<double> got =
        compiled
            ->run({Tensor::from_doubles(DType::f32, {1, channels, 14, 14}, x), Tensor::from_doubles(DType::f32, {channels, 1, taps, taps}, w),
                   Tensor::from_doubles(DType::f32, {1, channels, 1, 1}, t)})[0]
            .to_doubles();
    double worst = 0, at = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double xi = (double)(float)(x[i] + t[i / 196]), o = got[i];  // the sum as float holds it
      if (std::isnan(xi) || xi == -INFINITY) {
        EXPECT_TRUE(std::isnan(o)) << "at x = " << xi;
      } else if (xi == INFINITY || xi > 1e30) {
        EXPECT_EQ(o, xi) << "at x = " << xi;
      } else if (xi < -80.0) {
        EXPECT_LE(std::fabs(o), 1e-32) << "at x = " << xi;
        EXPECT_TRUE(o <= 0.0) << "at x = " << xi;
      } else {
        const double exact = xi / (1.0 + std::exp(-xi));
        const float want = (float)exact;
        const double step = std::fabs(want) < 1.17549435e-38 ? 1.4012984643e-45 : std::nextafter(std::fabs(want), INFINITY) - std::fabs(want);
        const double err = std::fabs(o - exact) / step;
        if (err > worst) worst = err, at = xi;
      }
    }
    EXPECT_LE(worst, 3.0) << taps << "x" << taps << " at x = " << at;
  }
}

// A cat whose operands only it reads (squeezenet's fire modules at batch 1) has no kernel: each
// operand's kernel writes its slice of the cat's buffer (plan_cats in cpp_codegen.cpp).
TEST(CppBackend, ACatsOperandsAreWrittenInPlace) {
  Graph g = parse_graph(
      "graph fire(%x: f32[1, 8, 9, 9], %w1: f32[6, 8, 1, 1], %w3: f32[10, 8, 3, 3], %y: f32[1, 2, 9, 9]) {\n"
      "  %a = conv2d(%x, %w1)\n  %ra = relu(%a)\n  %b = conv2d(%x, %w3, padding=[1, 1])\n  %rb = relu(%b)\n"
      "  %c = cat(%ra, %rb, dim=1)\n  %e = exp(%y)\n  %d = cat(%e, %y, dim=1)\n  %m = mul(%c, %c)\n  %n = mul(%d, %d)\n  return (%m, %n)\n}");
  EXPECT_LT(max_error_vs_f64(g, cpp_options()), 1e-5);
  const std::string src = compile_graph(g, cpp_options())->source();
  EXPECT_EQ(src.find("// kernel: c\n"), std::string::npos) << "%c's operands should be written in place";
  EXPECT_NE(src.find("// kernel: d\n"), std::string::npos) << "%d copies its input operand";
}

// Views are read through their base: a transposed weight reaches BLAS as its Trans flag, a
// permuted attention operand as a leading dimension; no copy kernel is generated for them.
TEST(CppBackend, ViewsFoldIntoTheirConsumers) {
  Graph g = load_module_file(std::string(REPROKIT_SOURCE_DIR) + "/bench/models/bert_layer.rk").entry();
  std::string src = compile_graph(g, cpp_options())->source();
  EXPECT_NE(src.find("RK_TRANS"), std::string::npos) << "the transposed weights and keys should be BLAS's Trans operands";
  EXPECT_EQ(src.find("pa[p]"), std::string::npos) << "no matmul operand of the BERT layer needs packing";
  EXPECT_EQ(src.find("pb[p]"), std::string::npos) << "no matmul operand of the BERT layer needs packing";
  for (auto view : {"q4", "k4", "v4", "qh", "kh", "vh", "ct"})
    EXPECT_EQ(src.find(std::string("// kernel: ") + view + "\n"), std::string::npos) << "%" << view << " was copied";
  // The context's permute + reshape is not viewable (as in PyTorch): that one is a copy.
  EXPECT_NE(src.find("// kernel: cr\n"), std::string::npos);
}

// Max pooling on the prelude's kernel (cpp_pool.h, AVX-512 or AVX2) is the reference's, bit for bit: the first maximum
// (a -0 before a +0 stays -0), a NaN anywhere in a window wins (its plane pooled again by the
// exact rule), the infinities, windows partly in the padding, a last window past the input
// (ceil_mode); stride 2 and 1 along a row, 3x3 and 2x2 windows, rows of 2 vectors and a part.
TEST(CppBackend, MaxPoolMatchesTheReferenceBitForBit) {
  const Shape shape = {2, 3, 9, 37};
  std::vector<double> x(static_cast<size_t>(numel(shape)));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>((i * 7919) % 1000) / 100.0 - 5.0;
  const int64_t plane = 9 * 37;
  for (int64_t i = 0; i < plane; ++i) x[static_cast<size_t>(plane + i)] = (i % 2 == 0) ? -0.0 : 0.0;  // plane 1: ties of zeros
  x[static_cast<size_t>(2 * plane + 40)] = NAN;                                                       // plane 2: a NaN, and after it a larger value
  x[static_cast<size_t>(2 * plane + 41)] = 100.0;
  x[static_cast<size_t>(3 * plane + 5)] = INFINITY;
  x[static_cast<size_t>(4 * plane + 77)] = -INFINITY;
  Graph g = parse_graph(
      "graph t(%x: f32[2, 3, 9, 37]) {\n  %a = max_pool2d(%x, kernel=[3, 3], stride=[2, 2], padding=[1, 1], ceil_mode=true)\n"
      "  %b = max_pool2d(%x, kernel=[2, 2], stride=[1, 1])\n  %c = max_pool2d(%x, kernel=[3, 2], stride=[3, 2], padding=[1, 0])\n"
      "  return (%a, %b, %c)\n}");
  const std::vector<Tensor> in = {Tensor::from_doubles(DType::f32, shape, x)};
  const auto ref = interpret(g, in), got = compile_graph(g, cpp_options())->run(in);
  ASSERT_EQ(got.size(), ref.size());
  for (size_t k = 0; k < ref.size(); ++k) {
    const auto r = ref[k].to_doubles(), o = got[k].to_doubles();
    int nans = 0;
    for (size_t e = 0; e < r.size(); ++e) {
      nans += std::isnan(r[e]);
      if (std::isnan(r[e])) EXPECT_TRUE(std::isnan(o[e])) << "output " << k << " [" << e << "]";
      else EXPECT_TRUE(o[e] == r[e] && std::signbit(o[e]) == std::signbit(r[e])) << "output " << k << " [" << e << "]: " << o[e] << " != " << r[e];
    }
    EXPECT_GT(nans, 0) << "output " << k << ": the NaN reaches no window";
  }
}
