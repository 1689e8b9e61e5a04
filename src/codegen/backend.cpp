// The backend table (see backend.h). Each backend's compile function lives in its own file.
#include "reprokit/codegen/backend.h"

#include <fmt/format.h>

#include "reprokit/support/errors.h"
#include "reprokit/ir/names.h"

namespace reprokit {

std::unique_ptr<CompiledGraph> compile_eager(const Graph& g, const CompileOptions& options);        // interpreted_backend.cpp
std::unique_ptr<CompiledGraph> compile_aot_eager(const Graph& g, const CompileOptions& options);    // interpreted_backend.cpp
std::unique_ptr<CompiledGraph> compile_cpp(const Graph& g, const CompileOptions& options);          // cpp_backend.cpp
std::unique_ptr<CompiledGraph> compile_cuda(const Graph& g, const CompileOptions& options);         // cuda_backend.cpp
std::unique_ptr<CompiledGraph> compile_onnxruntime(const Graph& g, const CompileOptions& options);  // onnxruntime_backend.cpp
std::unique_ptr<CompiledGraph> compile_inductor(const Graph& g, const CompileOptions& options);     // inductor_backend.cpp
std::unique_ptr<CompiledGraph> compile_openvino(const Graph& g, const CompileOptions& options);     // openvino_backend.cpp
std::unique_ptr<CompiledGraph> compile_tvm(const Graph& g, const CompileOptions& options);          // tvm_backend.cpp
std::unique_ptr<CompiledGraph> compile_iree(const Graph& g, const CompileOptions& options);         // iree_backend.cpp
bool cuda_context_lost();                                                                           // cuda_backend.cpp
extern const BackendSwitches kOnnxRuntimeSwitches;                                                  // onnxruntime_switches.cpp
extern const BackendSwitches kInductorSwitches;                                                     // inductor_switches.cpp
extern const BackendSwitches kTvmSwitches;                                                          // tvm_switches.cpp
extern const BackendSwitches kOpenVinoSwitches;                                                     // openvino_switches.cpp
extern const BackendSwitches kIreeSwitches;                                                         // iree_switches.cpp

namespace {

//                     name         summary                                                  aot    passes switches reference kernels ops compile
// constexpr: filled before any other file's static initializer reads it (`reprokit run --help`).
constexpr Backend kBackends[] = {
    {"eager", "the reference interpreter on the captured graph (no compiler)", false, false, nullptr, true, false, OpLanguage::reprokit,
     compile_eager},
    {"aot_eager", "the reference interpreter on the decomposed graph (no compiler)", true, false, nullptr, true, false, OpLanguage::reprokit,
     compile_aot_eager},
    {"cpp", "decompositions, passes, C++ built by the system compiler (OpenBLAS GEMM)", true, true, nullptr, false, true, OpLanguage::reprokit,
     compile_cpp},
    {"cuda", "decompositions, passes, CUDA built by NVRTC, run through the driver", true, true, nullptr, false, false, OpLanguage::reprokit,
     compile_cuda},
    {"onnxruntime", "the captured graph exported to ONNX and run by ONNX Runtime (CPU) under Node.js", false, false, &kOnnxRuntimeSwitches, false,
     false, OpLanguage::onnx, compile_onnxruntime},
    {"inductor", "the captured graph as PyTorch ATen calls, compiled by torch.compile (Inductor) in a Python worker", false, false,
     &kInductorSwitches, false, false, OpLanguage::aten, compile_inductor},
    {"openvino", "the captured graph exported to ONNX and run by OpenVINO's CPU plugin in a Python worker", false, false, &kOpenVinoSwitches, false,
     false, OpLanguage::onnx, compile_openvino},
    {"tvm", "the captured graph exported to ONNX, compiled by Apache TVM (Relax, LLVM CPU target) in a Python worker", false, false, &kTvmSwitches,
     false, false, OpLanguage::onnx, compile_tvm},
    {"iree", "the captured graph exported to ONNX, compiled by IREE (llvm-cpu target) in a Python worker", false, false, &kIreeSwitches, false, false,
     OpLanguage::onnx, compile_iree},
};

}  // namespace

std::span<const Backend> backend_table() { return kBackends; }

const Backend* find_backend(std::string_view name) {
  for (const Backend& b : kBackends)
    if (b.name == name) return &b;
  return nullptr;
}

std::string backend_choices() {
  std::string s;
  const size_t n = std::size(kBackends);
  for (size_t k = 0; k < n; ++k) s += fmt::format("{}{}", k == 0 ? "" : k + 1 == n ? " or " : ", ", kBackends[k].name);
  return s;
}

const Backend& backend_named(std::string_view name) {
  if (const Backend* b = find_backend(name)) return *b;
  throw UserError(fmt::format("unknown backend '{}' (expected {})", printable(name), backend_choices()));
}

bool device_lost_in_this_process() { return cuda_context_lost(); }

bool passes_run(const CompileOptions& options) {
  const Backend* b = find_backend(options.backend);
  return options.run_passes && b && b->runs_passes;
}

}  // namespace reprokit
