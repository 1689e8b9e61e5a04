// AttrValue accessors and the .rk spelling of values.
#include "reprokit/ir/attr.h"

#include <fmt/format.h>

#include <cmath>

#include "reprokit/support/errors.h"

namespace reprokit {

namespace {
const char* kind_name(const AttrValue& a) {
  if (a.is_int()) return "int";
  if (a.is_float()) return "float";
  if (a.is_bool()) return "bool";
  if (a.is_string()) return "string";
  if (a.is_dtype()) return "dtype";
  return "list";
}
[[noreturn]] void wrong(const AttrValue& a, const char* want) {
  throw UserError(fmt::format("expected {} but got {} {}", want, kind_name(a), a.str()));
}
}  // namespace

AttrValue AttrValue::ints(const std::vector<int64_t>& xs) {
  List l;
  for (auto x : xs) l.emplace_back(x);
  return AttrValue(std::move(l));
}

int64_t AttrValue::as_int() const {
  if (!is_int()) wrong(*this, "an int");
  return std::get<int64_t>(v);
}
double AttrValue::as_float() const {
  if (is_int()) return static_cast<double>(std::get<int64_t>(v));
  if (!is_float()) wrong(*this, "a number");
  return std::get<double>(v);
}
bool AttrValue::as_bool() const {
  if (!is_bool()) wrong(*this, "a bool");
  return std::get<bool>(v);
}
const std::string& AttrValue::as_string() const {
  if (!is_string()) wrong(*this, "a string");
  return std::get<std::string>(v);
}
DType AttrValue::as_dtype() const {
  if (!is_dtype()) wrong(*this, "a dtype");
  return std::get<DType>(v);
}
const AttrValue::List& AttrValue::as_list() const {
  if (!is_list()) wrong(*this, "a list");
  return std::get<List>(v);
}
std::vector<int64_t> AttrValue::as_ints() const {
  if (is_int()) return {as_int()};
  std::vector<int64_t> out;
  for (auto& e : as_list()) out.push_back(e.as_int());
  return out;
}

static std::string float_str(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", d);  // shortest text that reads back exactly
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

std::string AttrValue::str() const {
  if (is_int()) return std::to_string(std::get<int64_t>(v));
  if (is_float()) return float_str(std::get<double>(v));
  if (is_bool()) return std::get<bool>(v) ? "true" : "false";
  if (is_dtype()) return std::string(dtype_name(std::get<DType>(v)));
  if (is_string()) {
    std::string out = "\"";
    for (char c : std::get<std::string>(v)) {
      if (c == '"' || c == '\\') out += '\\';
      if (c == '\n') {
        out += "\\n";
        continue;
      }
      out += c;
    }
    return out + "\"";
  }
  std::string out = "[";
  const auto& l = std::get<List>(v);
  for (size_t i = 0; i < l.size(); ++i) out += (i ? ", " : "") + l[i].str();
  return out + "]";
}

}  // namespace reprokit
