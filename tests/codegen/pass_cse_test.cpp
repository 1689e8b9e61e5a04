// cse: merges identical nodes (op, operands, literals, attributes).
#include <gtest/gtest.h>

#include "pass_test_util.h"

using namespace reprokit;
using namespace reprokit::testing;

TEST(CsePass, MergesIdenticalNodesOnly) {
  auto r = run_one_pass("cse",
                        "graph g(%x: f32[4]) {\n  %a = mul(%x, 2.0)\n  %b = mul(%x, 2.0)\n  %c = mul(%x, 3.0)\n  %s = add(%a, %b)\n  %t = add(%s, "
                        "%c)\n  return (%t)\n}\n");
  EXPECT_EQ(r.applied, 1);
  EXPECT_NE(print_graph(r.graph).find("%s = add(%a, %a)"), std::string::npos) << print_graph(r.graph);
  EXPECT_EQ(r.graph.find("b"), -1);
  EXPECT_NE(r.graph.find("c"), -1);
}

TEST(CsePass, AttributesMatter) {
  auto r =
      run_one_pass("cse", "graph g(%x: f32[4, 4]) {\n  %a = sum(%x, dims=[0])\n  %b = sum(%x, dims=[1])\n  %c = add(%a, %b)\n  return (%c)\n}\n");
  EXPECT_FALSE(r.changed);
}

TEST(CsePass, InjectedRewriteChangesTheValue) {
  auto r = run_one_pass("cse", "graph g(%x: f32[4]) {\n  %a = exp(%x)\n  %b = exp(%x)\n  %s = add(%a, %b)\n  return (%s)\n}\n", -1, 1);
  EXPECT_NE(print_graph(r.graph).find(".bug"), std::string::npos) << print_graph(r.graph);
}
