// Names (see names.h).
#include "reprokit/ir/names.h"

#include <fmt/format.h>

#include "reprokit/support/errors.h"

namespace reprokit {

namespace {
bool is_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool is_rest(char c) { return is_start(c) || (c >= '0' && c <= '9') || c == '.'; }
}  // namespace

bool is_valid_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength || !is_start(name[0])) return false;
  for (char c : name)
    if (!is_rest(c)) return false;
  return true;
}

std::string printable(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < 60; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') out += static_cast<char>(c);
    else out += fmt::format("\\x{:02x}", c);
  }
  if (s.size() > 60) out += fmt::format("... ({} characters)", s.size());
  return out;
}

void check_name(std::string_view name, std::string_view what, std::string_view where) {
  if (is_valid_name(name)) return;
  throw UserError(fmt::format("{}: invalid {} name '{}': names match [A-Za-z_][A-Za-z0-9_.]* with at most {} characters", where, what,
                              printable(name), kMaxNameLength));
}

std::string utf8_safe(std::string_view s, size_t max_bytes) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 0x2;
    if (!ok) len = 1;
    if (out.size() + len > max_bytes) break;
    if (ok) out.append(s.substr(i, len));
    else out += '?';
    i += len;
  }
  return out;
}

std::string c_string_literal(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '?' && c != '%') out += ch;
    else out += fmt::format("\\{:03o}", c);  // octal: never swallows a following hex digit
  }
  return out + "\"";
}

}  // namespace reprokit
