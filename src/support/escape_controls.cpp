// Control characters written as escapes (see escape_controls.h).
#include "reprokit/support/escape_controls.h"

#include <fmt/format.h>

namespace reprokit {

namespace {

// The length of the valid UTF-8 sequence of two or more bytes at s[i] and its code point, or
// {0, 0} when there is none (a stray continuation byte, a cut or overlong sequence, a surrogate).
std::pair<size_t, char32_t> utf8_sequence(std::string_view s, size_t i) {
  const auto lead = static_cast<unsigned char>(s[i]);
  const size_t len = lead >= 0xc2 && lead <= 0xdf ? 2 : lead >= 0xe0 && lead <= 0xef ? 3 : lead >= 0xf0 && lead <= 0xf4 ? 4 : 0;
  if (len == 0 || i + len > s.size()) return {0, 0};
  char32_t cp = lead & (0x7f >> len);
  for (size_t k = 1; k < len; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xc0) != 0x80) return {0, 0};
    cp = (cp << 6) | (c & 0x3f);
  }
  const char32_t least = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
  if (cp < least || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return {0, 0};
  return {len, cp};
}

std::string control_escape(unsigned char c) {
  switch (c) {
    case '\n': return "\\n";
    case '\t': return "\\t";
    case '\r': return "\\r";
    case 0x1b: return "\\e";
    default: return fmt::format("\\x{:02x}", c);
  }
}

std::string escape(std::string_view s, bool keep_newlines) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      const bool control = c < 0x20 || c == 0x7f;
      out += control && !(keep_newlines && c == '\n') ? control_escape(c) : std::string(1, static_cast<char>(c));
      ++i;
      continue;
    }
    auto [len, cp] = utf8_sequence(s, i);
    if (len == 0) {
      out += control_escape(c);
      ++i;
    } else if (cp <= 0x9f) {  // C1: CSI (U+009B) acts as ESC [ does
      out += fmt::format("\\u{:04x}", static_cast<uint32_t>(cp));
      i += len;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

}  // namespace

std::string escape_controls(std::string_view s) { return escape(s, false); }

std::string escape_controls_keep_newlines(std::string_view s) { return escape(s, true); }

}  // namespace reprokit
