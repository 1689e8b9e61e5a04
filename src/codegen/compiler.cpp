// compile_graph: the inner compiler's entry point. eager / aot_eager run the reference
// interpreter; cpp decomposes, runs the passes, renders C++ and loads the compiled library.
#include "reprokit/codegen/compiler.h"

#include <fmt/format.h>

#include "cpp_codegen.h"
#include "cpp_toolchain.h"
#include "cuda_backend.h"
#include "reprokit/aot/decompose.h"
#include "reprokit/codegen/pass_manager.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/runtime/interpreter.h"

namespace reprokit {

namespace {

class InterpretedGraph : public CompiledGraph {
 public:
  explicit InterpretedGraph(Graph g) : g_(std::move(g)) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override { return interpret(g_, inputs); }

 private:
  Graph g_;
};

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

NodeInjections resolve_injections(const Graph& g, const CompileOptions& options) {
  NodeInjections out = options.injection_nodes;
  if (options.injections.empty()) return out;
  // The op may also be one that only the decomposition has (the exp of a softmax): its nodes
  // there are named after the composite, the same names code generation sees.
  const Graph d = decompose(g);
  for (const Graph* graph : {&g, &d})
    for (auto& inj : options.injections)
      for (auto& n : graph->nodes)
        if (n.op == inj.op && !n.is_input()) out[n.name] = NodeFault(inj.kind, inj.amount);
  return out;
}

Graph lower_for_codegen(const Graph& g, const CompileOptions& options, std::vector<PassRecord>* records) {
  Graph d = decompose(g);
  auto r = run_passes(d, options);
  if (records) *records = r;
  return d;
}

std::unique_ptr<CompiledGraph> compile_graph(const Graph& g, const CompileOptions& options) {
  const std::string& b = options.backend;
  if (b == "eager") return std::make_unique<InterpretedGraph>(g);
  if (b == "aot_eager") return std::make_unique<InterpretedGraph>(decompose(g));
  if (b != "cpp" && b != "cuda") throw UserError(fmt::format("unknown backend '{}' (expected eager, aot_eager, cpp or cuda)", b));
  NodeInjections inj = resolve_injections(g, options);
  Graph lowered = lower_for_codegen(g, options, nullptr);
  if (b == "cuda") return compile_cuda(lowered, inj, options);
  CppSource source = render_cpp(lowered, inj);
  CompiledLibrary lib = build_shared_object(source, default_cache_dir(options.cache_dir));
  return std::make_unique<CppCompiledGraph>(std::move(lowered), source.text(), lib);
}

}  // namespace reprokit
