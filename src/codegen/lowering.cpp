// lower_for_codegen and resolve_injections (see lowering.h).
#include "reprokit/codegen/lowering.h"

#include "reprokit/aot/decompose.h"
#include "reprokit/codegen/passes/pass_manager.h"

namespace reprokit {

std::map<std::string, NodeFault> resolve_injections(const Graph& g, const CompileOptions& options) {
  std::map<std::string, NodeFault> out = options.injection_nodes;
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

}  // namespace reprokit
