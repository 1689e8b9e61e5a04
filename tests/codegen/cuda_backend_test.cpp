// The cuda backend: generated CUDA code of every example model (and every op) compiles with
// NVRTC; an injected compile error is NVRTC's. On a machine with a GPU (CudaOnTheGpu): every op,
// every example model and the small integer types against the reference, an injected error
// naming its node, and a kernel fault reported as such, after which the process says its CUDA
// context is lost. Without a GPU those skip, saying so.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "../ir/all_ops.h"
#include "backend_test_util.h"
#include "reprokit/codegen/backend.h"
#include "reprokit/support/errors.h"

using namespace reprokit;
using namespace reprokit::testing;

TEST(CudaBackend, EveryExampleModelAndEveryOpCompilesWithNvrtc) {
  if (!nvrtc_available()) GTEST_SKIP() << "NVRTC is not installed (under /usr/local/cuda or on the library path): CUDA compilation was not tested";
  for (auto name : {"mlp", "attention", "embedding_classifier", "mixed_precision"}) {
    Graph g = load_module_file(std::string(REPROKIT_SOURCE_DIR) + "/examples/" + name + ".rk").entry();
    std::unique_ptr<CompiledGraph> c;
    EXPECT_NO_THROW(c = compile_graph(g, cuda_options())) << name;
    if (c) { EXPECT_NE(c->source().find("__global__ void rk_graph_kernel"), std::string::npos); }
  }
  EXPECT_NO_THROW(compile_graph(parse_graph(kAllOpsGraph), cuda_options()));
  EXPECT_NO_THROW(compile_graph(parse_graph(kSmallIntsGraph), cuda_options()));
  EXPECT_NO_THROW(compile_graph(parse_graph(kUint16Graph), cuda_options()));
}

TEST(CudaBackend, InjectedCompileErrorComesFromNvrtc) {
  if (!nvrtc_available()) GTEST_SKIP() << "NVRTC is not installed";
  CompileOptions o = cuda_options();
  o.injections.push_back({Op::exp, FaultKind::compile_error});
  try {
    compile_graph(parse_graph("graph g(%x: f32[4]) {\n  %y = exp(%x)\n  return (%y)\n}"), o);
    FAIL() << "compiled";
  } catch (const CompileFailure& e) {
    EXPECT_EQ(e.kind, FailureKind::compile_error);
    EXPECT_NE(std::string(e.what()).find("NVRTC rejected the generated CUDA code"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rk_injected_compile_error_in_y"), std::string::npos) << e.what();
  }
}

TEST(CudaBackend, RunsOnAGpuOrSaysWhyNot) {
  if (!nvrtc_available()) GTEST_SKIP() << "NVRTC is not installed";
  Graph g = load_module_file(std::string(REPROKIT_SOURCE_DIR) + "/examples/mlp.rk").entry();
  if (!cuda_driver_available()) {
    auto c = compile_graph(g, cuda_options());
    try {
      c->run(generate_inputs(g, 1));
      FAIL() << "ran without a driver";
    } catch (const UserError& e) { EXPECT_NE(std::string(e.what()).find("no CUDA driver (libcuda.so.1)"), std::string::npos) << e.what(); }
    GTEST_SKIP() << "no GPU here: the generated CUDA code was compiled with NVRTC but not run";
  }
  EXPECT_LT(max_error_vs_f64(g, cuda_options()), 1e-5);
}

TEST(CudaOnTheGpu, EveryOpMatchesTheReference) {
  REQUIRE_GPU();
  Graph g = parse_graph(kAllOpsGraph);
  EXPECT_LT(max_error_vs_f64(g, cuda_options()), 5e-3);  // the graph holds f16 values too
  CompileOptions nopass = cuda_options();
  nopass.run_passes = false;
  EXPECT_LT(max_error_vs_f64(g, nopass), 5e-3);
}

TEST(CudaOnTheGpu, EveryExampleModelMatchesTheReference) {
  REQUIRE_GPU();
  for (auto name : {"mlp", "attention", "embedding_classifier", "mixed_precision"}) {
    SCOPED_TRACE(name);
    Graph g = load_module_file(std::string(REPROKIT_SOURCE_DIR) + "/examples/" + name + ".rk").entry();
    EXPECT_LT(max_error_vs_f64(g, cuda_options()), tolerance_for(g));
  }
}

TEST(CudaOnTheGpu, SmallIntegerTypesMatchTheExactReference) {
  REQUIRE_GPU();
  for (const char* text : {kSmallIntsGraph, kUint16Graph}) {
    Graph g = parse_graph(text);
    SCOPED_TRACE(g.name);
    std::vector<Tensor> in = generate_inputs(g, 7);
    auto ref = interpret(g, in);
    auto got = compile_graph(g, cuda_options())->run(in);
    for (size_t k = 0; k < ref.size(); ++k) {
      EXPECT_EQ(got[k].dtype(), ref[k].dtype()) << g.node(g.outputs[k]).name;
      EXPECT_EQ(got[k].to_doubles(), ref[k].to_doubles()) << g.node(g.outputs[k]).name;
    }
  }
}

// An input handed over in another layout than the declared one is copied into it exactly: an
// int64 above 2^53 survives (a copy through doubles rounded it).
TEST(CudaOnTheGpu, InputsInAnotherLayoutAreCopiedExactly) {
  REQUIRE_GPU();
  Graph g = parse_graph("graph g(%x: i64[2, 3] strides=[1, 2]) {\n  %y = add(%x, 1)\n  return (%y)\n}");
  Tensor x = Tensor::from_int64s(DType::i64, {2, 3}, {9007199254740993, 1, 2, 3, 4, 5});
  auto got = compile_graph(g, cuda_options())->run({x});
  EXPECT_EQ(got[0].to_int64s(), (std::vector<int64_t>{9007199254740994, 2, 3, 4, 5, 6}));
}

// A kernel that faults costs the process its CUDA context (CUDA's rule: the process must end): the
// run that faulted is a runtime error naming the driver's error, every later run of the process
// says the context is lost instead of failing as if on its own, and device_lost_in_this_process()
// tells long-lived processes (the minifier's workers) to end. In a re-executed child process
// (threadsafe death test), so that this process's context stays usable.
TEST(CudaOnTheGpuDeathTest, AKernelFaultCostsTheProcessItsContextAndSaysSo) {
  REQUIRE_GPU();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto fault_then_run = [] {
    Graph g = load_module_file(std::string(REPROKIT_SOURCE_DIR) + "/examples/mlp.rk").entry();
    CompileOptions crash = cuda_options();
    crash.injections.push_back({Op::gelu, FaultKind::crash});
    bool ok = !device_lost_in_this_process();
    try {
      compile_graph(g, crash)->run(generate_inputs(g, 1));
      std::fprintf(stderr, "the injected crash ran through\n");
      ok = false;
    } catch (const CompileFailure& e) {
      std::fprintf(stderr, "fault: %s\n", e.what());
      ok &= e.kind == FailureKind::runtime_error && std::string(e.what()).find("CUDA_ERROR_") != std::string::npos;
    }
    ok &= device_lost_in_this_process();
    try {
      compile_graph(g, cuda_options())->run(generate_inputs(g, 1));
      std::fprintf(stderr, "ran on a lost context\n");
      ok = false;
    } catch (const UserError& e) {
      std::fprintf(stderr, "next run: %s\n", e.what());
      ok &= std::string(e.what()).find("lost its CUDA context to an earlier kernel fault (CUDA_ERROR_") != std::string::npos;
    }
    std::fflush(stderr);
    std::exit(ok ? 0 : 1);
  };
  EXPECT_EXIT(fault_then_run(), ::testing::ExitedWithCode(0), "next run: .*lost its CUDA context");
}

TEST(CudaOnTheGpu, AnInjectedRuntimeErrorNamesTheNode) {
  REQUIRE_GPU();
  Graph g = parse_graph("graph g(%x: f32[300]) {\n  %y = exp(%x)\n  %z = neg(%y)\n  return (%z)\n}");
  CompileOptions o = cuda_options();
  o.injections.push_back({Op::exp, FaultKind::runtime_error});
  try {
    compile_graph(g, o)->run(generate_inputs(g, 1));
    FAIL() << "ran";
  } catch (const CompileFailure& e) {
    EXPECT_EQ(e.kind, FailureKind::runtime_error);
    EXPECT_NE(std::string(e.what()).find("injected runtime error in node %y"), std::string::npos) << e.what();
  }
  EXPECT_LT(max_error_vs_f64(g, cuda_options()), 1e-5);
}
