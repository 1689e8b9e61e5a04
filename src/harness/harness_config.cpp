// HarnessConfig::from_env.
#include "reprokit/harness/harness_config.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

#include "reprokit/harness/repro_spec.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/names.h"

namespace reprokit {

namespace {
const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}
// A finite number in [0, max]: inf, nan and huge values would overflow the watchdog or make every
// comparison fail.
double number(const char* name, const char* v, double max) {
  char* end = nullptr;
  double x = std::strtod(v, &end);
  if (end == v || *end || !std::isfinite(x) || x < 0 || x > max)
    throw UserError(fmt::format("{}={} is not a number in [0, {}]", name, printable(v), max));
  return x;
}
}  // namespace

HarnessConfig HarnessConfig::from_env() {
  HarnessConfig c;
  if (const char* v = env("REPRO_AFTER")) {
    c.after = v;
    if (c.after != "dynamo" && c.after != "aot") throw UserError(fmt::format("REPRO_AFTER={} is not one of: dynamo, aot", printable(v)));
  }
  if (const char* v = env("REPRO_LEVEL")) {
    std::string s = v;
    if (s.size() != 1 || s[0] < '1' || s[0] > '4') throw UserError(fmt::format("REPRO_LEVEL={} is not one of: 1, 2, 3, 4", printable(v)));
    c.level = s[0] - '0';
  }
  if (const char* v = env("REPRO_DIR")) c.dir = v;
  if (const char* v = env("REPRO_MINIFY")) {
    std::string s = v;
    if (s != "0" && s != "1") throw UserError(fmt::format("REPRO_MINIFY={} is not 0 or 1", printable(v)));
    c.minify = s == "1";
  }
  // "auto" (or unset): judged against the measured noise floor; a number: a fixed tolerance.
  if (const char* v = env("REPRO_TOLERANCE"); v && std::string(v) != "auto") {
    char* end = nullptr;
    std::strtod(v, &end);
    if (end == v) throw UserError(fmt::format("REPRO_TOLERANCE={} is neither auto nor a number in [0, 1e6]", printable(v)));
    c.tolerance = number("REPRO_TOLERANCE", v, 1e6);
  }
  if (const char* v = env("REPRO_TIMEOUT")) c.timeout_s = number("REPRO_TIMEOUT", v, kMaxTimeoutSeconds);
  return c;
}

}  // namespace reprokit
