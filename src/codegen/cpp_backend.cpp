// The cpp backend: lowers the graph (decompositions, passes), renders C++, builds a shared
// object with the system compiler (cached by content) and calls its entry point.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "batch_slicing.h"
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

// How a run feeds the library: once with the whole tensors, or `count` times, each time `bytes`
// further into each input and output (0 for an input every slice reads whole: a weight).
struct Slices {
  int64_t count = 1;
  std::vector<int64_t> input_bytes, output_bytes;
};

Slices slices_of(const Graph& g, const std::optional<BatchSlicing>& slicing) {
  Slices s;
  s.input_bytes.assign(static_cast<size_t>(g.num_inputs()), 0);
  s.output_bytes.assign(g.outputs.size(), 0);
  if (!slicing) return s;
  s.count = slicing->count;
  const auto bytes = [&](int id) { return g.node(id).type.numel() * static_cast<int64_t>(dtype_size(g.node(id).type.dtype)) / s.count; };
  for (int i = 0; i < g.num_inputs(); ++i)
    if (slicing->input_batched[static_cast<size_t>(i)]) s.input_bytes[static_cast<size_t>(i)] = bytes(i);
  for (size_t k = 0; k < g.outputs.size(); ++k) s.output_bytes[k] = bytes(g.outputs[k]);
  return s;
}

class CppCompiledGraph : public CompiledGraph {
 public:
  // g: the graph as its callers see it (its input and output types); the library computes it
  // in `slices`.
  CppCompiledGraph(const Graph& g, Slices slices, std::string source, std::vector<std::string> labels, CompiledLibrary lib,
                   const std::set<std::string>& frozen)
      : name_(g.name), slices_(std::move(slices)), source_(std::move(source)), labels_(std::move(labels)), lib_(lib) {
    // A kernel's label names the types of the slice it computes; its timed seconds add up every
    // slice's, the kernel's share of a whole run.
    if (slices_.count > 1)
      for (std::string& label : labels_) label += fmt::format("  (shapes of one slice; time of all {})", slices_.count);
    for (int i = 0; i < g.num_inputs(); ++i) {
      inputs_.push_back({g.node(i).name, g.node(i).type});
      if (frozen.count(g.node(i).name)) frozen_.push_back(i);
    }
    for (int o : g.outputs) outputs_.push_back(g.node(o).type);
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
    const size_t ni = inputs_.size();
    if (inputs.size() != ni) throw UserError(fmt::format("graph {} takes {} inputs, got {}", name_, ni, inputs.size()));
    std::vector<Tensor> ins;
    for (size_t i = 0; i < ni; ++i) {
      const TensorType& t = inputs_[i].second;
      if (inputs[i].dtype() != t.dtype || inputs[i].shape() != t.shape)
        throw UserError(fmt::format("input %{} of graph {} must be {}", inputs_[i].first, name_, t.str()));
      ins.push_back(in_declared_layout(inputs[i], t));
    }
    std::vector<Tensor> outs;
    for (const TensorType& t : outputs_) outs.push_back(Tensor::zeros(t.dtype, t.shape));
    std::lock_guard<std::mutex> lock(mutex_);
    const int64_t workers = side_by_side(seconds != nullptr);
    if (workspaces_.size() < static_cast<size_t>(workers)) workspaces_.resize(static_cast<size_t>(workers));
    std::vector<std::array<char, 1024>> errors(static_cast<size_t>(workers), std::array<char, 1024>{});
    std::vector<int> rcs(static_cast<size_t>(workers), 0);
    // Worker t runs slices t, t + workers, ... of slices [first, last) on workspace t, until one fails.
    const auto work = [&](int64_t t, int64_t first, int64_t last) {
      unsigned char* ws = workspaces_[static_cast<size_t>(t)].get(lib_.workspace_bytes, lib_.kept_bytes);
      for (int64_t k = first + t; k < last && rcs[static_cast<size_t>(t)] == 0; k += workers)
        rcs[static_cast<size_t>(t)] = run_slice(k, ins, outs, ws, errors[static_cast<size_t>(t)].data(), seconds);
    };
    // As many slices as share out evenly side by side; the rest one after another, each on every
    // thread (batch 5 on two threads: 4 side by side, then the fifth).
    const int64_t even = workers > 1 ? slices_.count / workers * workers : 0;
    if (even > 0) {
      std::vector<std::thread> threads;
      try {
        for (int64_t t = 0; t < workers; ++t)
          threads.emplace_back([&, t] {
            lib_.one_thread();
            work(t, 0, even);
          });
      } catch (...) {  // a thread that could not start: the started ones finish before the error leaves
        for (auto& th : threads) th.join();
        throw;
      }
      for (auto& th : threads) th.join();
    }
    if (std::all_of(rcs.begin(), rcs.end(), [](int rc) { return rc == 0; })) {
      for (int64_t k = even; k < slices_.count && rcs[0] == 0; ++k)
        rcs[0] = run_slice(k, ins, outs, workspaces_[0].get(lib_.workspace_bytes, lib_.kept_bytes), errors[0].data(), seconds);
    }
    const auto failed = std::find_if(rcs.begin(), rcs.end(), [](int rc) { return rc != 0; });
    // The frozen inputs' tensors stay alive while the kept region refers to them, so no other
    // tensor is given their addresses (the kernels tell one B from another by its address).
    held_.clear();
    for (int i : frozen_) held_.push_back(ins[static_cast<size_t>(i)]);
    if (failed != rcs.end())
      throw CompileFailure(FailureKind::runtime_error,
                           fmt::format("generated code for graph {} failed: {}", name_, errors[static_cast<size_t>(failed - rcs.begin())].data()));
    return outs;
  }

  // Threads that run slices side by side, each alone on one (no kernel then waits at a barrier
  // for a thread another process holds): every thread the library would use within a run, when
  // there are as many slices at least; else one, the library's threads within each slice. Kernel
  // timing runs one slice at a time.
  int64_t side_by_side(bool timing) const {
    if (timing || !lib_.threads || !lib_.one_thread) return 1;
    const int64_t threads = lib_.threads();
    return threads >= 2 && slices_.count >= threads ? threads : 1;
  }

  // Slice k of inputs `ins` into outputs `outs` on workspace `ws`.
  int run_slice(int64_t k, std::vector<Tensor>& ins, std::vector<Tensor>& outs, unsigned char* ws, char* err, std::vector<double>* seconds) {
    std::vector<void*> in_ptrs(ins.size()), out_ptrs(outs.size());
    for (size_t i = 0; i < ins.size(); ++i) in_ptrs[i] = static_cast<unsigned char*>(ins[i].data()) + k * slices_.input_bytes[i];
    for (size_t o = 0; o < outs.size(); ++o) out_ptrs[o] = static_cast<unsigned char*>(outs[o].data()) + k * slices_.output_bytes[o];
    return seconds ? reinterpret_cast<ProfileFn>(lib_.profile)(in_ptrs.data(), out_ptrs.data(), ws, err, 1024, seconds->data())
                   : reinterpret_cast<EntryFn>(lib_.entry)(in_ptrs.data(), out_ptrs.data(), ws, err, 1024);
  }

  std::string name_;
  std::vector<std::pair<std::string, TensorType>> inputs_;  // name and type of each input
  std::vector<TensorType> outputs_;
  Slices slices_;
  std::string source_;
  std::vector<std::string> labels_;
  CompiledLibrary lib_;
  std::mutex mutex_;                   // one run at a time
  std::vector<Workspace> workspaces_;  // one for each thread running slices side by side
  std::vector<int> frozen_;            // inputs in CompileOptions::frozen_inputs
  std::vector<Tensor> held_;           // their tensors in the last run
};

}  // namespace

std::unique_ptr<CompiledGraph> compile_cpp(const Graph& g, const CompileOptions& options) {
  NodeInjections inj = resolve_injections(g, options);
  const std::optional<BatchSlicing> slicing = plan_batch_slicing(g, options.frozen_inputs);
  Graph lowered = lower_for_codegen(slicing ? slicing->graph : g, options, nullptr);
  CppSource source = render_cpp(lowered, inj, options.frozen_inputs);
  CompiledLibrary lib = build_shared_object(source, default_cache_dir(options.cache_dir));
  std::string text = source.text();
  if (slicing)
    text = fmt::format("// Runs {} times, on slices of {} sample{} of the batch of {}.\n", slicing->count, slicing->samples,
                       slicing->samples == 1 ? "" : "s", slicing->count * slicing->samples) +
           text;
  return std::make_unique<CppCompiledGraph>(g, slices_of(g, slicing), std::move(text), source.kernel_labels, lib, options.frozen_inputs);
}

}  // namespace reprokit
