// The worker-pool oracle (see subprocess_oracle.h).
#include "reprokit/minifier/subprocess_oracle.h"

#include <fmt/format.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "reprokit/harness/child_run.h"
#include "reprokit/ir/errors.h"
#include "reprokit/process/subprocess.h"
#include "reprokit/support/files.h"

namespace reprokit {

namespace fs = std::filesystem;

bool minifier_interesting(const Failure& expected, const Failure& got, bool any_accuracy) {
  if (any_accuracy && expected.kind == FailureKind::accuracy && got.kind == FailureKind::accuracy) return true;
  return same_failure(expected, got);
}

struct SubprocessOracle::Pool {
  std::vector<std::unique_ptr<LineChild>> workers;
  std::optional<Dir> queries;
};

SubprocessOracle::SubprocessOracle(WorkerPoolOptions options, Failure expected)
    : pool_(std::make_unique<Pool>()), options_(std::move(options)), expected_(std::move(expected)) {
  options_.jobs = std::max(1, options_.jobs);
  pool_->workers.resize(static_cast<size_t>(options_.jobs));
  pool_->queries.emplace(Dir::open(options_.work_dir).sub("queries", true));
  query_counter_ = options_.first_query - 1;
}

SubprocessOracle::~SubprocessOracle() = default;

int SubprocessOracle::parallelism() const { return options_.jobs; }

namespace {

ProcessSpec worker_spec(const WorkerPoolOptions& o) {
  ProcessSpec s;
  s.argv = o.prefix;
  for (const auto& w : {o.reprokit_exe, std::string("minify-worker"), o.bundle_dir}) s.argv.push_back(w);
  s.memory_limit_mb = o.memory_limit_mb;
  return s;
}

}  // namespace

std::vector<Verdict> SubprocessOracle::judge(const std::vector<Candidate>& cands) {
  std::vector<Verdict> out(cands.size());
  for (size_t start = 0; start < cands.size(); start += static_cast<size_t>(options_.jobs)) {
    size_t end = std::min(cands.size(), start + static_cast<size_t>(options_.jobs));
    // Hand out one candidate per worker, then collect the answers.
    for (size_t i = start; i < end; ++i) {
      auto& w = pool_->workers[i - start];
      if (!w || !w->alive()) w = std::make_unique<LineChild>(worker_spec(options_));
      std::string line = cands[i].to_json().dump();
      pool_->queries->write(fmt::format("q{:05d}.json", ++query_counter_), line + "\n");
      if (!w->write_line(line)) {
        // The worker died before reading: it is the verdict of nothing; restart and resend.
        w = std::make_unique<LineChild>(worker_spec(options_));
        w->write_line(line);
      }
    }
    for (size_t i = start; i < end; ++i) {
      auto& w = pool_->workers[i - start];
      auto reply = w->read_line(options_.timeout_s);
      std::optional<Failure> verdict = reply ? parse_verdict(*reply) : std::nullopt;
      Failure got;
      if (verdict) {
        got = *verdict;
      } else {  // it hung, crashed or quit: that end is the verdict, and the worker is replaced
        bool hung = w->timed_out();
        w->kill();
        ProcessResult r = w->wait_result();
        r.timed_out = hung;
        got = classify_end(r, "the worker", options_.timeout_s);
        w.reset();
      }
      out[i].got = got;
      out[i].interesting = minifier_interesting(expected_, got, options_.any_accuracy);
    }
  }
  return out;
}

Failure SubprocessOracle::run_one(const Candidate& c) { return judge({c}).at(0).got; }

}  // namespace reprokit
