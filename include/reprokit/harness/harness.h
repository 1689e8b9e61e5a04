// The harness: runs the stack with REPRO_AFTER / REPRO_LEVEL / REPRO_TIMEOUT in effect. On a
// failure it writes a bundle (and the un-minified repro files), says where, optionally minifies,
// and raises StackFailure; on a hang its watchdog records a timeout and ends the process.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "reprokit/harness/failure.h"
#include "reprokit/harness/harness_config.h"
#include "reprokit/harness/stack.h"

namespace reprokit {

struct StackFailure : std::runtime_error {
  StackFailure(Failure f, std::string dir) : std::runtime_error(std::string(f.kind_name()) + ": " + f.message), failure(std::move(f)), bundle_dir(std::move(dir)) {}
  Failure failure;
  std::string bundle_dir;  // empty when the harness was off
};

// Runs the whole stack on a captured graph. Raises StackFailure when a stage fails (after the
// harness wrote what its level asks for), UserError on bad input.
StackResult run_stack(const Graph& captured, const std::vector<Tensor>& inputs, const StackOptions& options,
                      const HarnessConfig& config, uint64_t seed = 0);

// Exit status the watchdog uses when it ends a hung process.
constexpr int kTimeoutExitStatus = 124;

}  // namespace reprokit
