// The compiler passes, one free function each (registered in pass_manager.cpp's table). Each asks
// its RewriteBudget before every rewrite and makes the injected rewrite produce a wrong value.
#pragma once
#include "reprokit/codegen/passes/pass_manager.h"

namespace reprokit {

// A fusion group's loop body grows with its members; past this many the compiler's time grows
// faster than the saved memory traffic is worth (a 10,000-op chain is 157 loops, not one).
constexpr size_t kMaxGroupSize = 64;

bool run_dce(Graph& g, RewriteBudget& budget);
bool run_cse(Graph& g, RewriteBudget& budget);
bool run_constant_folding(Graph& g, RewriteBudget& budget);
bool run_algebraic_simplification(Graph& g, RewriteBudget& budget);
bool run_reshape_hoisting(Graph& g, RewriteBudget& budget);
bool run_pointwise_fusion(Graph& g, RewriteBudget& budget);
bool run_pointwise_duplication(Graph& g, RewriteBudget& budget);
bool run_reduction_fusion(Graph& g, RewriteBudget& budget);

}  // namespace reprokit
