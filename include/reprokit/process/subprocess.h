// Child processes, behind one small translation unit (Boost.Process v2 is slow to compile).
// A child's result is a plain record; callers judge it. Timeouts kill the child's process group.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace reprokit {

struct ProcessSpec {
  std::vector<std::string> argv;               // argv[0] is a path or a name looked up in PATH
  std::map<std::string, std::string> env_set;  // added to / overriding the parent's environment
  std::vector<std::string> env_unset;
  std::string cwd;                             // empty: the parent's
  double timeout_s = 0;                        // 0: none
  std::string stdin_text;
  long memory_limit_mb = 0;                    // 0: none (RLIMIT_AS in the child)
};

struct ProcessResult {
  int exit_code = -1;     // when it exited normally
  int signal = 0;         // when killed by a signal (SIGSEGV = 11, ...)
  bool timed_out = false;
  std::string out, err;   // captured stdout / stderr (the tail, at most 1 MiB each)
  double seconds = 0;
};

// Runs to completion (or timeout, killing the whole process group).
ProcessResult run_process(const ProcessSpec& spec);

// A long-lived child talking line by line over stdin/stdout (the minifier's oracle workers).
class LineChild {
 public:
  explicit LineChild(const ProcessSpec& spec);  // starts it in its own process group
  ~LineChild();                                  // kills the group
  LineChild(const LineChild&) = delete;
  LineChild& operator=(const LineChild&) = delete;
  bool write_line(const std::string& line);
  // The next stdout line, or nullopt on EOF or timeout (then timed_out() tells which).
  std::optional<std::string> read_line(double timeout_s);
  bool timed_out() const;
  bool alive();
  void kill();                  // SIGKILL the group
  ProcessResult wait_result();  // after EOF/kill: exit code / signal and the stderr tail
  int pid() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Shell-quoted command line for printing ("rerun this query by hand").
std::string shell_quote_command(const std::vector<std::string>& argv,
                                const std::map<std::string, std::string>& env = {});

}  // namespace reprokit
