// A reprokit process that runs inside a check (a `reduce` or `fuzz --check` check that calls
// `reprokit compare`, say) and fails on its own account — an internal error, a crash — is a
// failure of the tool, not the check's answer about the candidate. Such a process records what
// happened in a file its caller names through the environment, and the caller stops rather than
// take the check's exit status as a verdict (an exit 3 taken as "interesting" reduced a model the
// compiler ran correctly).
#pragma once
#include <map>
#include <string>

namespace reprokit {

inline constexpr const char* kToolFailureLogVariable = "REPROKIT_TOOL_FAILURE_LOG";

// In a reprokit process: when REPROKIT_TOOL_FAILURE_LOG names a file, opens it now (a crash cannot
// open files) and installs handlers that record a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL,
// SIGABRT) there before the process dies of it. `command` names the process in the record.
void report_own_failures_to_caller(const std::string& command);

// In a reprokit process: records an internal error (exit 3) or an allocation failure for the
// caller, when one is listening.
void record_own_failure(const std::string& message);

// For the caller: the variables a check's environment gets so that the reprokit processes it
// starts report their own failures to `log_path` and find this reprokit (REPROKIT_EXE).
std::map<std::string, std::string> tool_failure_environment(const std::string& log_path, const std::string& reprokit_exe);

// For the caller, after the check: what the reprokit processes inside it recorded ("" if nothing).
std::string recorded_tool_failures(const std::string& log_path);

}  // namespace reprokit
