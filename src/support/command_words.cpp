// Shell-like word splitting without a shell (see command_words.h).
#include "reprokit/support/command_words.h"

#include <fmt/core.h>

#include <string_view>

#include "reprokit/ir/errors.h"

namespace reprokit {

namespace {

constexpr std::string_view kCandidateVars[] = {"${REPRO_CANDIDATE}", "$REPRO_CANDIDATE"};

// Where an unquoted `$` starts one of the candidate variables (marked so quoting keeps them).
bool starts_candidate_var(const std::string& s, size_t i) {
  for (auto v : kCandidateVars)
    if (s.compare(i, v.size(), v) == 0) return true;
  return false;
}

[[noreturn]] void refuse(const std::string& what, const std::string& command, char c) {
  throw UserError(fmt::format("{} '{}': an unquoted '{}' means something only to a shell, and reprokit runs the command without one; "
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
  for (std::string w : words) {
    for (std::string_view pattern : {std::string_view("{}"), kCandidateVars[0], kCandidateVars[1]})
      for (size_t at = w.find(pattern); at != std::string::npos; at = w.find(pattern, at + candidate.size()))
        w.replace(at, pattern.size(), candidate);
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace reprokit
