// Regular expressions that run in time linear in the text (RE2), for patterns and texts that come
// from users: --fail-regex against a check's output, the signature rules against a compiler's
// messages. std::regex recursed per character (a segfault on 100 KB) and backtracked
// exponentially (^(a|aa)*$ never ended). Syntax: ECMAScript's where RE2 has it (classes, \d \w \s
// \b, groups, (?:), lazy and counted repeats); no backreferences or lookaround. Text is matched as
// bytes, like std::regex over char.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace re2 {
class RE2;
}

namespace reprokit {

class Regex {
 public:
  // Throws UserError "<what> '<pattern>': <why RE2 refuses it>" for a pattern RE2 does not accept.
  Regex(std::string_view pattern, std::string_view what);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  // The leftmost match in text (as a backtracking engine would choose it), if any.
  std::optional<std::string> search(std::string_view text) const;
  // text with every non-overlapping match replaced by `with`, taken literally.
  std::string replace_all(std::string text, std::string_view with) const;

 private:
  std::unique_ptr<re2::RE2> re_;
};

}  // namespace reprokit
