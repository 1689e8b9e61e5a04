// A command line a user wrote as one string (`reduce --check "python3 check.py {}"`) split into
// argv words the way a POSIX shell splits them (quotes and backslashes), without a shell: nothing
// is expanded, piped or redirected. Characters that only a shell gives meaning to are refused
// rather than passed on literally, so a check never silently does something else.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace reprokit {

// UserError (naming `what`, e.g. "--check") for an empty command, an unterminated quote or an
// unquoted | ; & < > ` ( ) or $ other than $REPRO_CANDIDATE / ${REPRO_CANDIDATE}.
std::vector<std::string> split_command_words(const std::string& command, const std::string& what);

// `words` with every "{}", "$REPRO_CANDIDATE" and "${REPRO_CANDIDATE}" inside a word replaced
// by `candidate`.
std::vector<std::string> substitute_candidate(const std::vector<std::string>& words, const std::string& candidate);

// Whether a launcher joins the command after it into one string that a shell splits again (ssh,
// rsh, pdsh do: `ssh host a b` runs `sh -c "a b"` on the host), judged by its program's name.
bool launcher_reparses(const std::vector<std::string>& prefix);

// The argv that runs `command` under `prefix` with the words `command` has locally: each word
// quoted for the remote shell when the launcher re-parses, as given otherwise (no prefix: `command`).
std::vector<std::string> argv_under_launcher(const std::vector<std::string>& prefix, const std::vector<std::string>& command);

// What a shell that re-parses a command acts on in a word: syntax, quotes, blanks (which split
// it) and globs (which expand it).
inline constexpr std::string_view kShellActiveCharacters = "$`;|&<>()'\"\\\n \t*?[";

// UserError when a path reprokit hands a launcher it cannot tell about (a wrapper script: neither
// one that execs its words as given, as srun, nice and env do, nor an ssh-like one) holds
// characters a shell would act on ($ ` ; | & < > ( ) quotes, backslash, blanks, globs):
// were that launcher one that re-parses, a file named n$(touch X).rk would run a command. Paths
// under ssh-like launchers are quoted instead, and without a prefix no shell is ever involved.
// `what` says what the path is, for the message.
void refuse_path_under_launcher(const std::vector<std::string>& prefix, const std::string& path, const std::string& what);

}  // namespace reprokit
