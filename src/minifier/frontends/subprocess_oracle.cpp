// The worker-pool oracle (see subprocess_oracle.h).
#include "reprokit/minifier/subprocess_oracle.h"

#include <fmt/format.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "reprokit/harness/child_run.h"
#include "reprokit/minifier/verdict_details.h"
#include "reprokit/minifier/worker_protocol.h"
#include "reprokit/support/command_words.h"
#include "reprokit/support/errors.h"
#include "reprokit/process/subprocess.h"
#include "reprokit/support/files.h"

namespace reprokit {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

bool minifier_interesting(const Failure& expected, const Failure& got, bool any_accuracy) {
  if (any_accuracy && expected.kind == FailureKind::accuracy && got.kind == FailureKind::accuracy) return true;
  return same_failure(expected, got);
}

struct SubprocessOracle::Pool {
  std::vector<std::unique_ptr<LineChild>> workers;
  std::optional<Dir> queries;
};

SubprocessOracle::SubprocessOracle(WorkerPoolOptions options, Failure expected)
    : pool_(std::make_unique<Pool>()),
      options_(std::move(options)),
      expected_(std::move(expected)),
      limit_(options_.timeout_s, expected_.kind == FailureKind::timeout) {
  pool_->workers.resize(static_cast<size_t>(options_.jobs));
  pool_->queries.emplace(Dir::open(options_.work_dir).sub("queries", true));
  query_counter_ = options_.first_query - 1;
}

SubprocessOracle::~SubprocessOracle() { release(); }

void SubprocessOracle::retime(double floor_s, Failure expected) {
  options_.timeout_s = floor_s;
  expected_ = std::move(expected);
  limit_ = QueryLimit(floor_s, expected_.kind == FailureKind::timeout);
}

void SubprocessOracle::release() {
  for (auto& w : pool_->workers) w.reset();  // each gets end-of-input and is waited for
}

int SubprocessOracle::parallelism() const { return options_.jobs; }

namespace {

// How a worker ended, for a message.
std::string describe_end(const ProcessResult& r) {
  std::string tail = r.err;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  tail = tail.substr(tail.rfind('\n') == std::string::npos ? 0 : tail.rfind('\n') + 1);
  std::string how = r.signal ? fmt::format("killed by signal {}", r.signal) : fmt::format("exited with status {}", r.exit_code);
  return tail.empty() ? how : how + ": " + tail.substr(0, 300);
}

ProcessSpec worker_spec(const WorkerPoolOptions& o) {
  ProcessSpec s;
  s.argv = argv_under_launcher(o.prefix, {o.reprokit_exe, "minify-worker", o.bundle_dir});
  s.memory_limit_mb = o.memory_limit_mb;
  return s;
}

}  // namespace

std::vector<Verdict> SubprocessOracle::judge(const std::vector<Candidate>& cands) {
  return judge_within_limits(cands, limit_, [this](const std::vector<Candidate>& batch, const std::vector<double>& limits) {
    return in_slices(options_.jobs, batch, limits, [this](auto slice, auto slice_limits) { return run_side_by_side(slice, slice_limits); });
  });
}

// Starts the query on worker `w` (a fresh one if it is gone) and waits for the worker to say it
// has begun. A worker that ends or stays silent before that never ran the candidate: its launcher
// failed (srun's errors, a job that never started) — that is tried again with a fresh worker,
// never taken as an answer, and after three tries an error stops the run.
Clock::time_point SubprocessOracle::begin(size_t w, const std::string& line) {
  auto& worker = pool_->workers[w];
  std::string said;
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (!worker || !worker->alive()) worker = std::make_unique<LineChild>(worker_spec(options_));
    if (worker->write_line(line)) {
      for (;;) {
        auto reply = worker->read_line(options_.launch_timeout_s);
        if (!reply) break;
        if (*reply == kBeginLine) return Clock::now();
      }
    }
    bool silent = worker->timed_out();
    worker->stop();
    ProcessResult r = worker->wait_result();
    said = silent ? fmt::format("no answer within {:g}s", options_.launch_timeout_s) : describe_end(r);
    worker.reset();
  }
  throw UserError(
      fmt::format("the minifier's worker could not start (3 tries): {}\n  command: {}", said, shell_quote_command(worker_spec(options_).argv)));
}

std::vector<Verdict> SubprocessOracle::run_side_by_side(std::span<const Candidate> cands, std::span<const double> limits) {
  std::vector<Verdict> out(cands.size());
  std::vector<Clock::time_point> began(cands.size());
  // Hand out one candidate per worker, then collect the answers.
  for (size_t i = 0; i < cands.size(); ++i) {
    std::string line = cands[i].to_json().dump();
    pool_->queries->write(fmt::format("q{:05d}.json", ++query_counter_), line + "\n");
    began[i] = begin(i, line);
  }
  for (size_t i = 0; i < cands.size(); ++i) {
    auto& w = pool_->workers[i];
    std::optional<Failure> verdict;
    for (;;) {  // lines other than the verdict (a candidate printing to stdout) are skipped
      double left = limits[i] - std::chrono::duration<double>(Clock::now() - began[i]).count();
      auto reply = w->read_line(std::max(left, 0.001));
      if (!reply) break;
      if ((verdict = parse_verdict(*reply))) break;
    }
    Verdict& v = out[i];
    v.seconds = std::chrono::duration<double>(Clock::now() - began[i]).count();
    if (verdict) {
      set_failure(v, *verdict);
    } else {  // it hung, crashed or quit while running the candidate: that end is the verdict
      bool hung = w->timed_out();
      w->stop();
      ProcessResult r = w->wait_result();
      r.timed_out = hung;
      set_failure(v, classify_end(r, "the worker", limits[i]));
      v.timeouts = hung ? 1 : 0;
      w.reset();
    }
    v.interesting = minifier_interesting(expected_, failure_of(v), options_.any_accuracy);
  }
  return out;
}

}  // namespace reprokit
