// truncate: returns only one node, keeping what it needs.
#include <gtest/gtest.h>

#include "reprokit/support/errors.h"

#include "fake_oracle.h"
#include "reprokit/minifier/strategies.h"

using namespace reprokit;
using namespace reprokit::testing;

TEST(TruncateStrategy, RemovingKUnitsEndsKNodesEarlier) {
  Candidate c;
  c.graph = parse_graph("graph g(%x: f32[4], %y: f32[4]) {\n  %a = neg(%x)\n  %b = exp(%y)\n  %c = add(%a, %b)\n  return (%c)\n}");
  const Strategy& s = strategy("truncate");
  auto units = s.units(c);
  ASSERT_EQ(units.size(), 2u);  // c itself is the k = 0 case
  auto r = s.apply(c, {units[0]});
  EXPECT_EQ(print_graph(r.graph), "graph g(%y: f32[4]) {\n  %b = exp(%y)\n  return (%b)\n}\n");
  r = s.apply(c, {units[0], units[1]});
  EXPECT_EQ(print_graph(r.graph), "graph g(%x: f32[4]) {\n  %a = neg(%x)\n  return (%a)\n}\n");
}
