// What the code-generating backends (cpp, cuda) do to a graph before rendering it, shared with the
// tools that replay it (bisect, analyze, the minifier's compiler strategies).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "reprokit/codegen/compile_options.h"
#include "reprokit/ir/graph.h"

namespace reprokit {

struct PassRecord;
// The graph code generation sees: decomposed, then optimised by the enabled passes (fusion
// recorded as "group" attributes). Records each pass when asked.
Graph lower_for_codegen(const Graph& g, const CompileOptions& options, std::vector<PassRecord>* records);

// Nodes of g and of its decomposition that the options' injections target (by op), merged with
// options.injection_nodes.
std::map<std::string, NodeFault> resolve_injections(const Graph& g, const CompileOptions& options);

}  // namespace reprokit
