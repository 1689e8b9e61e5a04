// Foreign names into reprokit's name rule.
#include "reprokit/onnx/onnx_names.h"

#include "reprokit/ir/names.h"

namespace reprokit {

static bool name_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.'; }

std::string sanitize_foreign_name(std::string_view name, size_t max_length) {
  std::string out;
  char first = name.empty() ? '0' : name[0];
  bool good_first = (first >= 'a' && first <= 'z') || (first >= 'A' && first <= 'Z') || first == '_' || !name_char(first);
  // A first byte that is a valid name char but cannot start a name (digit, '.') gets "v_"; any
  // other bad byte becomes '_', which can.
  if (!good_first) out = "v_";
  for (char c : name) {
    if (out.size() >= max_length) break;
    out += name_char(c) ? c : '_';
  }
  if (out.size() > max_length) out.resize(max_length);
  return out;
}

const std::string& ForeignNames::map(const std::string& foreign) {
  auto it = map_.find(foreign);
  if (it != map_.end()) return it->second;
  std::string base = sanitize_foreign_name(foreign);
  std::string chosen;
  if (!taken_.contains(base)) {
    chosen = base;
    taken_.reserve(chosen);
  } else {
    // Room for "_NNNNNNN".
    std::string cut = base.substr(0, kMaxNameLength - 8);
    chosen = taken_.fresh(cut);
  }
  return map_.emplace(foreign, std::move(chosen)).first->second;
}

const std::string* ForeignNames::find(const std::string& foreign) const {
  auto it = map_.find(foreign);
  return it == map_.end() ? nullptr : &it->second;
}

}  // namespace reprokit
