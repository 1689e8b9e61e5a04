// Names of failure and fault kinds (see failure_kind.h): one table each.
#include "reprokit/codegen/failure_kind.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

#include <ostream>
#include <utility>

namespace reprokit {

namespace {

constexpr std::pair<FailureKind, std::string_view> kFailureNames[] = {
    {FailureKind::none, ""},
    {FailureKind::compile_error, "compile_error"},
    {FailureKind::runtime_error, "runtime_error"},
    {FailureKind::crash, "crash"},
    {FailureKind::timeout, "timeout"},
    {FailureKind::accuracy, "accuracy"},
    {FailureKind::invalid_candidate, "invalid_candidate"},
};

constexpr std::pair<FaultKind, std::string_view> kFaultNames[] = {
    {FaultKind::compile_error, "compile_error"},
    {FaultKind::runtime_error, "runtime_error"},
    {FaultKind::accuracy, "accuracy"},
    {FaultKind::accuracy_one, "accuracy_one"},
    {FaultKind::crash, "crash"},
    {FaultKind::hang, "hang"},
    {FaultKind::flaky, "flaky"},
};

}  // namespace

std::string_view failure_kind_name(FailureKind k) {
  for (auto& [kind, name] : kFailureNames)
    if (kind == k) return name;
  return "?";
}

std::optional<FailureKind> parse_failure_kind(std::string_view s) {
  for (auto& [kind, name] : kFailureNames)
    if (name == s) return kind;
  return std::nullopt;
}

std::ostream& operator<<(std::ostream& os, FailureKind k) { return os << failure_kind_name(k); }

std::string_view fault_kind_name(FaultKind k) {
  for (auto& [kind, name] : kFaultNames)
    if (kind == k) return name;
  return "?";
}

std::optional<FaultKind> parse_fault_kind(std::string_view s) {
  for (auto& [kind, name] : kFaultNames)
    if (name == s) return kind;
  return std::nullopt;
}

std::string NodeFault::str() const {
  std::string s(fault_kind_name(kind));
  if (kind == FaultKind::accuracy_one) return s + "=" + std::to_string(static_cast<int64_t>(amount));
  if (kind == FaultKind::accuracy && amount > 0) return fmt::format("{}={}", s, amount);
  return s;
}

std::optional<NodeFault> parse_node_fault(std::string_view s, std::string& why) {
  auto eq = s.find('=');
  auto kind = parse_fault_kind(s.substr(0, eq));
  if (!kind) {
    why = "unknown kind";
    return std::nullopt;
  }
  if (eq == std::string_view::npos) {
    if (*kind == FaultKind::accuracy_one) {
      why = "accuracy_one needs =K (one element in K is wrong), e.g. accuracy_one=1000";
      return std::nullopt;
    }
    return NodeFault(*kind);
  }
  std::string amount(s.substr(eq + 1));
  char* end = nullptr;
  double a = std::strtod(amount.c_str(), &end);
  bool number = !amount.empty() && end && *end == 0 && std::isfinite(a);
  if (*kind == FaultKind::accuracy && number && a > 0 && a <= 1e6) return NodeFault(*kind, a);
  if (*kind == FaultKind::accuracy_one && number && a >= 1 && a <= 1e12 && a == std::floor(a)) return NodeFault(*kind, a);
  if (*kind == FaultKind::accuracy) why = "accuracy=REL needs a relative error REL in (0, 1e6], e.g. accuracy=1e-4";
  else if (*kind == FaultKind::accuracy_one) why = "accuracy_one=K needs an integer K in [1, 1e12], e.g. accuracy_one=1000";
  else why = fmt::format("{} takes no =AMOUNT", fault_kind_name(*kind));
  return std::nullopt;
}

}  // namespace reprokit
