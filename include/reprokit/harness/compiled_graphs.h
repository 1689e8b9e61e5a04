// Graphs compiled for one question, kept to be run again: the minifier's worker asks the same
// candidate several times over (the probe of the original runs it up to eight times to measure
// how often it fails) and a spec with several failing samples runs one graph on each; every run
// after the first runs the compiled program again instead of lowering, generating and loading
// the graph again (0.4 s a time for a 10,000-node graph whose objects are all in the compile cache).
// What is kept is dropped when the question changes (`ask`), so a graph is only ever reused under
// the options it was compiled with. Only compiles that succeed are kept: one that failed is tried
// again, as before. A runtime failure, or a result that drifts, is a run's own and is seen anew
// on every run.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "reprokit/codegen/compile_options.h"
#include "reprokit/codegen/compiled_graph.h"
#include "reprokit/ir/graph.h"

namespace reprokit {

class CompiledGraphs {
 public:
  // The question every compile after this belongs to (the worker's query line, whole): what was
  // kept for another is dropped.
  void ask(const std::string& question);
  // g compiled under `options`: the one compiled for this question before, or a new compile
  // (compile_graph), kept. Options with frozen inputs are never kept (their compiled graph derives
  // data from the first run's inputs, and samples differ).
  CompiledGraph& compiled(const Graph& g, const CompileOptions& options);
  size_t compiles() const { return compiles_; }  // compile_graph calls made

 private:
  struct Kept {
    std::string graph;  // print_graph of what was compiled
    std::unique_ptr<CompiledGraph> compiled;
  };
  std::string question_;
  std::vector<Kept> kept_;
  std::unique_ptr<CompiledGraph> unkept_;
  size_t compiles_ = 0;
};

}  // namespace reprokit
