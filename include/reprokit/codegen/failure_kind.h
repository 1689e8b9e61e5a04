// The kinds of failure reprokit tells apart, and the kinds of fault it can inject. Enums inside
// reprokit; strings only at the edges (JSON, command lines, messages).
#pragma once
#include <iosfwd>
#include <optional>
#include <string_view>

namespace reprokit {

enum class FailureKind {
  none,               // it passed
  compile_error,      // the compiler rejected the graph or its generated code
  runtime_error,      // the compiled code reported an error
  crash,              // the process died of a signal
  timeout,            // it did not finish in time (a hang)
  accuracy,           // it ran, but the numbers disagree with the reference
  invalid_candidate,  // the minifier's candidate is not a valid graph (never a bug)
};

std::string_view failure_kind_name(FailureKind k);  // "" for none
std::optional<FailureKind> parse_failure_kind(std::string_view s);
std::ostream& operator<<(std::ostream& os, FailureKind k);  // its name (test output)

// --inject OP:KIND: how the cpp/cuda codegen misbehaves on every node of an op.
enum class FaultKind { compile_error, runtime_error, accuracy, crash, hang, flaky };

std::string_view fault_kind_name(FaultKind k);
std::optional<FaultKind> parse_fault_kind(std::string_view s);

}  // namespace reprokit
