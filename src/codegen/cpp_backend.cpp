// The cpp backend: lowers the graph (decompositions, passes), renders C++, builds a shared
// object with the system compiler (cached by content) and calls its entry point.
#include <fmt/format.h>

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

using EntryFn = int (*)(void* const*, void* const*, char*, int);

class CppCompiledGraph : public CompiledGraph {
 public:
  CppCompiledGraph(Graph g, std::string source, CompiledLibrary lib) : g_(std::move(g)), source_(std::move(source)), lib_(lib) {}

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
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
    int rc = reinterpret_cast<EntryFn>(lib_.entry)(in_ptrs.data(), out_ptrs.data(), err, sizeof err);
    if (rc != 0) throw CompileFailure(FailureKind::runtime_error, fmt::format("generated code for graph {} failed: {}", g_.name, err));
    return outs;
  }
  std::string source() const override { return source_; }

 private:
  Graph g_;
  std::string source_;
  CompiledLibrary lib_;
};

}  // namespace

std::unique_ptr<CompiledGraph> compile_cpp(const Graph& g, const CompileOptions& options) {
  NodeInjections inj = resolve_injections(g, options);
  Graph lowered = lower_for_codegen(g, options, nullptr);
  CppSource source = render_cpp(lowered, inj);
  CompiledLibrary lib = build_shared_object(source, default_cache_dir(options.cache_dir));
  return std::make_unique<CppCompiledGraph>(std::move(lowered), source.text(), lib);
}

}  // namespace reprokit
