// One reduction session (see session.h).
#include "reprokit/minifier/session.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>

#include "reprokit/minifier/candidate.h"
#include "reprokit/minifier/progress_printer.h"
#include "reprokit/support/errors.h"

namespace reprokit {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

namespace {

// The per-query limit of the reduction, once the original has been timed (the floor of make_oracle).
double timed_limit_s(const FrontEndOptions& f, const SessionOptions& o, const ProbeResult& pr) {
  if (!f.limit_from_probe) return f.untimed_limit_s;
  return o.timeout_s > 0 ? o.timeout_s : std::max(10.0, 3 * pr.slowest_s + 5);
}

// Whether --only and --skip let the strategy (or guess) `name` run.
bool chosen(const SessionOptions& o, const std::string& name) { return (o.only.empty() || o.only.count(name)) && !o.skip.count(name); }

}  // namespace

std::vector<Strategy> selected_strategies(const ReductionFrontEnd& front, const SessionOptions& o) {
  std::vector<Strategy> out;
  for (auto& s : front.options().strategies)
    if (chosen(o, s.name)) out.push_back(s);
  return out;
}

int run_session(ReductionFrontEnd& front, const SessionOptions& o) {
  const auto t0 = Clock::now();
  const FrontEndOptions& f = front.options();
  const std::string& tool = f.tool;
  // Ctrl-C or a kill: the workers and checks go with us (the message changes once a repro is on disk).
  f.say_when_interrupted(fmt::format("\n[{}] interrupted before any repro was written: nothing to resume\n", tool));

  // 1. The original must be interesting, several runs for a flaky one. The probe's oracle ends
  //    before the reduction's starts, or becomes it (no worker held twice on a cluster).
  Candidate original;
  original.graph = *f.original;
  fmt::print(stderr, "{}", f.probing_message);
  std::unique_ptr<TimedOracle> probe = front.make_oracle(f.untimed_limit_s);
  const ProbeResult pr = probe_original(f.probe, [&] { return front.probe_once(*probe, original); });
  if (!front.probed(pr)) return 1;
  std::unique_ptr<TimedOracle> oracle = front.oracle_after_probe(std::move(probe), timed_limit_s(f, o, pr));
  front.ready(*oracle, pr, o);

  // 2. Resume from the best candidate an earlier run left behind.
  Candidate start = original;
  const Dir& state = *f.state_dir;
  if (o.resume && state.exists("state.json")) {
    start = read_best_candidate(state, *f.passes);
    try {
      front.check_resumed(start);
    } catch (const UserError& e) { throw UserError(fmt::format("{}: {}", state.path("state.json"), e.what())); }
    fmt::print(stderr, "[{}] resuming from {} ({} ops)\n", tool, state.path("state.json"), start.graph.num_ops());
  }

  // 3. Reduce; after every success the best repro so far is on disk and runnable.
  auto write_state = [&](const Candidate& best) { state.write("state.json", json{{"best", best.to_json()}}.dump()); };
  auto save = [&](const Candidate& c) {
    front.save(c);
    write_state(c);
  };
  save(start);
  f.say_when_interrupted(f.interrupted_message);
  ProgressPrinter printer(tool, f.original->num_ops());
  MinifyCallbacks cb;
  cb.on_success = [&](const Candidate& c, const MinifyProgress& p) {
    save(c);
    printer.line(p, true);
  };
  cb.on_progress = [&](const MinifyProgress& p) { printer.line(p, false); };
  MinifyOptions mo;
  mo.flaky_attempts = pr.attempts_per_candidate();
  if (pr.rate() < 1) mo.restarts = 2;  // a flaky oracle can still say "not interesting" wrongly
  mo.names_matter = f.oracle_reads_names;
  if (chosen(o, f.first_guesses_name)) {
    mo.first_guesses = front.first_guesses(start);
    mo.first_guesses_name = f.first_guesses_name;
  }
  mo.simplify_all = chosen(o, kSimplifyAll);
  SessionResult s;
  s.reduction = reduce(start, selected_strategies(front, o), *oracle, mo, cb);
  printer.done();
  oracle->release();
  report_time_limits(tool, s.reduction, oracle->limit().largest_given_s());

  // 4. The final repro and its twin; 5. verified in a fresh run; 6. the report.
  s.twin_difference = front.write_final(s.reduction);
  write_state(s.reduction.best);
  s.verified = !o.verify || front.verify(s.reduction.best);
  s.failure_rate = pr.rate();
  s.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  front.report(s, o);
  return s.verified ? 0 : 1;
}

}  // namespace reprokit
