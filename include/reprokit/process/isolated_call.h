// A function run in a forked copy of this process, so that code not hardened against hostile
// input (ONNX's checker and shape inference) can crash, hang or exhaust memory without taking the
// caller with it. The child is started, registered and stopped like every other child (one
// process group, PDEATHSIG, the termination handler and the reaper know it).
#pragma once
#include <functional>
#include <string>

namespace reprokit {

struct IsolatedLimits {
  double timeout_s = 60;
  // The child's address space: what this process maps now plus this much (RLIMIT_AS).
  long long extra_memory_bytes = 4LL << 30;
};

struct IsolatedResult {
  enum class End { returned, crashed, timed_out, no_result };
  End end = End::no_result;
  std::string value;  // what `work` returned, when it did
  int signal = 0;     // when it crashed
};

// Runs `work` in a child and returns what it returned. When no child can be started (no pipe or
// fork) it runs here instead. In the child, an exception leaving `work` (std::bad_alloc at the
// memory limit) ends it without a result.
IsolatedResult run_isolated(const std::function<std::string()>& work, const IsolatedLimits& limits);

}  // namespace reprokit
