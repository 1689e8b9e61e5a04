// simplify-attributes: explicit attributes back to their defaults (or dropped when optional),
// strided inputs contiguous, grad marks off; required attributes stay.
#include <gtest/gtest.h>

#include "fake_oracle.h"
#include "reprokit/support/errors.h"
#include "reprokit/minifier/twin.h"
#include "reprokit/minifier/reducer.h"

using namespace reprokit;
using namespace reprokit::testing;

TEST(SimplifyAttributes, DefaultsOptionalsLayoutAndGrad) {
  Candidate c;
  c.graph = parse_graph(
      "graph g(%x: f32[4, 6] strides=[1, 4] grad) {\n  %a = gelu(%x, approximate=\"tanh\")\n  %t = transpose(%a, dim0=0, dim1=1)\n"
      "  %s = sum(%t, dims=[1], keepdim=true)\n  %c = clamp(%s, min=0.0)\n  return (%c)\n}");
  const Strategy& s = strategy("simplify-attributes");
  // strides, grad, approximate, dims, keepdim, min; transpose's dims are required and stay.
  auto units = s.units(c);
  EXPECT_EQ(units.size(), 6u);
  Candidate all = s.apply(c, units);
  EXPECT_EQ(print_graph(all.graph),
            "graph g(%x: f32[4, 6]) {\n  %a = gelu(%x)\n  %t = transpose(%a, dim0=0, dim1=1)\n  %s = sum(%t)\n  %c = clamp(%s)\n  return (%c)\n}\n");
}

TEST(SimplifyAttributes, AnEditThatBreaksTheGraphIsInvalid) {
  Candidate c;
  c.graph = parse_graph("graph g(%x: f32[4, 6]) {\n  %s = sum(%x, dims=[1], keepdim=true)\n  %r = reshape(%s, shape=[4, 1])\n  return (%r)\n}");
  // Dropping keepdim makes %s f32[4], which reshape to [4, 1] still takes; dropping dims makes
  // it a scalar, which it does not.
  const Strategy& s = strategy("simplify-attributes");
  auto units = s.units(c);
  ASSERT_EQ(units.size(), 2u);
  EXPECT_THROW(s.apply(c, {units[0]}), UserError);
  EXPECT_EQ(s.apply(c, {units[1]}).graph.node(1).type.shape, (Shape{4}));
}

TEST(SimplifyAttributes, EngineKeepsOnlyWhatTheFailureNeeds) {
  Candidate c;
  c.graph = parse_graph("graph g(%x: f32[8]) {\n  %a = gelu(%x, approximate=\"tanh\")\n  %v = var(%a, correction=0)\n  return (%v)\n}");
  FakeOracle o([](const Candidate& k) { return k.graph.node(1).attrs.count("approximate") > 0; });
  auto r = reduce(c, {strategy("simplify-attributes")}, o, {});
  EXPECT_EQ(print_graph(r.best.graph), "graph g(%x: f32[8]) {\n  %a = gelu(%x, approximate=\"tanh\")\n  %v = var(%a)\n  return (%v)\n}\n");
  ASSERT_TRUE(r.twin);
  EXPECT_EQ(describe_difference(r.best, *r.twin), "fails with %a's approximate=\"tanh\", passes with \"none\" (the default)");
}
