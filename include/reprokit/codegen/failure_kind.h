// The kinds of failure reprokit tells apart, and the kinds of fault it can inject. Enums inside
// reprokit; strings only at the edges (JSON, command lines, messages).
#pragma once
#include <iosfwd>
#include <optional>
#include <string>
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

// --inject OP:KIND: how the cpp/cuda codegen misbehaves on every node of an op. accuracy: every
// element v becomes 1.01 v + 0.01, or (accuracy=REL) v (1 + REL); accuracy_one=K: one element in K
// (chosen by a hash of its value) becomes 1.01 v + 0.01.
enum class FaultKind { compile_error, runtime_error, accuracy, accuracy_one, crash, hang, flaky };

std::string_view fault_kind_name(FaultKind k);
std::optional<FaultKind> parse_fault_kind(std::string_view s);

// One node's fault: its kind and, for the graded kinds, its size (accuracy: REL, 0 for the
// classic 1%; accuracy_one: K).
struct NodeFault {
  FaultKind kind = FaultKind::runtime_error;
  double amount = 0;
  NodeFault() = default;
  NodeFault(FaultKind k, double a = 0) : kind(k), amount(a) {}  // NOLINT: a kind alone is a fault
  bool operator==(const NodeFault&) const = default;
  std::string str() const;  // "accuracy", "accuracy=0.0001", "accuracy_one=1000"
};
// Parses KIND or KIND=AMOUNT; std::nullopt with `why` set when it is not one.
std::optional<NodeFault> parse_node_fault(std::string_view s, std::string& why);

}  // namespace reprokit
