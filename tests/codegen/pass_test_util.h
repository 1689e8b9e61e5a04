// Runs one pass on a graph literal with a rewrite budget, for the per-pass tests.
#pragma once
#include "reprokit/codegen/passes/pass_manager.h"
#include "reprokit/ir/text_format.h"

namespace reprokit::testing {

struct PassRun {
  Graph graph;
  int64_t applied = 0, wanted = 0;
  bool changed = false;
};

inline PassRun run_one_pass(const std::string& pass, const std::string& text, int64_t limit = -1, int64_t inject_at = 0) {
  PassRun r;
  r.graph = parse_graph(text);
  RewriteBudget budget(pass, limit, inject_at);
  r.changed = find_pass(pass)->run(r.graph, budget);
  r.applied = budget.applied();
  r.wanted = budget.wanted();
  return r;
}

}  // namespace reprokit::testing
