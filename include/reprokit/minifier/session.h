// One reduction session: the steps `reprokit minify` and `reprokit reduce` share — check that the
// original is interesting (measuring a flaky rate and the time one run takes), resume from an
// interrupted run, reduce with the strategies selected, keep the best repro on disk after every
// success, write the final repro with its passing twin, verify it in a fresh run, report. The two
// commands are front ends that say only what differs: where the graph comes from, who judges a
// candidate (worker processes or a user's check), and which files are written where.
#pragma once
#include <functional>
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
  double failure_rate = 1;  // of the original, from the probe
  bool verified = false;    // the final repro was verified and still interesting
  std::string twin_difference;
  double seconds = 0;  // the whole session
};

// What a front end is, as data its constructor fills: the session reads it and never asks.
struct FrontEndOptions {
  std::string tool;                 // "minify", "reduce": the prefix of every message
  const Graph* original = nullptr;  // the front end's graph, alive as long as it
  // The strategies that apply here, in run order; --only and --skip choose among them.
  std::vector<Strategy> strategies;
  // What the front end's first guesses (ReductionFrontEnd::first_guesses) are called in the
  // report; --only and --skip take the name too.
  std::string first_guesses_name = "first-guess";
  ProbeOptions probe;
  std::string probing_message;   // printed before the probe
  double untimed_limit_s = 300;  // per query, until the original has been timed
  // The reduction's per-query limit follows the original's timing (or --timeout); false keeps
  // the untimed limit (a hang sought: the limit is the hang threshold).
  bool limit_from_probe = true;
  // The oracle is a user's program that sees the candidate's file, names and all.
  bool oracle_reads_names = false;
  const Dir* state_dir = nullptr;          // where state.json lives (the front end's)
  const CompilerPasses* passes = nullptr;  // the passes a resumed state.json may name
  std::string interrupted_message;         // what an interruption says once a repro is on disk
  // From now on an interruption (Ctrl-C, a kill) ends the run saying `message`; the front end's,
  // which owns the processes the queries run in.
  std::function<void(const std::string& message)> say_when_interrupted = [](const std::string&) {};
};

// A front end: the data above, and the steps whose behaviour differs between front ends.
class ReductionFrontEnd {
 public:
  virtual ~ReductionFrontEnd() = default;
  const FrontEndOptions& options() const { return options_; }

  // 1. The probe: the oracle, with `floor_s` as its least per-query limit (called once for the
  //    probe, once for the reduction; the session keeps the reduction's until after report());
  //    one run of the original (may learn from it what failure is sought).
  virtual std::unique_ptr<TimedOracle> make_oracle(double floor_s) = 0;
  virtual Verdict probe_once(TimedOracle& oracle, const Candidate& original) = 0;
  // The reduction's oracle once the probe is done: by default the probe's ends and a new one
  // starts with `floor_s`; a front end whose workers can go on keeps them.
  virtual std::unique_ptr<TimedOracle> oracle_after_probe(std::unique_ptr<TimedOracle> probe, double floor_s) {
    probe.reset();
    return make_oracle(floor_s);
  }
  // What is said after the probe; false when the original is not interesting.
  virtual bool probed(const ProbeResult& pr) = 0;
  // Candidates to try before the search (MinifyOptions::first_guesses), from what the probe
  // learnt; none by default.
  virtual std::vector<Candidate> first_guesses(const Candidate& start) {
    (void)start;
    return {};
  }
  virtual void ready(const TimedOracle& oracle, const ProbeResult& pr, const SessionOptions& o) = 0;

  // 2. Resume: the check of a resumed candidate (untrusted: its windows and indices must fit;
  //    UserError otherwise).
  virtual void check_resumed(const Candidate& c) = 0;

  // 3. The best repro so far, on disk.
  virtual void save(const Candidate& best) = 0;

  // 4. The final repro with its passing twin (r.twin, when there is one); returns the twin's one-line difference.
  virtual std::string write_final(const MinifyResult& r) = 0;
  // 5. The final repro rerun in a fresh process: still interesting? (Warns when not.)
  virtual bool verify(const Candidate& best) = 0;
  // 6. report.json, SUMMARY and what is printed last.
  virtual void report(const SessionResult& s, const SessionOptions& o) = 0;

 protected:
  FrontEndOptions options_;
};

// Runs the session; returns the exit status: 0 reduced (and verified); 1 the original is not
// interesting, or the final repro is not. UserError for bad input.
int run_session(ReductionFrontEnd& front, const SessionOptions& options);

// The front end's strategies that --only/--skip select, in run order.
std::vector<Strategy> selected_strategies(const ReductionFrontEnd& front, const SessionOptions& options);

}  // namespace reprokit
