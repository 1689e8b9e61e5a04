// HarnessConfig::from_env.
#include "reprokit/harness/harness_config.h"

#include <fmt/format.h>

#include <cstdlib>

#include "reprokit/ir/errors.h"

namespace reprokit {

namespace {
const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}
double number(const char* name, const char* v) {
  char* end = nullptr;
  double x = std::strtod(v, &end);
  if (*end || x < 0) throw UserError(fmt::format("{}={} is not a non-negative number", name, v));
  return x;
}
}  // namespace

HarnessConfig HarnessConfig::from_env() {
  HarnessConfig c;
  if (const char* v = env("REPRO_AFTER")) {
    c.after = v;
    if (c.after != "dynamo" && c.after != "aot") throw UserError(fmt::format("REPRO_AFTER={} is not one of: dynamo, aot", v));
  }
  if (const char* v = env("REPRO_LEVEL")) {
    std::string s = v;
    if (s.size() != 1 || s[0] < '1' || s[0] > '4') throw UserError(fmt::format("REPRO_LEVEL={} is not one of: 1, 2, 3, 4", v));
    c.level = s[0] - '0';
  }
  if (const char* v = env("REPRO_DIR")) c.dir = v;
  if (const char* v = env("REPRO_MINIFY")) {
    std::string s = v;
    if (s != "0" && s != "1") throw UserError(fmt::format("REPRO_MINIFY={} is not 0 or 1", v));
    c.minify = s == "1";
  }
  if (const char* v = env("REPRO_TOLERANCE")) c.tolerance = number("REPRO_TOLERANCE", v);
  if (const char* v = env("REPRO_TIMEOUT")) c.timeout_s = number("REPRO_TIMEOUT", v);
  return c;
}

}  // namespace reprokit
