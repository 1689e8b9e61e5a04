// The cuda backend: generated CUDA code of every example model (and every op) compiles with
// NVRTC; an injected compile error is NVRTC's; running needs a GPU and is checked only with one.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <filesystem>

#include "../ir/all_ops.h"
#include "backend_test_util.h"
#include "reprokit/support/errors.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

bool have_nvrtc() { return std::filesystem::exists("/usr/local/cuda/lib64/libnvrtc.so"); }
bool have_driver() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) dlclose(h);
  return h != nullptr;
}

CompileOptions cuda_options() {
  CompileOptions o;
  o.backend = "cuda";
  return o;
}

}  // namespace

TEST(CudaBackend, EveryExampleModelAndEveryOpCompilesWithNvrtc) {
  if (!have_nvrtc()) GTEST_SKIP() << "NVRTC is not installed under /usr/local/cuda: CUDA compilation was not tested";
  for (auto name : {"mlp", "attention", "embedding_classifier", "mixed_precision"}) {
    Graph g = load_module_file(std::string(REPROKIT_SOURCE_DIR) + "/examples/" + name + ".rk").entry();
    std::unique_ptr<CompiledGraph> c;
    EXPECT_NO_THROW(c = compile_graph(g, cuda_options())) << name;
    if (c) {
      EXPECT_NE(c->source().find("__global__ void rk_graph_kernel"), std::string::npos);
    }
  }
  EXPECT_NO_THROW(compile_graph(parse_graph(kAllOpsGraph), cuda_options()));
  EXPECT_NO_THROW(compile_graph(parse_graph(kSmallIntsGraph), cuda_options()));
  EXPECT_NO_THROW(compile_graph(parse_graph(kUint16Graph), cuda_options()));
}

TEST(CudaBackend, InjectedCompileErrorComesFromNvrtc) {
  if (!have_nvrtc()) GTEST_SKIP() << "NVRTC is not installed";
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
  if (!have_nvrtc()) GTEST_SKIP() << "NVRTC is not installed";
  Graph g = load_module_file(std::string(REPROKIT_SOURCE_DIR) + "/examples/mlp.rk").entry();
  if (!have_driver()) {
    auto c = compile_graph(g, cuda_options());
    try {
      c->run(generate_inputs(g, 1));
      FAIL() << "ran without a driver";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("no CUDA driver (libcuda.so.1)"), std::string::npos) << e.what();
    }
    GTEST_SKIP() << "no GPU here: the generated CUDA code was compiled with NVRTC but not run";
  }
  EXPECT_LT(max_error_vs_f64(g, cuda_options()), 1e-5);
}
