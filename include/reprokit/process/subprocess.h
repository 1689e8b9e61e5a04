// Child processes, behind one small translation unit (Boost.Process v2 and Asio are slow to
// compile). Every child starts from an argv vector (never a shell), in its own process group (a
// timeout or kill reaches its grandchildren too), and dies with its parent (PR_SET_PDEATHSIG).
// A child is stopped with SIGTERM to its group and SIGKILL after a grace period: a launcher such
// as srun cancels its job on SIGTERM, while SIGKILL to its whole group leaves the job running.
// A child's result is a plain record; callers judge it.
#pragma once
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace reprokit {

struct ProcessSpec {
  std::vector<std::string> argv;               // argv[0] is a path, or a name looked up in PATH
  std::map<std::string, std::string> env_set;  // added to / overriding the parent's environment
  std::vector<std::string> env_unset;
  std::string cwd;                            // empty: the parent's
  double timeout_s = 0;                       // 0: none
  std::string stdin_text;                     // empty: stdin is /dev/null
  long memory_limit_mb = 0;                   // 0: none (RLIMIT_AS in the child)
  bool inherit_output = false;                // stdout/stderr go to ours (not captured)
  size_t max_output_bytes = size_t{1} << 20;  // what run_process keeps of stdout and of stderr: the tail
};

struct ProcessResult {
  int exit_code = -1;  // when it exited normally
  int signal = 0;      // when killed by a signal (SIGSEGV = 11, ...)
  bool timed_out = false;
  std::string out, err;  // captured stdout / stderr (the tail, at most max_output_bytes each)
  double seconds = 0;
};

// Runs to completion (or timeout, killing the whole process group). Throws std::runtime_error
// when the program cannot be started (not found, not executable).
ProcessResult run_process(const ProcessSpec& spec);

// A long-lived child talking line by line over stdin/stdout (the minifier's oracle workers).
class LineChild {
 public:
  explicit LineChild(const ProcessSpec& spec);  // starts it in its own process group
  ~LineChild();                                 // finish()
  LineChild(const LineChild&) = delete;
  LineChild& operator=(const LineChild&) = delete;
  bool write_line(const std::string& line);
  // The next stdout line, or nullopt on EOF or timeout (then timed_out() tells which).
  std::optional<std::string> read_line(double timeout_s);
  bool timed_out() const;
  bool alive();
  void kill();  // SIGKILL the group (what `kill -9` of a whole job would do)
  void stop();  // stop it now: SIGTERM to the group, SIGKILL after the grace period
  // End of input, then the grace period to exit by itself, then stop(). A worker reading its
  // queries from stdin ends cleanly; through srun, the job ends with it.
  void finish();
  ProcessResult wait_result();  // after EOF/stop: exit code / signal and the stderr tail
  std::string stderr_tail();    // what it has written to stderr so far (its tail), while it runs
  int pid() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Orphans: a child's grandchild that left its process group (setsid, a daemon) survives the
// group's kill and is reparented to init. adopt_orphans() makes this process their subreaper
// (PR_SET_CHILD_SUBREAPER), so they are reparented to it instead; whenever no child of ours is
// running (and at stop_adopted_orphans()) each one is killed. What stays out of reach: a daemon
// that outlives us after `kill -9` of this process (it goes to init; containing it needs a cgroup).
// Children's process groups are covered after `kill -9` too: a reaper process stops them.
void adopt_orphans();
// The reaper's pid (-1 before the first child): a child of this process that is no leftover.
int reaper_pid();
int stop_adopted_orphans();  // kills (and reaps) every adopted orphan now; returns how many

// Stops the process group of every child this process started that is still running: SIGTERM to
// the groups, the grace period while any still runs, SIGKILL to each child still alive alone, the
// grace period again for the rest of its group, SIGKILL to what is left. Async-signal-safe.
void kill_all_children();
// From now on, SIGINT and SIGTERM kill every child group, print `message` to stderr and end this
// process with status 128 + signal; from the signal on, no thread starts a child. Call again to
// change the message.
void on_termination_signal(const std::string& message);

// Shell-quoted command line for printing ("rerun this query by hand").
std::string shell_quote_command(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {});

}  // namespace reprokit
