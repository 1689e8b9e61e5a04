// pointwise-fusion and reduction-fusion: groups recorded as the "group" attribute.
#include <gtest/gtest.h>

#include "pass_test_util.h"

using namespace reprokit;
using namespace reprokit::testing;

static const char* kChain =
    "graph g(%x: f32[4, 8]) {\n  %a = exp(%x)\n  %b = mul(%a, 2.0)\n  %c = tanh(%b)\n  %s = sum(%c, dims=[1])\n  %t = neg(%s)\n  return (%t)\n}\n";

TEST(PointwiseFusionPass, GroupsSameShapeChains) {
  auto r = run_one_pass("pointwise-fusion", kChain);
  EXPECT_EQ(r.applied, 2);
  std::string s = print_graph(r.graph);
  EXPECT_NE(s.find("%a = exp(%x, group=0)"), std::string::npos) << s;
  EXPECT_NE(s.find("%c = tanh(%b, group=0)"), std::string::npos) << s;
  EXPECT_NE(s.find("%s = sum(%c, dims=[1])"), std::string::npos) << s;  // not a pointwise op
  EXPECT_NE(s.find("%t = neg(%s)"), std::string::npos) << s;            // another shape
}

TEST(PointwiseFusionPass, LimitStopsEarly) {
  auto r = run_one_pass("pointwise-fusion", kChain, 1);
  EXPECT_EQ(r.applied, 1);
  EXPECT_EQ(r.wanted, 2);
  EXPECT_EQ(print_graph(r.graph).find("%c = tanh(%b, group"), std::string::npos);
}

// A producer read twice joins the group its users ended in (gelu's x * (1 + erf(x / sqrt 2)));
// read by nodes of two kernels, it stays a kernel of its own, each reading it from memory.
TEST(PointwiseFusionPass, ProducersWithTwoUsersJoinTheGroupBothEndedIn) {
  auto r = run_one_pass("pointwise-fusion", "graph g(%x: f32[4]) {\n  %a = exp(%x)\n  %b = neg(%a)\n  %c = mul(%a, %b)\n  return (%c)\n}\n");
  EXPECT_EQ(r.applied, 2);
  EXPECT_NE(print_graph(r.graph).find("%a = exp(%x, group=0)"), std::string::npos) << print_graph(r.graph);
}

TEST(PointwiseFusionPass, ProducersWithUsersInTwoKernelsStayOut) {
  const char* two_outputs = "graph g(%x: f32[4]) {\n  %a = exp(%x)\n  %b = neg(%a)\n  %c = tanh(%a)\n  return (%b, %c)\n}\n";
  const char* a_reduction = "graph g(%x: f32[4]) {\n  %a = exp(%x)\n  %b = neg(%a)\n  %c = mul(%a, %b)\n  %s = sum(%a)\n  return (%c, %s)\n}\n";
  const char* another_shape =
      "graph g(%x: f32[4], %y: f32[3, 4]) {\n  %a = exp(%x)\n  %b = neg(%a)\n  %c = mul(%a, %y)\n  %d = add(%b, %c)\n  return (%d)\n}\n";
  const char* two_groups =
      "graph g(%x: f32[4]) {\n  %a = exp(%x)\n  %b = neg(%a)\n  %b2 = tanh(%b)\n  %c = abs(%a)\n  %c2 = sin(%c)\n  return (%b2, %c2)\n}\n";
  for (const char* text : {two_outputs, a_reduction, another_shape, two_groups}) {
    auto r = run_one_pass("pointwise-fusion", text);
    EXPECT_EQ(print_graph(r.graph).find("%a = exp(%x, group"), std::string::npos) << print_graph(r.graph);
  }
}

TEST(ReductionFusionPass, AppendsTheReductionToItsProducersGroup) {
  auto pw = run_one_pass("pointwise-fusion", kChain);
  RewriteBudget budget("reduction-fusion", -1, 0);
  find_pass("reduction-fusion")->run(pw.graph, budget);
  EXPECT_EQ(budget.applied(), 1);
  EXPECT_NE(print_graph(pw.graph).find("%s = sum(%c, dims=[1], group=0)"), std::string::npos) << print_graph(pw.graph);
}
