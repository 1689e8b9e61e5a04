// The one rule for names (DESIGN.md): graph and value names match [A-Za-z_][A-Za-z0-9_.]* and
// have at most 200 characters, wherever a name is read (text, JSON, manifests, the C++ API).
// File names and generated code derive from names that passed this check.
#pragma once
#include <string>
#include <string_view>

namespace reprokit {

constexpr size_t kMaxNameLength = 200;

bool is_valid_name(std::string_view name);
// Throws UserError "<where>: invalid <what> name '<printable name>': names match ..." unless valid.
void check_name(std::string_view name, std::string_view what, std::string_view where);
// The name as it can be shown in a message: non-printable bytes as \xNN, cut at 60 characters.
std::string printable(std::string_view s);

// s with every byte that is not part of a valid UTF-8 sequence replaced by '?', and cut to at
// most max_bytes without splitting a character: safe to store in JSON and to print.
std::string utf8_safe(std::string_view s, size_t max_bytes = std::string::npos);

// A C/C++ string literal (with quotes) holding s, every byte outside printable ASCII escaped:
// what generated code uses when it must mention a name.
std::string c_string_literal(std::string_view s);

}  // namespace reprokit
