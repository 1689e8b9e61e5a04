// dce: removes what no output needs; honours its limit.
#include <gtest/gtest.h>

#include "pass_test_util.h"

using namespace reprokit;
using namespace reprokit::testing;

static const char* kGraph = "graph g(%x: f32[4]) {\n  %d1 = exp(%x)\n  %d2 = sin(%d1)\n  %y = neg(%x)\n  return (%y)\n}\n";

TEST(DcePass, RemovesDeadNodes) {
  auto r = run_one_pass("dce", kGraph);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.applied, 2);
  EXPECT_EQ(print_graph(r.graph), "graph g(%x: f32[4]) {\n  %y = neg(%x)\n  return (%y)\n}\n");
}

TEST(DcePass, LimitKeepsTheRest) {
  auto r = run_one_pass("dce", kGraph, 1);
  EXPECT_EQ(r.applied, 1);
  EXPECT_EQ(r.wanted, 2);
  EXPECT_EQ(r.graph.num_ops(), 2);
}

TEST(DcePass, UnchangedWhenNothingIsDead) {
  auto r = run_one_pass("dce", "graph g(%x: f32[4]) {\n  %y = neg(%x)\n  return (%y)\n}\n");
  EXPECT_FALSE(r.changed);
  EXPECT_EQ(r.applied, 0);
}
