// The embedded template store (see templates.h), built from repro_templates/ by
// cmake/embed_templates.cmake and compiled once, here.
#include "reprokit/runtime/templates.h"

#include <fmt/format.h>

#include "reprokit/support/errors.h"

namespace reprokit {

namespace {

const char* kTemplates[][2] = {
#include "reprokit_templates.inc"
};

const char* raw(std::string_view name) {
  for (auto& t : kTemplates)
    if (name == t[0]) return t[1];
  throw InternalError(fmt::format("missing embedded template {}", name));
}

}  // namespace

std::string template_text(std::string_view name) {
  std::string s = raw(name), out;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t eol = s.find('\n', pos);
    std::string line = s.substr(pos, eol == std::string::npos ? std::string::npos : eol - pos + 1);
    pos = eol == std::string::npos ? s.size() : eol + 1;
    const std::string inc = "#include \"";
    if (line.rfind(inc, 0) == 0) {
      std::string file = line.substr(inc.size(), line.find('"', inc.size()) - inc.size());
      bool known = false;
      for (auto& t : kTemplates) known |= file == t[0];
      if (known) {
        out += template_text(file);
        continue;
      }
    }
    out += line;
  }
  return out;
}

std::string render_template(std::string_view name, const std::map<std::string, std::string>& vars) {
  std::string s = template_text(name), out;
  size_t pos = 0;
  for (;;) {
    size_t open = s.find("{{", pos);
    if (open == std::string::npos) break;
    size_t close = s.find("}}", open);
    if (close == std::string::npos) break;
    std::string key = s.substr(open + 2, close - open - 2);
    auto it = vars.find(key);
    if (it == vars.end()) throw InternalError(fmt::format("template {}: no value for {{{{{}}}}}", name, key));
    out += s.substr(pos, open - pos) + it->second;
    pos = close + 2;
  }
  return out + s.substr(pos);
}

}  // namespace reprokit
