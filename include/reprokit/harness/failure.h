// Failure: what went wrong in one run of a stage (kind, normalised signature, message, signal),
// and the rule deciding whether two failures are "the same bug". Plain data; policies judge it.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace reprokit {

struct Failure {
  // "" (no failure), compile_error, runtime_error, crash, timeout, accuracy
  std::string kind;
  std::string message;    // first lines of the error message / stderr tail / accuracy summary
  std::string signature;  // normalise_signature(message) for errors; "SIGSEGV" for crashes; ...
  int signal = 0;         // for crash

  bool failed() const { return !kind.empty(); }
  nlohmann::json to_json() const;
  static Failure from_json(const nlohmann::json& j);  // UserError on malformed input
};

// Strips what varies between runs of the same bug: paths, temp names, addresses, numbers that
// look like ids or line/column positions, value names (%foo), timings. Keeps the words.
std::string normalise_signature(const std::string& message);

// Same kind and matching signature (crash: same signal; timeout: kind alone; accuracy: kind alone,
// the accuracy rule having already been applied).
bool same_failure(const Failure& expected, const Failure& got);

}  // namespace reprokit
