// Names of failure and fault kinds (see failure_kind.h): one table each.
#include "reprokit/codegen/failure_kind.h"

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
    {FaultKind::compile_error, "compile_error"}, {FaultKind::runtime_error, "runtime_error"}, {FaultKind::accuracy, "accuracy"},
    {FaultKind::crash, "crash"},                 {FaultKind::hang, "hang"},                   {FaultKind::flaky, "flaky"},
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

}  // namespace reprokit
