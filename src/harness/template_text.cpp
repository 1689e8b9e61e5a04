// Embedded templates (built from repro_templates/ by cmake/embed_templates.cmake).
#include "template_text.h"

#include "reprokit/ir/errors.h"

namespace reprokit {

namespace {
const char* kTemplates[][2] = {
#include "reprokit_templates.inc"
};
}  // namespace

std::string render_template(const std::string& name, const std::map<std::string, std::string>& vars) {
  const char* text = nullptr;
  for (auto& t : kTemplates)
    if (name == t[0]) text = t[1];
  if (!text) throw InternalError("missing embedded template " + name);
  std::string out;
  std::string s = text;
  size_t pos = 0;
  for (;;) {
    size_t open = s.find("{{", pos);
    if (open == std::string::npos) break;
    size_t close = s.find("}}", open);
    if (close == std::string::npos) break;
    std::string key = s.substr(open + 2, close - open - 2);
    auto it = vars.find(key);
    if (it == vars.end()) throw InternalError("template " + name + ": no value for {{" + key + "}}");
    out += s.substr(pos, open - pos) + it->second;
    pos = close + 2;
  }
  return out + s.substr(pos);
}

}  // namespace reprokit
