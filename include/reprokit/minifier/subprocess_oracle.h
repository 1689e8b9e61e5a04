// The real oracle: a pool of long-lived `reprokit minify-worker BUNDLE` processes. A worker that
// crashes or hangs is itself the verdict (crash with its signal; timeout) and is replaced; process
// start-up stays off the critical path.
#pragma once
#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "reprokit/harness/failure.h"
#include "reprokit/minifier/session.h"
#include "reprokit/minifier/query_limit.h"

namespace reprokit {

struct WorkerPoolOptions {
  std::string reprokit_exe;  // the binary to run workers from
  std::string bundle_dir;
  std::string work_dir;     // queries are saved in work_dir/queries as q<N>.json
  int64_t first_query = 1;  // number of the first query saved (a resumed run keeps earlier ones)
  int jobs = 1;
  double timeout_s = 60;          // per query: the floor of QueryLimit (the limit for a hang)
  double launch_timeout_s = 300;  // from a query sent to the worker's BEGIN (srun may queue the job)
  long memory_limit_mb = 0;
  bool any_accuracy = false;        // accept integer/bool-only accuracy divergences too
  std::vector<std::string> prefix;  // a launcher each worker runs under (srun ..., ssh HOST)
};

class SubprocessOracle : public TimedOracle {
 public:
  SubprocessOracle(WorkerPoolOptions options, Failure expected);
  ~SubprocessOracle() override;
  std::vector<Verdict> judge(const std::vector<Candidate>& candidates) override;
  int parallelism() const override;
  // Ends every worker now (end of input, then stopped after the grace period if need be); a
  // later query starts fresh ones.
  void release() override;
  const QueryLimit& limit() const override { return limit_; }
  // The same workers go on with a new per-query floor and the failure the probe settled on: their
  // start (for a Python compiler, an interpreter importing it) is paid once per reduction.
  void retime(double floor_s, Failure expected);

 private:
  std::chrono::steady_clock::time_point begin(size_t worker, const std::string& query_line);
  // One candidate per worker (at most `jobs`), all running at once.
  std::vector<Verdict> run_side_by_side(std::span<const Candidate> candidates, std::span<const double> limits);

  struct Pool;
  std::unique_ptr<Pool> pool_;
  WorkerPoolOptions options_;
  Failure expected_;
  QueryLimit limit_;
  int64_t query_counter_ = 0;
};

// Whether `got` counts as the same bug as `expected` for the minifier (same_failure, plus the
// integer-only accuracy rule).
bool minifier_interesting(const Failure& expected, const Failure& got, bool any_accuracy);

}  // namespace reprokit
