// One reduction session: the steps `reprokit minify` and `reprokit reduce` share — check that the
// original is interesting (measuring a flaky rate and the time one run takes), resume from an
// interrupted run, reduce with the strategies selected, keep the best repro on disk after every
// success, write the final repro with its passing twin, verify it in a fresh run, report. The two
// commands are front ends that say only what differs: where the graph comes from, who judges a
// candidate (worker processes or a user's check), and which files are written where.
#pragma once
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "reprokit/minifier/oracle.h"
#include "reprokit/minifier/probe.h"
#include "reprokit/minifier/query_limit.h"
#include "reprokit/minifier/reducer.h"
#include "reprokit/support/files.h"

namespace reprokit {

// The flags both commands take, parsed once (src/cli/session_flags.cpp).
struct SessionOptions {
  int jobs = 1;                            // queries run at once, 1..kMaxJobs; the result does not depend on it
  double timeout_s = 0;                    // least seconds per query; 0: 3x the original's slowest run + 5, at least 10
  std::set<std::string> only, skip;        // strategy names
  int flaky_checks = 3;                    // most runs of the original (after 3, at most 15 s)
  std::vector<std::string> worker_prefix;  // a launcher every query runs under (srun ..., ssh HOST)
  std::string work_dir;                    // queries and state; empty: the command's default
  bool resume = false;
  bool verify = true;
};

// An oracle whose per-query time limit is known (both front ends' oracles).
class TimedOracle : public Oracle {
 public:
  virtual const QueryLimit& limit() const = 0;
  // Ends what it keeps running between queries (worker processes); a later query starts anew.
  virtual void release() {}
};

// How the session went, for the front end's report.
struct SessionResult {
  MinifyResult reduction;
  double failure_rate = 1;   // of the original, from the probe
  bool verified = false;     // the final repro was verified and still interesting
  std::string twin_difference;
  double seconds = 0;        // the whole session
};

class ReductionFrontEnd {
 public:
  virtual ~ReductionFrontEnd() = default;
  virtual std::string_view tool() const = 0;  // "minify", "reduce": the prefix of every message
  virtual const Graph& original() const = 0;
  // Whether a strategy of the table applies here (beyond --only and --skip).
  virtual bool strategy_applies(const Strategy& s) const = 0;

  // 1. The probe. Its options; the per-query limit before the original has been timed; the
  //    oracle, with `floor_s` as its least per-query limit (called once for the probe, once for
  //    the reduction; the session keeps the reduction's until after report()); one run of the original (may learn from it what failure is sought).
  virtual ProbeOptions probe_options(const SessionOptions& o) const = 0;
  virtual double untimed_limit_s(const SessionOptions& o) const = 0;
  virtual std::unique_ptr<TimedOracle> make_oracle(double floor_s) = 0;
  virtual Verdict probe_once(TimedOracle& oracle, const Candidate& original) = 0;
  // The reduction's oracle once the probe is done: by default the probe's ends and a new one
  // starts with `floor_s`; a front end whose workers can go on keeps them.
  virtual std::unique_ptr<TimedOracle> oracle_after_probe(std::unique_ptr<TimedOracle> probe, double floor_s) {
    probe.reset();
    return make_oracle(floor_s);
  }
  // What is said around the probe. probed() returns false when the original is not interesting.
  virtual void probing(const ProbeOptions& po) = 0;
  virtual bool probed(const ProbeResult& pr) = 0;
  // The per-query limit of the reduction, once the original has been timed (the floor of make_oracle).
  virtual double timed_limit_s(const SessionOptions& o, const ProbeResult& pr) const;
  virtual void ready(const TimedOracle& oracle, const ProbeResult& pr, const SessionOptions& o) = 0;

  // 2. Resume: where state.json lives, and the check of a resumed candidate (untrusted: its
  //    windows and indices must fit; UserError otherwise).
  virtual const Dir& state_dir() const = 0;
  virtual void check_resumed(const Candidate& c) = 0;

  // 3. The best repro so far, on disk; what an interruption says once one is there.
  virtual void save(const Candidate& best) = 0;
  virtual std::string interrupted_message() const = 0;

  // 4. The final repro with its passing twin (r.twin, when there is one); returns the twin's one-line difference.
  virtual std::string write_final(const MinifyResult& r) = 0;
  // 5. The final repro rerun in a fresh process: still interesting? (Warns when not.)
  virtual bool verify(const Candidate& best) = 0;
  // 6. report.json, SUMMARY and what is printed last.
  virtual void report(const SessionResult& s, const SessionOptions& o) = 0;
};

// Runs the session; returns the exit status: 0 reduced (and verified); 1 the original is not
// interesting, or the final repro is not. UserError for bad input.
int run_session(ReductionFrontEnd& front, const SessionOptions& options);

// The strategies of the table that --only/--skip select and that apply to the front end, in table order.
std::vector<Strategy> selected_strategies(const ReductionFrontEnd& front, const SessionOptions& options);

}  // namespace reprokit
