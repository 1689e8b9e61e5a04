// The mark every child of this process carries in its environment: REPROKIT_RUN holds a token of
// this process's own, after the tokens of the reprokit processes above it. A daemon a check starts
// leaves every process group (setsid) and, once reprokit has died by kill -9, has init for a
// parent, yet it keeps its environment: so the reaper finds it by the mark and stops it.
#pragma once
#include <string>

namespace reprokit::process_detail {

inline constexpr const char* kRunMarkVariable = "REPROKIT_RUN";

// This process's token: "rk<pid>x<random hex>", made once.
const std::string& run_token();

// "REPROKIT_RUN=<the inherited value>:<run_token()>", the entry each child's environment gets.
std::string run_mark_entry();

// Stops every process but the caller whose environment holds `token` in REPROKIT_RUN: SIGTERM,
// up to `grace_s` while any lives, SIGKILL to the rest. System calls only, no allocation: the
// reaper runs it in a copy of a process that had threads.
void stop_marked_processes(const char* token, double grace_s);

// Whether process group `pgid` has a member that has not ended. kill(-pgid, 0) counts zombies as
// members: a worker's forked child, adopted on its parent's death by a subreaper above us (minify
// is one) that reaps it only after we end, kept a stopped group "alive" through both grace
// periods, twice, at every exit of `reprokit repro` under minify. System calls only, no
// allocation, no static buffer (threads and the termination handler call it).
bool group_runs(pid_t pgid);

}  // namespace reprokit::process_detail
