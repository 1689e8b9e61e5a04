// The cuda backend: the shared lowering rendered as CUDA C++, compiled in-process by NVRTC
// (loaded with dlopen), and run through the CUDA driver API (libcuda.so.1, also dlopen'ed) when a
// GPU is present. Without a driver it is compile-only and says so when asked to run.
#include "cuda_backend.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "reprokit/support/errors.h"

namespace reprokit {

namespace {

// ---- NVRTC, loaded at run time ----
using nvrtcProgram = void*;
struct Nvrtc {
  void* lib = nullptr;
  int (*create)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*) = nullptr;
  int (*compile)(nvrtcProgram, int, const char* const*) = nullptr;
  int (*log_size)(nvrtcProgram, size_t*) = nullptr;
  int (*log)(nvrtcProgram, char*) = nullptr;
  int (*ptx_size)(nvrtcProgram, size_t*) = nullptr;
  int (*ptx)(nvrtcProgram, char*) = nullptr;
  int (*destroy)(nvrtcProgram*) = nullptr;
};

template <class F> void bind(void* lib, const char* name, F& f) { f = reinterpret_cast<F>(dlsym(lib, name)); }

const Nvrtc* nvrtc() {
  static Nvrtc n;
  static std::once_flag once;
  std::call_once(once, [] {
    for (const char* path : {REPROKIT_CUDA_ROOT "/lib64/libnvrtc.so", "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"}) {
      n.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
      if (n.lib) break;
    }
    if (!n.lib) return;
    bind(n.lib, "nvrtcCreateProgram", n.create);
    bind(n.lib, "nvrtcCompileProgram", n.compile);
    bind(n.lib, "nvrtcGetProgramLogSize", n.log_size);
    bind(n.lib, "nvrtcGetProgramLog", n.log);
    bind(n.lib, "nvrtcGetPTXSize", n.ptx_size);
    bind(n.lib, "nvrtcGetPTX", n.ptx);
    bind(n.lib, "nvrtcDestroyProgram", n.destroy);
  });
  return n.lib && n.create && n.compile && n.ptx ? &n : nullptr;
}

// ---- the CUDA driver API, loaded at run time ----
using CUdeviceptr = unsigned long long;
struct Driver {
  void* lib = nullptr;
  int (*init)(unsigned) = nullptr;
  int (*device_get)(int*, int) = nullptr;
  int (*primary_ctx_retain)(void**, int) = nullptr;
  int (*primary_ctx_release)(int) = nullptr;
  int (*ctx_set_current)(void*) = nullptr;
  int (*module_load_data)(void**, const void*) = nullptr;
  int (*module_unload)(void*) = nullptr;
  int (*module_get_function)(void**, void*, const char*) = nullptr;
  int (*mem_alloc)(CUdeviceptr*, size_t) = nullptr;
  int (*mem_free)(CUdeviceptr) = nullptr;
  int (*htod)(CUdeviceptr, const void*, size_t) = nullptr;
  int (*dtoh)(void*, CUdeviceptr, size_t) = nullptr;
  int (*memset)(CUdeviceptr, unsigned char, size_t) = nullptr;
  int (*launch)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**, void**) = nullptr;
  int (*sync)() = nullptr;
  int (*error_name)(int, const char**) = nullptr;
};

const Driver* driver() {
  static Driver d;
  static std::once_flag once;
  std::call_once(once, [] {
    d.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!d.lib) return;
    bind(d.lib, "cuInit", d.init);
    bind(d.lib, "cuDeviceGet", d.device_get);
    bind(d.lib, "cuDevicePrimaryCtxRetain", d.primary_ctx_retain);
    bind(d.lib, "cuDevicePrimaryCtxRelease_v2", d.primary_ctx_release);
    bind(d.lib, "cuCtxSetCurrent", d.ctx_set_current);
    bind(d.lib, "cuModuleLoadData", d.module_load_data);
    bind(d.lib, "cuModuleUnload", d.module_unload);
    bind(d.lib, "cuModuleGetFunction", d.module_get_function);
    bind(d.lib, "cuMemAlloc_v2", d.mem_alloc);
    bind(d.lib, "cuMemFree_v2", d.mem_free);
    bind(d.lib, "cuMemcpyHtoD_v2", d.htod);
    bind(d.lib, "cuMemcpyDtoH_v2", d.dtoh);
    bind(d.lib, "cuMemsetD8_v2", d.memset);
    bind(d.lib, "cuLaunchKernel", d.launch);
    bind(d.lib, "cuCtxSynchronize", d.sync);
    bind(d.lib, "cuGetErrorName", d.error_name);
    const bool complete = d.init && d.device_get && d.primary_ctx_retain && d.primary_ctx_release && d.ctx_set_current && d.module_load_data &&
                          d.module_unload && d.module_get_function && d.mem_alloc && d.mem_free && d.htod && d.dtoh && d.memset && d.launch && d.sync;
    if (!complete || d.init(0) != 0) d.lib = nullptr;
  });
  return d.lib ? &d : nullptr;
}

// "CUDA_ERROR_ILLEGAL_ADDRESS (700)": the name is what a user searches for.
std::string error_text(const Driver* d, int rc) {
  const char* name = nullptr;
  if (d->error_name && d->error_name(rc, &name) == 0 && name) return fmt::format("{} ({})", name, rc);
  return fmt::format("error {}", rc);
}

void check(const Driver* d, int rc, const char* what) {
  if (rc != 0) throw CompileFailure(FailureKind::runtime_error, fmt::format("CUDA driver {} in {}", error_text(d, rc), what));
}

// The driver's error of the kernel fault that cost this process its CUDA context, or 0. After an
// illegal address or a trap the context is corrupt and every later call fails the same way: CUDA
// asks for the process to end and a new one to start. Later runs say so instead of reporting the
// stale error as their own failure.
std::atomic<int> lost_context_error{0};

// What one run holds on the GPU, given back when the run ends, failed or not: its memory, its
// module and its reference to the primary context (taken by the constructor, which gives it back
// itself if it then fails: a constructor that throws gets no destructor).
struct GpuRun {
  const Driver* d;
  int dev = 0;
  void* module = nullptr;
  std::vector<CUdeviceptr> memory;
  explicit GpuRun(const Driver* driver) : d(driver) {
    void* ctx = nullptr;
    check(d, d->device_get(&dev, 0), "cuDeviceGet");
    check(d, d->primary_ctx_retain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    if (int rc = d->ctx_set_current(ctx); rc != 0) {
      d->primary_ctx_release(dev);
      check(d, rc, "cuCtxSetCurrent");
    }
  }
  GpuRun(const GpuRun&) = delete;
  GpuRun& operator=(const GpuRun&) = delete;
  ~GpuRun() {
    for (auto p : memory) d->mem_free(p);
    if (module) d->module_unload(module);
    d->primary_ctx_release(dev);
  }
  CUdeviceptr alloc(size_t bytes) {
    CUdeviceptr p = 0;
    check(d, d->mem_alloc(&p, std::max<size_t>(bytes, 16)), "cuMemAlloc");
    memory.push_back(p);
    return p;
  }
};

class CudaCompiledGraph : public CompiledGraph {
 public:
  CudaCompiledGraph(Graph g, CudaSource src, std::string ptx) : g_(std::move(g)), src_(std::move(src)), ptx_(std::move(ptx)) {}

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
    const Driver* d = driver();
    if (!d)
      throw UserError(
          fmt::format("cuda backend: no CUDA driver (libcuda.so.1) on this machine: graph {} was compiled to PTX with NVRTC "
                      "but cannot run here",
                      g_.name));
    if (int lost = lost_context_error.load())
      throw UserError(
          fmt::format("cuda backend: this process lost its CUDA context to an earlier kernel fault ({}); graph {} needs a new "
                      "process to run on the GPU",
                      error_text(d, lost), g_.name));
    GpuRun gpu(d);
    void* fn = nullptr;
    check(d, d->module_load_data(&gpu.module, ptx_.c_str()), "cuModuleLoadData");
    check(d, d->module_get_function(&fn, gpu.module, "rk_graph_kernel"), "cuModuleGetFunction");
    std::vector<CUdeviceptr> in_ptrs, out_ptrs;
    std::vector<Tensor> outs;
    for (size_t i = 0; i < inputs.size(); ++i) {
      // The layout the kernel was generated for (declared strides), copied exactly.
      const TensorType& decl = g_.node(static_cast<int>(i)).type;
      Tensor t = inputs[i];
      if (t.strides() != decl.effective_strides() || t.offset() != 0) t = t.with_strides(decl.effective_strides());
      CUdeviceptr p = gpu.alloc(t.storage_bytes());
      check(d, d->htod(p, t.data(), t.storage_bytes()), "cuMemcpyHtoD");
      in_ptrs.push_back(p);
    }
    for (int o : g_.outputs) {
      outs.push_back(Tensor::zeros(g_.node(o).type.dtype, g_.node(o).type.shape));
      out_ptrs.push_back(gpu.alloc(outs.back().storage_bytes()));
    }
    CUdeviceptr d_in = gpu.alloc(in_ptrs.size() * sizeof(CUdeviceptr)), d_out = gpu.alloc(out_ptrs.size() * sizeof(CUdeviceptr));
    check(d, d->htod(d_in, in_ptrs.data(), in_ptrs.size() * sizeof(CUdeviceptr)), "cuMemcpyHtoD");
    check(d, d->htod(d_out, out_ptrs.data(), out_ptrs.size() * sizeof(CUdeviceptr)), "cuMemcpyHtoD");
    CUdeviceptr ws = gpu.alloc(static_cast<size_t>(src_.workspace_bytes)), err = gpu.alloc(sizeof(int));
    check(d, d->memset(err, 0, sizeof(int)), "cuMemsetD8");
    void* params[] = {&d_in, &d_out, &ws, &err};
    check(d, d->launch(fn, 1, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr), "cuLaunchKernel");
    if (int rc = d->sync(); rc != 0) {
      lost_context_error = rc;
      throw CompileFailure(
          FailureKind::runtime_error,
          fmt::format("CUDA kernel of graph {} failed: {} (an illegal address or a trap in the generated code)", g_.name, error_text(d, rc)));
    }
    int code = 0;
    check(d, d->dtoh(&code, err, sizeof(int)), "cuMemcpyDtoH");
    if (code > 0 && static_cast<size_t>(code) <= src_.error_messages.size())
      throw CompileFailure(FailureKind::runtime_error,
                           fmt::format("generated code for graph {} failed: {}", g_.name, src_.error_messages[static_cast<size_t>(code) - 1]));
    for (size_t k = 0; k < outs.size(); ++k) check(d, d->dtoh(outs[k].data(), out_ptrs[k], outs[k].storage_bytes()), "cuMemcpyDtoH");
    return outs;
  }
  std::string source() const override { return src_.source; }

 private:
  Graph g_;
  CudaSource src_;
  std::string ptx_;
};

}  // namespace

bool nvrtc_available() { return nvrtc() != nullptr; }
bool cuda_driver_available() { return driver() != nullptr; }
bool cuda_context_lost() { return lost_context_error.load() != 0; }

std::unique_ptr<CompiledGraph> compile_cuda(const Graph& g, const CompileOptions& options) {
  const NodeInjections injections = resolve_injections(g, options);
  const Graph lowered = lower_for_codegen(g, options, nullptr);
  const Nvrtc* n = nvrtc();
  if (!n) throw UserError("cuda backend: NVRTC (libnvrtc.so) was not found under " REPROKIT_CUDA_ROOT "/lib64 or on the library path");
  CudaSource src = render_cuda(lowered, injections);
  nvrtcProgram prog = nullptr;
  if (n->create(&prog, src.source.c_str(), (lowered.name + ".cu").c_str(), 0, nullptr, nullptr) != 0)
    throw CompileFailure(FailureKind::compile_error, "NVRTC could not create a program for graph " + lowered.name);
  const char* opts[] = {"--std=c++17", "-default-device"};
  int rc = n->compile(prog, 2, opts);
  size_t log_size = 0;
  n->log_size(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size) n->log(prog, log.data());
  if (rc != 0) {
    n->destroy(&prog);
    std::string first = log;
    if (auto e = log.find("error"); e != std::string::npos) first = log.substr(e, log.find('\n', e) - e);
    throw CompileFailure(FailureKind::compile_error, fmt::format("NVRTC rejected the generated CUDA code: {}\nlog:\n{}", first, log));
  }
  size_t ptx_size = 0;
  n->ptx_size(prog, &ptx_size);
  std::string ptx(ptx_size, '\0');
  n->ptx(prog, ptx.data());
  n->destroy(&prog);
  return std::make_unique<CudaCompiledGraph>(lowered, std::move(src), std::move(ptx));
}

}  // namespace reprokit
