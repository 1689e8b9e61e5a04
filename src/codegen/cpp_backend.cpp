// The cpp backend: lowers the graph (decompositions, passes), renders C++, builds a shared
// object with the system compiler (cached by content) and calls its entry point.
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>

#include "cpp_codegen.h"
#include "cpp_toolchain.h"
#include "reprokit/codegen/compiled_graph.h"
#include "reprokit/codegen/lowering.h"
#include "reprokit/support/errors.h"

namespace reprokit {

namespace {

// Input tensors in the layout the generated code was compiled for (declared strides).
Tensor in_declared_layout(const Tensor& t, const TensorType& declared) {
  Shape want = declared.effective_strides();
  if (t.strides() == want && t.offset() == 0) return t;
  return t.with_strides(want);
}

using EntryFn = int (*)(void* const*, void* const*, unsigned char*, char*, int);
using ProfileFn = int (*)(void* const*, void* const*, unsigned char*, char*, int, double*);

// Memory for intermediates, allocated on the first run and kept: a fresh zeroed workspace per run
// cost more than the kernels on small models (page faults and memset were 80% of mobilenet_v2's
// run). Not zeroed but for its last `kept` bytes (what kernels derive from frozen inputs, marked
// not yet derived): every kernel writes its buffers before reading them.
struct Workspace {
  std::mutex mutex;  // one run at a time uses it
  std::unique_ptr<unsigned char, void (*)(void*)> memory{nullptr, std::free};
  unsigned char* get(int64_t bytes, int64_t kept) {
    if (!memory) {
      memory.reset(static_cast<unsigned char*>(std::aligned_alloc(64, static_cast<size_t>((bytes + 63) / 64 * 64))));
      if (!memory) throw std::bad_alloc();
      std::memset(memory.get() + (bytes - kept), 0, static_cast<size_t>(kept));
    }
    return memory.get();
  }
};

class CppCompiledGraph : public CompiledGraph {
 public:
  CppCompiledGraph(Graph g, std::string source, std::vector<std::string> labels, CompiledLibrary lib, const std::set<std::string>& frozen)
      : g_(std::move(g)), source_(std::move(source)), labels_(std::move(labels)), lib_(lib) {
    for (int i = 0; i < g_.num_inputs(); ++i)
      if (frozen.count(g_.node(i).name)) frozen_.push_back(i);
  }

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override { return run_with(inputs, nullptr); }
  std::string source() const override { return source_; }
  std::vector<std::string> kernel_labels() const override { return timed() ? labels_ : std::vector<std::string>{}; }
  std::vector<Tensor> run_timing_kernels(const std::vector<Tensor>& inputs, std::vector<double>* seconds) override {
    if (!timed()) return run(inputs);
    seconds->assign(labels_.size(), 0.0);
    return run_with(inputs, seconds);
  }

 private:
  // The library has the kernel timer, for as many kernels as there are labels.
  bool timed() const { return lib_.profile && lib_.kernels == static_cast<int64_t>(labels_.size()); }

  std::vector<Tensor> run_with(const std::vector<Tensor>& inputs, std::vector<double>* seconds) {
    int ni = g_.num_inputs();
    if (static_cast<int>(inputs.size()) != ni) throw UserError(fmt::format("graph {} takes {} inputs, got {}", g_.name, ni, inputs.size()));
    std::vector<Tensor> ins;
    std::vector<void*> in_ptrs, out_ptrs;
    for (int i = 0; i < ni; ++i) {
      const TensorType& t = g_.node(i).type;
      if (inputs[static_cast<size_t>(i)].dtype() != t.dtype || inputs[static_cast<size_t>(i)].shape() != t.shape)
        throw UserError(fmt::format("input %{} of graph {} must be {}", g_.node(i).name, g_.name, t.str()));
      ins.push_back(in_declared_layout(inputs[static_cast<size_t>(i)], t));
      in_ptrs.push_back(ins.back().data());
    }
    std::vector<Tensor> outs;
    for (int o : g_.outputs) outs.push_back(Tensor::zeros(g_.node(o).type.dtype, g_.node(o).type.shape));
    for (auto& t : outs) out_ptrs.push_back(t.data());
    char err[1024] = {0};
    std::lock_guard<std::mutex> lock(workspace_.mutex);
    unsigned char* ws = workspace_.get(lib_.workspace_bytes, lib_.kept_bytes);
    const int rc = seconds ? reinterpret_cast<ProfileFn>(lib_.profile)(in_ptrs.data(), out_ptrs.data(), ws, err, sizeof err, seconds->data())
                           : reinterpret_cast<EntryFn>(lib_.entry)(in_ptrs.data(), out_ptrs.data(), ws, err, sizeof err);
    // The frozen inputs' tensors stay alive while the kept region refers to them, so no other
    // tensor is given their addresses (the kernels tell one B from another by its address).
    held_.clear();
    for (int i : frozen_) held_.push_back(ins[static_cast<size_t>(i)]);
    if (rc != 0) throw CompileFailure(FailureKind::runtime_error, fmt::format("generated code for graph {} failed: {}", g_.name, err));
    return outs;
  }

  Graph g_;
  std::string source_;
  std::vector<std::string> labels_;
  CompiledLibrary lib_;
  Workspace workspace_;
  std::vector<int> frozen_;   // inputs in CompileOptions::frozen_inputs
  std::vector<Tensor> held_;  // their tensors in the last run
};

}  // namespace

std::unique_ptr<CompiledGraph> compile_cpp(const Graph& g, const CompileOptions& options) {
  NodeInjections inj = resolve_injections(g, options);
  Graph lowered = lower_for_codegen(g, options, nullptr);
  CppSource source = render_cpp(lowered, inj, options.frozen_inputs);
  CompiledLibrary lib = build_shared_object(source, default_cache_dir(options.cache_dir));
  return std::make_unique<CppCompiledGraph>(std::move(lowered), source.text(), source.kernel_labels, lib, options.frozen_inputs);
}

}  // namespace reprokit
