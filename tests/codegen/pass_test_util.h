// Runs one pass on a graph literal with a rewrite budget, for the per-pass tests.
#pragma once
#include <gtest/gtest.h>

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

// Whether the printed graph holds `text` (a line, or lines in a row).
inline bool has(const Graph& g, const std::string& text) { return print_graph(g).find(text) != std::string::npos; }

// Expects `pass` to leave the graph `text` as it is, not even wanting a rewrite.
inline void expect_unchanged(const std::string& pass, const std::string& text) {
  auto r = run_one_pass(pass, text);
  EXPECT_FALSE(r.changed) << text << print_graph(r.graph);
  EXPECT_EQ(r.wanted, 0) << text;
}

}  // namespace reprokit::testing
