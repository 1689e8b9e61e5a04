// The flags `reprokit minify` and `reprokit reduce` share (see command.h): parsed here once.
#include <fmt/format.h>

#include "command.h"
#include "reprokit/minifier/query_limit.h"
#include "reprokit/minifier/compiler_decisions.h"
#include "reprokit/minifier/failure_named_guesses.h"
#include "reprokit/minifier/reducer.h"
#include "reprokit/support/command_words.h"

namespace reprokit::cli {

const std::vector<std::string> kSessionValueFlags = {"--jobs", "--timeout", "--only", "--skip", "--flaky-checks", "--worker-prefix", "--work-dir"};
const std::vector<std::string> kSessionBoolFlags = {"--resume", "--no-verify"};

std::set<std::string> strategy_names(const std::string& csv) {
  std::set<std::string> out;
  for (const std::string& item : csv_items(csv)) {
    bool known = false;
    for (auto& s : strategy_table()) known |= s.name == item;
    known |= item == kNamedInFailure || item == kSimplifyAll;  // the guesses before and in the first round
    if (!known) throw UsageError("unknown strategy '" + item + "' (--list-strategies lists them)");
    out.insert(item);
  }
  return out;
}

int jobs_flag(const Args& args) {
  const long jobs = args.get_int("--jobs", 1);
  if (jobs < 1 || jobs > kMaxJobs) throw UsageError(fmt::format("--jobs must be between 1 and {}, got {}", kMaxJobs, jobs));
  return static_cast<int>(jobs);
}

SessionOptions session_options(const Args& args, int default_flaky_checks) {
  SessionOptions o;
  o.jobs = jobs_flag(args);
  o.timeout_s = args.get_double("--timeout", 0);  // Args checks seconds: [0, 604800]
  o.flaky_checks = static_cast<int>(args.get_int("--flaky-checks", default_flaky_checks));
  if (o.flaky_checks < 1 || o.flaky_checks > 100) throw UsageError("--flaky-checks must be between 1 and 100");
  if (auto v = args.get("--only")) o.only = strategy_names(*v);
  if (auto v = args.get("--skip")) o.skip = strategy_names(*v);
  if (auto v = args.get("--worker-prefix")) o.worker_prefix = split_command_words(*v, "--worker-prefix");
  o.work_dir = args.get_or("--work-dir", "");
  o.resume = args.has("--resume");
  o.verify = !args.has("--no-verify");
  return o;
}

std::vector<std::string> with_session_flags(std::vector<std::string> flags, bool value_flags) {
  const auto& shared = value_flags ? kSessionValueFlags : kSessionBoolFlags;
  flags.insert(flags.end(), shared.begin(), shared.end());
  return flags;
}

}  // namespace reprokit::cli
