// The CLI's small option parser (see command.h).
#include <cerrno>
#include <cmath>
#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "command.h"

namespace reprokit::cli {

std::vector<std::string> csv_items(const std::string& csv) {
  std::vector<std::string> items;
  std::stringstream ss(csv);
  std::string item;
  while (std::getline(ss, item, ',')) items.push_back(item);
  return items;
}

Args::Args(const std::vector<std::string>& argv, const std::vector<std::string>& value_flags, const std::vector<std::string>& bool_flags) {
  auto takes_value = [&](const std::string& f) { return std::find(value_flags.begin(), value_flags.end(), f) != value_flags.end(); };
  auto is_bool = [&](const std::string& f) { return std::find(bool_flags.begin(), bool_flags.end(), f) != bool_flags.end(); };
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--help" || a == "-h") {
      help_ = true;
      continue;
    }
    // Single-dash short options exist only where a command lists them (reduce's -o).
    const bool short_option = a.size() == 2 && a[0] == '-' && a[1] != '-' && (takes_value(a) || is_bool(a));
    if (!short_option && (a.rfind("--", 0) != 0 || a == "--")) {
      positional_.push_back(a);
      continue;
    }
    std::string flag = a, value;
    bool inline_value = false;
    if (auto eq = a.find('='); eq != std::string::npos) {
      flag = a.substr(0, eq);
      value = a.substr(eq + 1);
      inline_value = true;
    }
    if (takes_value(flag)) {
      if (!inline_value) {
        if (i + 1 >= argv.size()) throw UsageError("option " + flag + " needs a value");
        value = argv[++i];
      }
      values_.emplace_back(flag, value);
    } else if (is_bool(flag) && !inline_value) {
      values_.emplace_back(flag, "");
    } else {
      throw UsageError("unknown option " + a);
    }
  }
}

bool Args::has(const std::string& flag) const {
  return std::any_of(values_.begin(), values_.end(), [&](auto& kv) { return kv.first == flag; });
}

std::optional<std::string> Args::get(const std::string& flag) const {
  std::optional<std::string> out;
  for (auto& [k, v] : values_)
    if (k == flag) out = v;
  return out;
}

std::vector<std::string> Args::get_all(const std::string& flag) const {
  std::vector<std::string> out;
  for (auto& [k, v] : values_)
    if (k == flag) out.push_back(v);
  return out;
}

std::string Args::get_or(const std::string& flag, const std::string& def) const {
  auto v = get(flag);
  return v ? *v : def;
}

long Args::get_int(const std::string& flag, long def) const {
  auto v = get(flag);
  if (!v) return def;
  char* end = nullptr;
  errno = 0;
  long x = std::strtol(v->c_str(), &end, 10);
  if (v->empty() || *end || errno == ERANGE) throw UsageError("option " + flag + " expects an integer, got '" + *v + "'");
  return x;
}

double Args::get_double(const std::string& flag, double def) const {
  auto v = get(flag);
  if (!v) return def;
  char* end = nullptr;
  double x = std::strtod(v->c_str(), &end);
  // Every number option is a non-negative quantity (seconds): inf and nan would overflow timers.
  if (v->empty() || *end || !std::isfinite(x) || x < 0 || x > 7 * 24 * 3600.0)
    throw UsageError("option " + flag + " expects a number of seconds in [0, 604800], got '" + *v + "'");
  return x;
}

}  // namespace reprokit::cli
