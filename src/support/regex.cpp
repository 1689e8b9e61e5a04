// Linear-time regular expressions over RE2 (see regex.h).
#include "reprokit/support/regex.h"

#include <fmt/core.h>
#include <re2/re2.h>

#include "reprokit/support/errors.h"

namespace reprokit {

namespace {

RE2::Options options() {
  RE2::Options o;
  o.set_encoding(RE2::Options::EncodingLatin1);  // bytes, as std::regex over char: any output matches
  o.set_log_errors(false);                       // the error is ours to report, not stderr's
  o.set_max_mem(64 << 20);                       // room for long alternations; still a bound
  return o;
}

}  // namespace

Regex::Regex(std::string_view pattern, std::string_view what)
    : re_(std::make_unique<re2::RE2>(re2::StringPiece(pattern.data(), pattern.size()), options())) {
  if (!re_->ok())
    throw UserError(
        fmt::format("{} '{}': {} (patterns are RE2's: ECMAScript's syntax without backreferences or lookaround)", what, pattern, re_->error()));
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

std::optional<std::string> Regex::search(std::string_view text) const {
  re2::StringPiece match;
  if (!re_->Match(re2::StringPiece(text.data(), text.size()), 0, text.size(), RE2::UNANCHORED, &match, 1)) return std::nullopt;
  return std::string(match.data(), match.size());
}

std::string Regex::replace_all(std::string text, std::string_view with) const {
  std::string rewrite;  // RE2's rewrite string: '\' introduces \0-\9, so a literal one is doubled
  for (char c : with) rewrite += c == '\\' ? std::string("\\\\") : std::string(1, c);
  RE2::GlobalReplace(&text, *re_, rewrite);
  return text;
}

}  // namespace reprokit
