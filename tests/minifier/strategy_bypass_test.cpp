// bypass: a->b->c becomes a->c; only nodes with a same-typed operand can be bypassed.
#include <gtest/gtest.h>

#include "reprokit/support/errors.h"

#include "fake_oracle.h"
#include "reprokit/minifier/compiler_decisions.h"

using namespace reprokit;

TEST(BypassStrategy, ChainShortcutsAndTypeRule) {
  Candidate c;
  c.graph = parse_graph("graph g(%x: f32[2, 3]) {\n  %a = neg(%x)\n  %b = exp(%a)\n  %s = sum(%b, dims=[1])\n  %c = tanh(%s)\n  return (%c)\n}");
  auto r = bypass_nodes(c, {c.graph.find("b")});
  EXPECT_EQ(print_graph(r.graph), "graph g(%x: f32[2, 3]) {\n  %a = neg(%x)\n  %s = sum(%a, dims=[1])\n  %c = tanh(%s)\n  return (%c)\n}\n");
  EXPECT_THROW(bypass_nodes(c, {c.graph.find("s")}), UserError);  // sum changes the shape: no operand can stand in
  for (auto& s : strategy_table())
    if (s.name == "bypass") {
      auto units = s.units(c);
      EXPECT_EQ(std::count(units.begin(), units.end(), c.graph.find("s")), 0);
      EXPECT_EQ(units.size(), 3u);
    }
}

TEST(BypassStrategy, BypassingEverythingLeavesNothing) {
  Candidate c;
  c.graph = parse_graph("graph g(%x: f32[4]) {\n  %a = neg(%x)\n  return (%a)\n}");
  EXPECT_THROW(bypass_nodes(c, {c.graph.find("a")}), UserError);
}
