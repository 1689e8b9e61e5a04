// remove-outputs, zero-inputs and one-inputs.
#include <gtest/gtest.h>

#include "reprokit/support/errors.h"

#include "fake_oracle.h"
#include "reprokit/minifier/candidate_values.h"
#include "reprokit/minifier/compiler_decisions.h"

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
  EXPECT_EQ(r.edit("x").fill, InputFill::zeros);
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

TEST(ValueStrategies, IntegersAndSingleElements) {
  Candidate c;
  c.graph = parse_graph("graph g(%x: f32[3]) {\n  %a = neg(%x)\n  return (%a)\n}");
  auto r = strategy("integer-inputs").apply(c, {0});
  EXPECT_EQ(r.edit("x").fill, InputFill::integers);
  // zero-elements: one unit per element of a small input, none once it is all zeros.
  EXPECT_EQ(strategy("zero-elements").units(c).size(), 3u);
  auto z = strategy("zero-elements").apply(c, strategy("zero-elements").units(c));
  EXPECT_EQ(z.edit("x").zeroed, (std::vector<int64_t>{0, 1, 2}));
  c.edits["x"].fill = InputFill::zeros;
  EXPECT_TRUE(strategy("zero-elements").units(c).empty());
  // Big inputs are left alone: element by element would cost too many queries.
  Candidate big;
  big.graph = parse_graph("graph g(%x: f32[100]) {\n  %a = neg(%x)\n  return (%a)\n}");
  EXPECT_TRUE(strategy("zero-elements").units(big).empty());
}

// What a worker feeds a candidate: a window of the known value at the declared shape, then the
// fill and the zeroed elements; a window that does not fit is a UserError (an invalid candidate).
TEST(CandidateInputs, WindowsFillsAndZeroedElements) {
  Bundle b;
  b.graph = parse_graph("graph g(%x: f32[2, 3]) {\n  %a = neg(%x)\n  return (%a)\n}");
  b.inputs = {Tensor::from_doubles(DType::f32, {2, 3}, {1.4, -2.6, 3, 4, 5, 6})};
  KnownValues known(b);
  Candidate c;
  c.graph = resize_inputs(b.graph, {{{0, 1}, 2}}, {});
  EXPECT_EQ(candidate_inputs(c, b, known)[0].to_doubles(), (std::vector<double>{1.4f, -2.6f, 4, 5}));
  c.edits["x"] = {InputFill::integers, {}, {3}};
  EXPECT_EQ(candidate_inputs(c, b, known)[0].to_doubles(), (std::vector<double>{1, -3, 4, 0}));
  c.edits["x"] = {InputFill::original, {0, 1}, {}};  // the window starting at column 1
  EXPECT_EQ(candidate_inputs(c, b, known)[0].to_doubles(), (std::vector<double>{-2.6f, 3, 5, 6}));
  c.edits["x"] = {InputFill::original, {0, 2}, {}};
  EXPECT_THROW(candidate_inputs(c, b, known), UserError);
  // A cut point's value is computed from the original inputs on demand.
  Candidate cut;
  cut.graph = parse_graph("graph g(%a: f32[2, 3]) {\n  %b = exp(%a)\n  return (%b)\n}");
  EXPECT_EQ(candidate_inputs(cut, b, known)[0].to_doubles()[0], static_cast<double>(-1.4f));
}
