// The CLI's command table. Each command lives in its own cmd_<name>.cpp and registers itself with
// a static CommandRegistration; main() dispatches by name. Only main() exits.
#pragma once
#include <functional>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "reprokit/campaign/graph_generator.h"
#include "reprokit/minifier/session.h"

namespace reprokit::cli {

struct Command {
  std::string name;                                              // "run", "minify", ...
  std::string usage;                                             // "reprokit run MODEL.rk [--backend B] ..."
  std::string summary;                                           // one line for `reprokit --help`
  std::string help;                                              // full --help text (options, one per line)
  std::function<int(const std::vector<std::string>& args)> run;  // args after the command name
  bool hidden = false;                                           // internal commands (e.g. the minifier's worker)
};

std::vector<Command>& command_table();

struct CommandRegistration {
  explicit CommandRegistration(Command c) { command_table().push_back(std::move(c)); }
};

// A bad command line: main prints "reprokit CMD: MESSAGE" and the usage, exit 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Minimal option parser: positional args plus --flag / --key VALUE / --key=VALUE.
class Args {
 public:
  // `value_flags` take a value; `bool_flags` do not. Anything else starting with -- is an error.
  Args(const std::vector<std::string>& argv, const std::vector<std::string>& value_flags, const std::vector<std::string>& bool_flags);
  const std::vector<std::string>& positional() const { return positional_; }
  bool has(const std::string& flag) const;
  std::optional<std::string> get(const std::string& flag) const;    // last given
  std::vector<std::string> get_all(const std::string& flag) const;  // every occurrence
  std::string get_or(const std::string& flag, const std::string& def) const;
  long get_int(const std::string& flag, long def) const;  // UsageError when not a number
  double get_double(const std::string& flag, double def) const;
  bool help() const { return help_; }

 private:
  std::vector<std::string> positional_;
  std::vector<std::pair<std::string, std::string>> values_;
  bool help_ = false;
};

// The items of a comma-separated flag value (A,B,...), as std::getline splits them.
std::vector<std::string> csv_items(const std::string& csv);

// The strategy names of --only/--skip (A,B,...); UsageError for one the table lacks.
std::set<std::string> strategy_names(const std::string& csv);

// The flags minify and reduce share (session_flags.cpp): `flags` with the shared value flags
// (--jobs, --timeout, --only, --skip, --flaky-checks, --worker-prefix, --work-dir) or bool flags
// (--resume, --no-verify) added, for Args; and their values, checked (UsageError).
std::vector<std::string> with_session_flags(std::vector<std::string> flags, bool value_flags);
SessionOptions session_options(const Args& args, int default_flaky_checks);
// --jobs (minify, reduce, fuzz): 1 to kMaxJobs, default 1; UsageError otherwise.
int jobs_flag(const Args& args);

// The generator's flags, as `generate` and `fuzz` take them: --max-nodes N, --ops A,B or
// --skip-ops A,B (ops of the table; UsageError naming an unknown one), --train.
GeneratorOptions generator_options(const Args& args);

}  // namespace reprokit::cli
