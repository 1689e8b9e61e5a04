// Text that came from a file (a directory's name, a campaign's state.json, an ONNX model's input
// and node names), made safe to print. A terminal acts on control characters: ESC starts
// sequences that clear the screen or set the window title, BEL rings, and a newline inside a name
// lets the name forge a line of reprokit's own output ("reprokit triage: all clear"). Each is
// written as a visible escape instead.
#pragma once
#include <string>
#include <string_view>

namespace reprokit {

// s with every control character escaped: \n \t \r \e, \xNN for the other C0 bytes, DEL and
// bytes that are not part of valid UTF-8 (an 8-bit terminal reads 0x80..0x9f as C1 controls),
// \u0080..\u009f for C1 control characters encoded in UTF-8. Everything else, other UTF-8
// included, is kept as it is.
std::string escape_controls(std::string_view s);

// The same, keeping newlines: for a message of several lines that reprokit itself put together,
// whose quoted names and paths were escaped with escape_controls where it quoted them.
std::string escape_controls_keep_newlines(std::string_view s);

}  // namespace reprokit
