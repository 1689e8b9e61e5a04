// A graph the compiler under test cannot take: an op or a dtype it lacks, in its own words, or a
// graph with no ONNX form for a compiler that reads ONNX. A limitation, never a finding: it is a
// UserError (the harness records no bundle, the minifier counts such a candidate invalid), and the
// command line says so on a line of its own (unsupported_line) that a fuzz campaign counts apart
// from reprokit's own refusals.
#pragma once
#include <string>
#include <string_view>

#include "reprokit/support/errors.h"

namespace reprokit {

struct Unsupported : UserError {
  using UserError::UserError;
};

// What `reprokit COMMAND` prints for an Unsupported before exiting with status 2.
inline std::string unsupported_line(std::string_view command, std::string_view message) {
  return "reprokit " + std::string(command) + ": unsupported: " + std::string(message);
}

// Whether a line of stderr is one unsupported_line printed: "reprokit COMMAND: unsupported: ...".
inline bool is_unsupported_line(std::string_view line) {
  constexpr std::string_view kStart = "reprokit ", kTag = ": unsupported: ";
  if (!line.starts_with(kStart)) return false;
  const size_t colon = line.find(':');
  return colon != std::string_view::npos && line.substr(kStart.size(), colon - kStart.size()).find(' ') == std::string_view::npos &&
         line.substr(colon).starts_with(kTag);
}

}  // namespace reprokit
