// Failure records and the "same bug" rule.
#include "reprokit/harness/failure.h"

#include <fmt/format.h>

#include "reprokit/support/errors.h"
#include "reprokit/ir/names.h"
#include "reprokit/support/regex.h"

namespace reprokit {

nlohmann::json Failure::to_json() const {
  return {{"kind", std::string(kind_name())}, {"message", utf8_safe(message)}, {"signature", utf8_safe(signature)}, {"signal", signal}};
}

Failure Failure::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw UserError("failure must be a JSON object");
  Failure f;
  std::string kind;
  try {
    kind = j.value("kind", "");
    f.message = j.value("message", "");
    f.signature = j.value("signature", "");
    f.signal = j.value("signal", 0);
  } catch (const nlohmann::json::exception& e) { throw UserError(std::string("malformed failure record: ") + e.what()); }
  auto k = parse_failure_kind(kind);
  if (!k) throw UserError("unknown failure kind '" + printable(kind) + "'");
  f.kind = *k;
  if (f.signal < 0 || f.signal > 64) throw UserError(fmt::format("failure record: signal {} is not a signal number", f.signal));
  return f;
}

std::string Failure::label() const {
  std::string kind(kind_name());
  return signature.empty() || signature == kind ? kind : kind + ": " + signature;
}

Failure failure_from(FailureKind kind, const std::string& message) { return Failure{kind, message, normalise_signature(message), 0}; }

std::string normalise_signature(const std::string& message) {
  // What went wrong, without what varies between runs. A compiler's diagnostic is its first
  // "error:" line: the log after it names generated functions that differ between graphs.
  std::string s = message;
  if (auto e = s.find("error:"); e != std::string::npos) s = s.substr(e, s.find('\n', e) - e);
  // Linear time (a compiler's message has no size limit). [\t\n\v\f\r ] is std::regex's \s,
  // which the signatures of existing bundles were made with (RE2's \s has no \v).
  static const std::pair<Regex, const char*> rules[] = {
      // terminal colours (a compiler's log coloured for a terminal: ONNX Runtime's): layout, not the bug
      {Regex(R"(\x1b\[[0-9;?]*[A-Za-z])", "signature rule"), ""},
      {Regex(R"((/[^\t\n\v\f\r :'"()]+)+)", "signature rule"), "<path>"},  // paths
      // a generated file named by its content's hash, without its directory (Inductor's Triton
      // module: "SyntaxError: invalid syntax (cueageq7vnwrds32pnm4dbm....py, line 26)")
      {Regex(R"(\b[A-Za-z0-9_]{24,}\.(py|cpp|h|so|cu|ptx|cubin)\b)", "signature rule"), "<file>"},
      {Regex(R"(0x[0-9a-fA-F]+)", "signature rule"), "<addr>"},            // addresses
      {Regex(R"(%[A-Za-z0-9_.]+)", "signature rule"), "%<v>"},             // value names
      {Regex(R"(\b\d+(\.\d+)?(e[-+]?\d+)?\b)", "signature rule"), "<n>"},  // numbers: ids, line:col, sizes, timings
      {Regex(R"([\t\n\v\f\r ]+)", "signature rule"), " "},
  };
  for (auto& [rule, with] : rules) s = rule.replace_all(std::move(s), with);
  // Keep the part that names the error: compiler diagnostics carry their text after "error:".
  auto e = s.find("error:");
  if (e != std::string::npos) s = s.substr(e);
  s = utf8_safe(s, 200);  // never cut a character in two
  // Trim both ends: indentation or a trailing newline is layout, not part of the bug.
  while (!s.empty() && s.back() == ' ') s.pop_back();
  s.erase(0, s.find_first_not_of(' ') == std::string::npos ? s.size() : s.find_first_not_of(' '));
  return s;
}

bool same_failure(const Failure& expected, const Failure& got) {
  if (!got.failed()) return false;
  if (!expected.failed()) return true;  // level-3 bundle: any failure reproduces it
  if (expected.kind != got.kind) return false;
  if (expected.kind == FailureKind::crash) return expected.signal == got.signal;
  if (expected.kind == FailureKind::timeout) return true;
  return expected.signature == got.signature;
}

}  // namespace reprokit
