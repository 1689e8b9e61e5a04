// The templates of generated files (repro_templates/), embedded at build time: every generated
// file (code preludes, repro files, the launcher, the PyTorch program) comes from here.
#pragma once
#include <map>
#include <string>
#include <string_view>

namespace reprokit {

// The template file `name`, with each line `#include "X"` naming another template replaced by
// that template's text (so a shared piece such as rk_half.h is written once). InternalError when
// a template is missing.
std::string template_text(std::string_view name);

// template_text(name) with every {{KEY}} replaced by vars[KEY]. InternalError when a placeholder
// has no value.
std::string render_template(std::string_view name, const std::map<std::string, std::string>& vars);

}  // namespace reprokit
