// drop-operands: a cat keeps only the operands the failure needs; what fed only the others goes.
#include <gtest/gtest.h>

#include "reprokit/support/errors.h"

#include "fake_oracle.h"
#include "reprokit/minifier/reducer.h"
#include "reprokit/minifier/strategies.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {
// A cat of six values, two of which (%b and %e) carry "the bug".
Candidate cat_of_six() {
  Candidate c;
  c.graph = parse_graph(
      "graph g(%x: f32[2, 3], %y: f32[2, 3]) {\n  %a = neg(%x)\n  %b = exp(%x)\n  %c = tanh(%y)\n  %d = relu(%y)\n  %e = sin(%y)\n  %f = abs(%x)\n"
      "  %k = cat(%a, %b, %c, %d, %e, %f, dim=1)\n  %s = sum(%k, dims=[1])\n  return (%s)\n}");
  return c;
}

bool cat_reads(const Graph& g, const std::string& name) {
  for (const Node& n : g.nodes)
    if (n.op == Op::cat)
      for (const auto& o : n.operands)
        if (o.is_value() && g.node(o.value).name == name) return true;
  return false;
}
}  // namespace

TEST(DropOperandsStrategy, KeepsOnlyTheOperandsTheFailureNeeds) {
  FakeOracle oracle([](const Candidate& c) { return cat_reads(c.graph, "b") && cat_reads(c.graph, "e"); });
  auto r = reduce(cat_of_six(), {strategy("drop-operands")}, oracle, {});
  EXPECT_EQ(print_graph(r.best.graph),
            "graph g(%x: f32[2, 3], %y: f32[2, 3]) {\n  %b = exp(%x)\n  %e = sin(%y)\n  %k = cat(%b, %e, dim=1)\n  %s = sum(%k, dims=[1])\n  return "
            "(%s)\n}\n");
}

TEST(DropOperandsStrategy, UnitsAndInvalidEdits) {
  Candidate c = cat_of_six();
  const Strategy& s = strategy("drop-operands");
  ASSERT_EQ(s.units(c).size(), 6u);
  EXPECT_THROW(s.apply(c, {0, 1, 2, 3, 4, 5}), UserError);  // a cat of nothing
  // Inputs only the dropped operands read go too.
  auto r = s.apply(c, {0, 1, 5});
  EXPECT_EQ(r.graph.find("x"), -1);
  EXPECT_EQ(r.graph.node(r.graph.find("k")).type.shape, (Shape{2, 9}));
  // A consumer that needs the old shape makes the edit invalid.
  Candidate fixed;
  fixed.graph = parse_graph("graph g(%x: f32[2], %y: f32[2], %z: f32[4]) {\n  %k = cat(%x, %y)\n  %m = mul(%k, %z)\n  return (%m)\n}");
  EXPECT_THROW(s.apply(fixed, {0}), UserError);
  // A single operand is not a unit.
  Candidate one;
  one.graph = parse_graph("graph g(%x: f32[2]) {\n  %k = cat(%x)\n  return (%k)\n}");
  EXPECT_TRUE(s.units(one).empty());
}
