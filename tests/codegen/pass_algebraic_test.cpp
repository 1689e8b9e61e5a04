// algebraic-simplification: identities that return an operand of the same type.
#include <gtest/gtest.h>

#include "pass_test_util.h"

using namespace reprokit;
using namespace reprokit::testing;

TEST(AlgebraicPass, RemovesIdentities) {
  auto r = run_one_pass("algebraic-simplification",
                        "graph g(%x: f32[4]) {\n  %a = mul(%x, 1.0)\n  %b = add(%a, 0)\n  %c = neg(%b)\n  %d = neg(%c)\n  %e = to(%d, dtype=f32)\n  "
                        "%f = exp(%e)\n  return (%f)\n}\n");
  EXPECT_EQ(print_graph(r.graph).find("%f = exp(%x)") != std::string::npos, true) << print_graph(r.graph);
  EXPECT_EQ(r.applied, 4);
}

TEST(AlgebraicPass, KeepsTypeChangingRewrites) {
  // i32 * 1.0 promotes to f32: not an identity.
  auto r = run_one_pass("algebraic-simplification", "graph g(%x: i32[4]) {\n  %a = mul(%x, 1.0)\n  return (%a)\n}\n");
  EXPECT_FALSE(r.changed);
  auto b =
      run_one_pass("algebraic-simplification", "graph g(%x: f32[1, 4]) {\n  %a = add(%x, 0.0)\n  %e = expand(%a, shape=[3, 4])\n  return (%e)\n}\n");
  EXPECT_EQ(b.applied, 1);  // the add, not the broadcasting expand
}
