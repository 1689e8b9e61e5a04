// constant-folding: nodes of constants become one full node.
#include <gtest/gtest.h>

#include "pass_test_util.h"

using namespace reprokit;
using namespace reprokit::testing;

TEST(ConstantFoldingPass, FoldsChainsOfConstants) {
  auto r = run_one_pass("constant-folding",
                        "graph g(%x: f32[2]) {\n  %c = full(shape=[2], value=2.0, dtype=f32)\n  %d = mul(%c, 3.0)\n  %e = add(%d, 1.0)\n  %y = "
                        "mul(%x, %e)\n  return (%y)\n}\n");
  EXPECT_EQ(r.applied, 2);
  EXPECT_NE(print_graph(r.graph).find("%e = full(shape=[2], value=7.0, dtype=f32)"), std::string::npos) << print_graph(r.graph);
}

TEST(ConstantFoldingPass, LeavesNonConstantsAndHonoursTheLimit) {
  auto r = run_one_pass("constant-folding",
                        "graph g(%x: f32[2]) {\n  %c = full(shape=[2], value=2.0, dtype=f32)\n  %d = mul(%c, 3.0)\n  %e = add(%d, 1.0)\n  %y = "
                        "mul(%x, %e)\n  return (%y)\n}\n",
                        1);
  EXPECT_EQ(r.applied, 1);
  EXPECT_NE(print_graph(r.graph).find("%e = add(%d, 1.0)"), std::string::npos) << print_graph(r.graph);
  EXPECT_NE(print_graph(r.graph).find("%y = mul(%x, %e)"), std::string::npos);
}

TEST(ConstantFoldingPass, InjectedFoldIsOff) {
  auto r = run_one_pass(
      "constant-folding",
      "graph g(%x: f32[2]) {\n  %c = full(shape=[2], value=2.0, dtype=f32)\n  %d = mul(%c, 3.0)\n  %y = mul(%x, %d)\n  return (%y)\n}\n", -1, 1);
  EXPECT_NE(print_graph(r.graph).find("value=6.07"), std::string::npos) << print_graph(r.graph);
}
