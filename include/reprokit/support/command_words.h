// A command line a user wrote as one string (`reduce --check "python3 check.py {}"`) split into
// argv words the way a POSIX shell splits them (quotes and backslashes), without a shell: nothing
// is expanded, piped or redirected. Characters that only a shell gives meaning to are refused
// rather than passed on literally, so a check never silently does something else.
#pragma once
#include <string>
#include <vector>

namespace reprokit {

// UserError (naming `what`, e.g. "--check") for an empty command, an unterminated quote or an
// unquoted | ; & < > ` ( ) or $ other than $REPRO_CANDIDATE / ${REPRO_CANDIDATE}.
std::vector<std::string> split_command_words(const std::string& command, const std::string& what);

// `words` with every "{}", "$REPRO_CANDIDATE" and "${REPRO_CANDIDATE}" inside a word replaced
// by `candidate`.
std::vector<std::string> substitute_candidate(const std::vector<std::string>& words, const std::string& candidate);

}  // namespace reprokit
