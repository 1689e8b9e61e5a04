// The harness: runs the stack with REPRO_AFTER / REPRO_LEVEL / REPRO_TIMEOUT in effect. On a
// failure it writes a bundle (and the un-minified repro files), says where, optionally minifies,
// and raises StackFailure; on a hang its watchdog records a timeout and calls the hang end.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "reprokit/harness/failure.h"
#include "reprokit/harness/harness_config.h"
#include "reprokit/harness/stack.h"

namespace reprokit {

struct StackFailure : std::runtime_error {
  StackFailure(Failure f, std::string dir)
      : std::runtime_error(std::string(f.kind_name()) + ": " + f.message), failure(std::move(f)), bundle_dir(std::move(dir)) {}
  Failure failure;
  std::string bundle_dir;  // empty when the harness was off
};

// Runs the whole stack on a captured graph. Raises StackFailure when a stage fails (after the
// harness wrote what its level asks for), UserError on bad input.
StackResult run_stack(const Graph& captured, const std::vector<Tensor>& inputs, const StackOptions& options, const HarnessConfig& config,
                      uint64_t seed = 0);

// Exit status a hung process ends with.
constexpr int kTimeoutExitStatus = 124;

// The watchdog's last step, once it has recorded and announced a hang: the hung stage never
// returns, so how the process ends is the entry point's choice (reprokit's main and the capture
// API end it with kTimeoutExitStatus). With none set the watchdog returns and the stage goes on.
using HangEnd = void (*)();
void set_hang_end(HangEnd end);
HangEnd hang_end();

}  // namespace reprokit
