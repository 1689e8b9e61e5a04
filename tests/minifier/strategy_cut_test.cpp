// cut / cut-front: cut nodes become inputs of the same name and type; what only fed them goes.
#include <gtest/gtest.h>

#include "reprokit/support/errors.h"

#include "fake_oracle.h"
#include "reprokit/minifier/strategies.h"

using namespace reprokit;

TEST(CutStrategy, CutNodesBecomeInputsOfTheSameNameAndType) {
  Candidate c;
  c.graph = parse_graph("graph g(%x: f32[4]) {\n  %a = neg(%x)\n  %b = exp(%a)\n  %c = mul(%b, %a)\n  return (%c)\n}");
  auto r = cut_nodes(c, {c.graph.find("b")});
  EXPECT_EQ(print_graph(r.graph), "graph g(%x: f32[4], %b: f32[4]) {\n  %a = neg(%x)\n  %c = mul(%b, %a)\n  return (%c)\n}\n");
  r = cut_nodes(c, {c.graph.find("a"), c.graph.find("b")});
  EXPECT_EQ(print_graph(r.graph), "graph g(%a: f32[4], %b: f32[4]) {\n  %c = mul(%b, %a)\n  return (%c)\n}\n");
  EXPECT_THROW(cut_nodes(c, {c.graph.find("c")}), UserError);  // nothing would be left to compute
}

TEST(CutStrategy, EditsAndCompilerDecisionsFollowTheCandidate) {
  Candidate c;
  c.graph = parse_graph("graph g(%x: f32[4], %y: f32[4]) {\n  %a = neg(%x)\n  %b = add(%a, %y)\n  return (%b)\n}");
  c.edits["x"].fill = InputFill::zeros;
  c.edits["y"].fill = InputFill::ones;
  c.disabled_passes = {"pointwise-fusion"};
  auto r = cut_nodes(c, {c.graph.find("a")});
  EXPECT_EQ(r.edits.count("x"), 0u);
  EXPECT_EQ(r.edit("y").fill, InputFill::ones);
  EXPECT_EQ(r.disabled_passes, c.disabled_passes);
}
