// The compiler passes, one free function each (registered in pass_manager.cpp's table). Each asks
// its RewriteBudget before every rewrite and makes the injected rewrite produce a wrong value.
#pragma once
#include <optional>

#include "reprokit/codegen/passes/pass_manager.h"
#include "reprokit/ir/op_registry.h"

namespace reprokit {

// A fusion group's loop body grows with its members; past this many the compiler's time grows
// faster than the saved memory traffic is worth (a 10,000-op chain is 157 loops, not one).
constexpr size_t kMaxGroupSize = 64;

// The fusion group a node was put in (its "group" attribute), if any.
inline std::optional<int64_t> group_of(const Node& n) {
  auto it = n.attrs.find("group");
  if (it == n.attrs.end()) return std::nullopt;
  return it->second.as_int();
}
inline bool is_reduction(Op op) { return op_schema(op).primitive_reduction(); }
// One fast instruction a value (a division costs several multiplies): worth computing twice.
inline bool is_cheap_pointwise(Op op) { return op == Op::add || op == Op::sub || op == Op::mul || op == Op::neg; }

bool run_dce(Graph& g, RewriteBudget& budget);
bool run_cse(Graph& g, RewriteBudget& budget);
bool run_constant_folding(Graph& g, RewriteBudget& budget);
bool run_algebraic_simplification(Graph& g, RewriteBudget& budget);
bool run_reshape_hoisting(Graph& g, RewriteBudget& budget);
bool run_permute_hoisting(Graph& g, RewriteBudget& budget);
bool run_conv_scale_folding(Graph& g, RewriteBudget& budget);
bool run_pointwise_fusion(Graph& g, RewriteBudget& budget);
bool run_pointwise_duplication(Graph& g, RewriteBudget& budget);
bool run_reduction_fusion(Graph& g, RewriteBudget& budget);

}  // namespace reprokit
