// compile_graph: looks the backend up in the table and hands it the graph.
#include "reprokit/codegen/compiler.h"

#include "reprokit/codegen/backend.h"

namespace reprokit {

std::unique_ptr<CompiledGraph> compile_graph(const Graph& g, const CompileOptions& options) {
  return backend_named(options.backend).compile(g, options);
}

}  // namespace reprokit
