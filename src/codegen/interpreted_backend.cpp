// The eager and aot_eager backends: no compiler, the reference interpreter runs the graph as
// captured (eager) or decomposed (aot_eager). They are the baselines bisect compares against.
#include "reprokit/aot/decompose.h"
#include "reprokit/codegen/compiled_graph.h"
#include "reprokit/codegen/compile_options.h"
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

}  // namespace

std::unique_ptr<CompiledGraph> compile_eager(const Graph& g, const CompileOptions&) { return std::make_unique<InterpretedGraph>(g); }

std::unique_ptr<CompiledGraph> compile_aot_eager(const Graph& g, const CompileOptions&) { return std::make_unique<InterpretedGraph>(decompose(g)); }

}  // namespace reprokit
