// shrink-shapes and halve-shapes: size classes and single dims, the attributes that follow a
// size, layouts kept, and the engine taking a graph down to the smallest shape that still fails.
#include <gtest/gtest.h>

#include "fake_oracle.h"
#include "reprokit/support/errors.h"
#include "reprokit/minifier/twin.h"
#include "reprokit/minifier/reducer.h"

using namespace reprokit;
using namespace reprokit::testing;

TEST(ResizeInputs, AttributesNamingTheSizeFollowIt) {
  Graph g = parse_graph(
      "graph g(%x: f32[4, 6], %w: f32[6, 6]) {\n  %m = matmul(%x, %w)\n  %r = reshape(%m, shape=[4, 6, 1])\n"
      "  %s = slice(%r, dim=1, start=0, end=6)\n  %n = layer_norm(%m, normalized_shape=[6])\n  return (%s, %n)\n}");
  Graph r = resize_inputs(g, {}, {{6, 3}});
  EXPECT_EQ(print_graph(r),
            "graph g(%x: f32[4, 3], %w: f32[3, 3]) {\n  %m = matmul(%x, %w)\n  %r = reshape(%m, shape=[4, 3, 1])\n"
            "  %s = slice(%r, dim=1, start=0, end=3)\n  %n = layer_norm(%m, normalized_shape=[3])\n  return (%s, %n)\n}\n");
  // One dim alone breaks the matmul, or the reshape: the graph no longer verifies.
  EXPECT_THROW(resize_inputs(g, {{{0, 1}, 3}}, {}), UserError);
  EXPECT_THROW(resize_inputs(g, {{{0, 0}, 2}}, {}), UserError);
}

TEST(ResizeInputs, StridedInputsKeepTheirLayoutKind) {
  Graph g = parse_graph("graph g(%x: f32[4, 6] strides=[1, 4]) {\n  %y = neg(%x)\n  return (%y)\n}");
  Graph r = resize_inputs(g, {}, {{6, 2}});
  EXPECT_EQ(r.node(0).type.shape, (Shape{4, 2}));
  EXPECT_EQ(r.node(0).type.strides, (Shape{1, 4}));  // still column-major
}

TEST(ShapeStrategies, UnitsAreSizeClassesThenSharedDims) {
  Candidate c;
  c.graph = parse_graph("graph g(%x: f32[8, 8, 3], %y: f32[8]) {\n  %a = sum(%x)\n  %b = sum(%y)\n  %c = add(%a, %b)\n  return (%c)\n}");
  // Classes 8 and 3, then the dims sized 8 one by one (three of them).
  EXPECT_EQ(strategy("halve-shapes").units(c).size(), 2u + 3u);
  Candidate h = strategy("halve-shapes").apply(c, {0});
  EXPECT_EQ(h.graph.node(0).type.shape, (Shape{4, 4, 3}));
  EXPECT_EQ(h.graph.node(1).type.shape, (Shape{4}));
  Candidate one = strategy("shrink-shapes").apply(c, {2});  // the first dim of %x alone
  EXPECT_EQ(one.graph.node(0).type.shape, (Shape{1, 8, 3}));
  EXPECT_NE(one.key(), c.key());
}

TEST(ShapeStrategies, ResizingStartsAnInputsZeroedElementsOver) {
  Candidate c;
  c.graph = parse_graph("graph g(%x: f32[4]) {\n  %y = neg(%x)\n  return (%y)\n}");
  c.edits["x"].zeroed = {3};
  Candidate h = strategy("halve-shapes").apply(c, {0});
  EXPECT_TRUE(h.edit("x").zeroed.empty());
}

// A failure that needs a dim of at least 3 in %x and any %w: the engine stops at exactly that.
TEST(ShapeStrategies, EngineReachesTheSmallestFailingShape) {
  Candidate c;
  c.graph = parse_graph("graph g(%x: f32[16, 24], %w: f32[24, 5]) {\n  %m = matmul(%x, %w)\n  return (%m)\n}");
  FakeOracle o([](const Candidate& k) { return k.graph.node(0).type.shape[1] >= 3; });
  auto r = reduce(c, {strategy("shrink-shapes"), strategy("halve-shapes")}, o, {});
  EXPECT_EQ(r.best.graph.node(0).type.shape, (Shape{1, 3}));
  EXPECT_EQ(r.best.graph.node(1).type.shape, (Shape{3, 1}));
  // Its twin is one halving away and passes.
  ASSERT_TRUE(r.twin);
  EXPECT_EQ(r.twin->graph.node(0).type.shape, (Shape{1, 2}));
  EXPECT_EQ(describe_difference(r.best, *r.twin).find("fails with %x: f32[1, 3] (dim 1 = 3), passes with f32[1, 2]"), 0u)
      << describe_difference(r.best, *r.twin);
}
