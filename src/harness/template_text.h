// Access to the embedded templates of repro_templates/ and a small {{KEY}} substitution.
#pragma once
#include <map>
#include <string>

namespace reprokit {

// The template file `name` with every {{KEY}} replaced by vars[KEY]. InternalError when the
// template is missing or a placeholder has no value.
std::string render_template(const std::string& name, const std::map<std::string, std::string>& vars);

}  // namespace reprokit
