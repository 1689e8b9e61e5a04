// The compiler passes, one free function each (registered in pass_manager.cpp's table). Each asks
// its RewriteBudget before every rewrite and makes the injected rewrite produce a wrong value.
#pragma once
#include "reprokit/codegen/passes/pass_manager.h"

namespace reprokit {

bool run_dce(Graph& g, RewriteBudget& budget);
bool run_cse(Graph& g, RewriteBudget& budget);
bool run_constant_folding(Graph& g, RewriteBudget& budget);
bool run_algebraic_simplification(Graph& g, RewriteBudget& budget);
bool run_reshape_hoisting(Graph& g, RewriteBudget& budget);
bool run_pointwise_fusion(Graph& g, RewriteBudget& budget);
bool run_reduction_fusion(Graph& g, RewriteBudget& budget);

}  // namespace reprokit
