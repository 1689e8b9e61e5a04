// remove-outputs, zero-inputs and one-inputs.
#include <gtest/gtest.h>

#include "reprokit/ir/errors.h"

#include "fake_oracle.h"
#include "reprokit/minifier/strategies.h"

using namespace reprokit;
using namespace reprokit::testing;


TEST(RemoveOutputsStrategy, DropsOutputsAndWhatOnlyTheyNeeded) {
  Candidate c;
  c.graph = parse_graph("graph g(%x: f32[4], %y: f32[4]) {\n  %a = neg(%x)\n  %b = exp(%y)\n  return (%a, %b)\n}");
  const Strategy& s = strategy("remove-outputs");
  auto r = s.apply(c, {1});
  EXPECT_EQ(print_graph(r.graph), "graph g(%x: f32[4]) {\n  %a = neg(%x)\n  return (%a)\n}\n");
  EXPECT_THROW(s.apply(c, {0, 1}), UserError);
}

TEST(FillInputsStrategy, ZeroThenOnes) {
  Candidate c;
  c.graph = parse_graph("graph g(%x: f32[4], %y: f32[4]) {\n  %a = add(%x, %y)\n  return (%a)\n}");
  auto r = strategy("zero-inputs").apply(c, {0});
  EXPECT_EQ(r.fills.at("x"), InputFill::zeros);
  EXPECT_NE(r.key(), c.key());  // a different candidate for the memo
  EXPECT_EQ(strategy("one-inputs").units(r), std::vector<int>{1});
}

TEST(StrategyTable, NamesAreUniqueAndKebabCase) {
  std::set<std::string> names;
  for (auto& s : strategy_table()) {
    EXPECT_TRUE(names.insert(s.name).second) << s.name;
    EXPECT_EQ(s.name.find('_'), std::string::npos) << s.name;
    EXPECT_FALSE(s.description.empty());
  }
}
