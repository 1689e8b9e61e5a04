// Op: the closed set of ops, generated from ops.def, plus the pseudo-op `input` of graph inputs.
// Op names are strings only at the edges (the .rk text, JSON, messages): op_name / parse_op.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string_view>

namespace reprokit {

enum class Op : uint8_t {
  input,  // a graph input (not an op of the table)
#define RK_OP(id, ...) id,
#include "reprokit/ir/ops.def"
#undef RK_OP
};

// Number of enumerators, input included.
constexpr int kNumOps = 0
#define RK_OP(id, ...) +1
#include "reprokit/ir/ops.def"
#undef RK_OP
                        + 1;

std::string_view op_name(Op op);                    // "gelu"; "input" for Op::input
std::optional<Op> parse_op(std::string_view name);  // a table op (never Op::input)
std::ostream& operator<<(std::ostream& os, Op op);  // its name (messages, test output)

}  // namespace reprokit
