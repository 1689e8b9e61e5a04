// The harness's configuration, read from the REPRO_* environment variables of DESIGN.md.
#pragma once
#include <optional>
#include <string>

namespace reprokit {

struct HarnessConfig {
  std::string after;  // "", "dynamo" or "aot"
  int level = 2;      // 1..4
  std::string dir = "reprokit_out";
  bool minify = false;
  std::optional<double> tolerance;  // a fixed tolerance; nullopt: auto (the noise floor)
  double timeout_s = 0;             // 0: no watchdog
  int samples = 1;                  // --samples N: each stage also runs on N - 1 input samples drawn like its inputs

  bool enabled() const { return !after.empty(); }
  // Reads REPRO_AFTER, REPRO_LEVEL, REPRO_DIR, REPRO_MINIFY, REPRO_TOLERANCE, REPRO_TIMEOUT.
  // Throws UserError naming the variable and the bad value.
  static HarnessConfig from_env();
};

}  // namespace reprokit
