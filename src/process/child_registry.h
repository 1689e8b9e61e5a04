// Private to src/process: the registry of started children that subprocess.cpp keeps (for the
// termination handler and the reaper), for the other ways of starting a child in this layer.
#pragma once
#include <sys/types.h>

#include <mutex>

namespace reprokit::process_detail {

// Held from a child's fork until it is registered.
std::unique_lock<std::mutex> lock_spawning();
// Once a termination signal arrived no child starts: the calling thread waits for the end there.
void wait_for_the_end_if_terminating();
void register_started(pid_t pid);    // with its own process group, led by it
void unregister_started(pid_t pid);  // after it was reaped

}  // namespace reprokit::process_detail
