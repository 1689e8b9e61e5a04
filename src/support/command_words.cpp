// Shell-like word splitting without a shell (see command_words.h).
#include "reprokit/support/command_words.h"

#include <fmt/core.h>

#include <cctype>
#include <span>
#include <string_view>

#include "reprokit/support/errors.h"

namespace reprokit {

namespace {

constexpr std::string_view kCandidateVars[] = {"${REPRO_CANDIDATE}", "$REPRO_CANDIDATE"};

// The length of the candidate variable at s[i] (0: none). `$REPRO_CANDIDATE_DIR` is another
// variable, not the candidate followed by "_DIR".
size_t candidate_var_at(std::string_view s, size_t i) {
  for (auto v : kCandidateVars) {
    if (s.compare(i, v.size(), v) != 0) continue;
    const size_t end = i + v.size();
    const bool longer_name = v.back() != '}' && end < s.size() && (std::isalnum(static_cast<unsigned char>(s[end])) || s[end] == '_');
    if (!longer_name) return v.size();
  }
  return 0;
}

// Where an unquoted `$` starts one of the candidate variables (marked so quoting keeps them).
bool starts_candidate_var(const std::string& s, size_t i) { return candidate_var_at(s, i) > 0; }

// Characters a path may hold and still mean itself inside a shell script.
bool shell_inert(std::string_view path) {
  for (char c : path)
    if (!std::isalnum(static_cast<unsigned char>(c)) && std::string_view("_-./+,=:@%").find(c) == std::string_view::npos) return false;
  return true;
}

[[noreturn]] void refuse(const std::string& what, const std::string& command, char c) {
  throw UserError(
      fmt::format("{} '{}': an unquoted '{}' means something only to a shell, and reprokit runs the command without one; "
                  "quote it to pass it on, or write sh -c '...' to use a shell",
                  what, command, c));
}

}  // namespace

std::vector<std::string> split_command_words(const std::string& command, const std::string& what) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < command.size(); ++i) {
    char c = command[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\\') {
      if (i + 1 < command.size()) word += command[++i];
    } else if (c == '\'') {
      size_t end = command.find('\'', i + 1);
      if (end == std::string::npos) throw UserError(fmt::format("{} '{}': unterminated single quote", what, command));
      word += command.substr(i + 1, end - i - 1);
      i = end;
    } else if (c == '"') {
      size_t j = i + 1;
      for (; j < command.size() && command[j] != '"'; ++j) {
        // Inside double quotes a backslash escapes only these, as in sh.
        if (command[j] == '\\' && j + 1 < command.size() && std::string_view("\"\\$`").find(command[j + 1]) != std::string_view::npos) ++j;
        word += command[j];
      }
      if (j >= command.size()) throw UserError(fmt::format("{} '{}': unterminated double quote", what, command));
      i = j;
    } else if (std::string_view("|;&<>`()").find(c) != std::string_view::npos) {
      refuse(what, command, c);
    } else if (c == '$' && !starts_candidate_var(command, i)) {
      refuse(what, command, c);
    } else {
      word += c;
    }
  }
  if (in_word) words.push_back(std::move(word));
  if (words.empty()) throw UserError(fmt::format("{} is empty", what));
  return words;
}

std::vector<std::string> substitute_candidate(const std::vector<std::string>& words, const std::string& candidate) {
  std::vector<std::string> out;
  for (const std::string& w : words) {
    std::string r;
    bool embedded = false;  // the candidate lands inside a longer word (a `sh -c` script, --model=...)
    for (size_t i = 0; i < w.size();) {
      size_t n = w.compare(i, 2, "{}") == 0 ? 2 : w[i] == '$' ? candidate_var_at(w, i) : 0;
      if (n == 0) {
        r += w[i++];
        continue;
      }
      embedded |= n != w.size();
      r += candidate;
      i += n;
    }
    // Inside a longer word the path may become shell text (sh -c 'check {}'): a name such as
    // m$(touch X).rk would run a command. One argv word of its own is always safe.
    if (embedded && !shell_inert(candidate))
      throw UserError(
          fmt::format("the candidate's path '{}' has characters a shell would interpret, and {{}} is inside a longer word of the "
                      "check; give it a word of its own (sh -c '... \"$1\"' sh {{}}) or use $REPRO_CANDIDATE inside the script",
                      candidate));
    out.push_back(std::move(r));
  }
  return out;
}

namespace {

// Launchers that hand their command to a shell on the other side as one string.
constexpr std::string_view kReparsingLaunchers[] = {"ssh", "rsh", "autossh", "pdsh", "dbclient"};
// Launchers that exec their command's words as given (no shell in between).
constexpr std::string_view kArgvLaunchers[] = {"srun",   "nice",   "env",   "taskset", "numactl", "timeout", "chrt",
                                               "ionice", "stdbuf", "nohup", "setsid",  "prlimit", "flock",   "time"};

// The launcher's program name (its last path component).
std::string_view program_name(const std::vector<std::string>& prefix) {
  const std::string& program = prefix.front();
  return std::string_view(program).substr(program.rfind('/') == std::string::npos ? 0 : program.rfind('/') + 1);
}

bool named_in(std::string_view name, std::span<const std::string_view> table) {
  for (auto l : table)
    if (name == l) return true;
  return false;
}

// A word as one sh word: 'it''s' style single quotes unless it is inert already.
std::string quoted_for_shell(const std::string& w) {
  if (!w.empty() && shell_inert(w)) return w;
  std::string q = "'";
  for (char c : w) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

bool launcher_reparses(const std::vector<std::string>& prefix) { return !prefix.empty() && named_in(program_name(prefix), kReparsingLaunchers); }

std::vector<std::string> argv_under_launcher(const std::vector<std::string>& prefix, const std::vector<std::string>& command) {
  std::vector<std::string> argv = prefix;
  const bool reparses = launcher_reparses(prefix);
  for (const std::string& w : command) argv.push_back(reparses ? quoted_for_shell(w) : w);
  return argv;
}

void refuse_path_under_launcher(const std::vector<std::string>& prefix, const std::string& path, const std::string& what) {
  if (prefix.empty() || launcher_reparses(prefix) || named_in(program_name(prefix), kArgvLaunchers)) return;
  const size_t bad = path.find_first_of(kShellActiveCharacters);
  if (bad == std::string::npos) return;
  throw UserError(
      fmt::format("{} '{}' holds '{}', which a launcher that re-parses its command in a shell would act on, and reprokit "
                  "cannot tell whether '{}' does (ssh, rsh and pdsh do, and get their words quoted; srun, nice, env and "
                  "the like do not); rename it, or choose a "
                  "--work-dir (and -o) whose path holds no such character",
                  what, path, path[bad] == '\n' ? std::string("\\n") : std::string(1, path[bad]), prefix.front()));
}

}  // namespace reprokit
