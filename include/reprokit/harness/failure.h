// Failure: what went wrong in one run of a stage (kind, normalised signature, message, signal),
// and the rule deciding whether two failures are "the same bug". Plain data; policies judge it.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "reprokit/codegen/failure_kind.h"

namespace reprokit {

struct Failure {
  FailureKind kind = FailureKind::none;
  std::string message;    // first lines of the error message / stderr tail / accuracy summary
  std::string signature;  // normalise_signature(message) for errors; "SIGSEGV" for crashes; ...
  int signal = 0;         // for crash

  bool failed() const { return kind != FailureKind::none; }
  std::string_view kind_name() const { return failure_kind_name(kind); }
  // "compile_error: <signature>", or the kind alone where the signature is just its name
  // ("accuracy", not "accuracy: accuracy").
  std::string label() const;
  // Strings are made valid UTF-8 here, so any compiler output can be recorded.
  nlohmann::json to_json() const;
  static Failure from_json(const nlohmann::json& j);  // UserError on malformed input
};

// A failure of `kind` with `message` and the message's normalised signature.
Failure failure_from(FailureKind kind, const std::string& message);

// Strips what varies between runs of the same bug: paths, temp names, addresses, numbers that
// look like ids or line/column positions, value names (%foo), timings. Keeps the words.
std::string normalise_signature(const std::string& message);

// Same kind and matching signature (crash: same signal; timeout: kind alone; accuracy: kind alone,
// the accuracy rule having already been applied).
bool same_failure(const Failure& expected, const Failure& got);

}  // namespace reprokit
