// Graphs compiled for one question, run again (see compiled_graphs.h).
#include "reprokit/harness/compiled_graphs.h"

#include "reprokit/codegen/compiler.h"
#include "reprokit/ir/text_format.h"

namespace reprokit {

void CompiledGraphs::ask(const std::string& question) {
  if (question == question_) return;
  question_ = question;
  kept_.clear();
}

CompiledGraph& CompiledGraphs::compiled(const Graph& g, const CompileOptions& options) {
  if (!options.frozen_inputs.empty()) {
    ++compiles_;
    unkept_ = compile_graph(g, options);
    return *unkept_;
  }
  std::string text = print_graph(g);
  for (Kept& k : kept_)
    if (k.graph == text) return *k.compiled;
  ++compiles_;
  kept_.push_back({std::move(text), compile_graph(g, options)});
  return *kept_.back().compiled;
}

}  // namespace reprokit
