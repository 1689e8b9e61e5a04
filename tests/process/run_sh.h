// The process tests' way to run a shell script as a child.
#pragma once
#include <string>

#include "reprokit/process/subprocess.h"

namespace reprokit::testing {

// `script` run by sh, within timeout_s (0: none).
inline ProcessResult run_sh(const std::string& script, double timeout_s) {
  ProcessSpec s;
  s.argv = {"sh", "-c", script};
  s.timeout_s = timeout_s;
  return run_process(s);
}

}  // namespace reprokit::testing
