// The worker-pool oracle (see subprocess_oracle.h).
#include "reprokit/minifier/subprocess_oracle.h"

#include <fmt/format.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "reprokit/ir/errors.h"
#include "reprokit/process/subprocess.h"

namespace reprokit {

namespace fs = std::filesystem;

bool minifier_interesting(const Failure& expected, const Failure& got, bool any_accuracy) {
  if (any_accuracy && expected.kind == "accuracy" && got.kind == "accuracy") return true;
  return same_failure(expected, got);
}

struct SubprocessOracle::Pool {
  std::vector<std::unique_ptr<LineChild>> workers;
};

SubprocessOracle::SubprocessOracle(WorkerPoolOptions options, Failure expected)
    : pool_(std::make_unique<Pool>()), options_(std::move(options)), expected_(std::move(expected)) {
  options_.jobs = std::max(1, options_.jobs);
  pool_->workers.resize(static_cast<size_t>(options_.jobs));
  fs::create_directories(fs::path(options_.work_dir) / "queries");
}

SubprocessOracle::~SubprocessOracle() = default;

int SubprocessOracle::parallelism() const { return options_.jobs; }

void SubprocessOracle::set_expected(const Failure& f) { expected_ = f; }

std::string SubprocessOracle::rerun_command(const std::string& query_file) const {
  return shell_quote_command({options_.reprokit_exe, "minify-worker", options_.bundle_dir, "--query", query_file});
}

namespace {

ProcessSpec worker_spec(const WorkerPoolOptions& o) {
  ProcessSpec s;
  s.argv = {o.reprokit_exe, "minify-worker", o.bundle_dir};
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
      std::string qfile = (fs::path(options_.work_dir) / "queries" / fmt::format("q{:05d}.json", ++query_counter_)).string();
      std::ofstream(qfile) << line << "\n";
      if (!w->write_line(line)) {
        // The worker died before reading: it is the verdict of nothing; restart and resend.
        w = std::make_unique<LineChild>(worker_spec(options_));
        w->write_line(line);
      }
    }
    for (size_t i = start; i < end; ++i) {
      auto& w = pool_->workers[i - start];
      auto reply = w->read_line(options_.timeout_s);
      Failure got;
      if (reply && reply->rfind("VERDICT ", 0) == 0) {
        got = Failure::from_json(nlohmann::json::parse(reply->substr(8)));
      } else if (w->timed_out()) {
        got = Failure{"timeout", fmt::format("no answer within {}s", options_.timeout_s), "timeout", 0};
        w->kill();
        w->wait_result();
        w.reset();
      } else {
        ProcessResult r = w->wait_result();
        if (r.signal) got = Failure{"crash", fmt::format("the worker was killed by signal {} ({})", r.signal, strsignal(r.signal)), strsignal(r.signal), r.signal};
        else got = Failure{"runtime_error", fmt::format("the worker exited with status {}: {}", r.exit_code, r.err), normalise_signature(r.err), 0};
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
