// The progress line: a heartbeat while checks run (a log fell silent for minutes),
// counters that add up, and no time-left estimate.
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "fake_oracle.h"
#include "reprokit/minifier/progress_printer.h"
#include "reprokit/minifier/reducer.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {
struct Lines {
  std::mutex m;
  std::vector<std::string> all;
  std::function<void(std::string_view)> sink() {
    return [this](std::string_view s) {
      std::lock_guard<std::mutex> lock(m);
      all.emplace_back(s);
    };
  }
  int count(const std::string& needle) {
    std::lock_guard<std::mutex> lock(m);
    int n = 0;
    for (auto& l : all) n += l.find(needle) != std::string::npos;
    return n;
  }
};
}  // namespace

TEST(ProgressPrinter, HeartbeatWhileChecksRunAndQuietAfterALine) {
  Lines lines;
  {
    ProgressPrinter printer("reduce", 40, 0.2, lines.sink(), 0);
    MinifyProgress p;
    p.nodes = 12;
    p.queries = 7;
    p.timeouts = 2;
    p.unknown = 1;
    p.cache_hits = 30;
    p.in_flight = 2;
    p.strategy = "bypass";
    printer.line(p, false);  // not a success: only the heartbeat prints it
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    printer.done();
  }
  EXPECT_GE(lines.count("(still working)"), 3) << lines.all.size();
  EXPECT_LE(lines.count("(still working)"), 7) << "one line per period, not more";
  // 7 queries and 2 reruns after a timeout are 9 checks run.
  EXPECT_EQ(lines.count("9 checks run (2 timed out, 1 unknown),    30 from memory, 2 running"), lines.count("(still working)")) << lines.all[0];
  EXPECT_EQ(lines.count("left"), 0) << "no time-left estimate";
}

TEST(ProgressPrinter, SuccessLinesResetTheHeartbeat) {
  Lines lines;
  ProgressPrinter printer("minify", 10, 0.5, lines.sink(), 0);
  MinifyProgress p;
  p.nodes = 5;
  for (int i = 0; i < 8; ++i) {  // a success every 0.1 s: no heartbeat needed
    printer.line(p, true);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  printer.done();
  EXPECT_EQ(lines.count("(still working)"), 0);
  EXPECT_EQ(lines.count("[minify]"), 8);
}

// The engine reports the checks in flight before it waits for them.
TEST(ProgressPrinter, EngineSaysWhatIsInFlight) {
  int max_in_flight = 0, in_flight_at_judge = -1;
  MinifyProgress last;
  FakeOracle oracle([&](const Candidate& c) {
    in_flight_at_judge = last.in_flight;
    return has_op(c.graph, "n3");
  });
  MinifyCallbacks cb;
  cb.on_progress = [&](const MinifyProgress& p) {
    last = p;
    max_in_flight = std::max(max_in_flight, p.in_flight);
  };
  Candidate start;
  start.graph = unary_chain(8);
  reduce(start, strategy_table(), oracle, {}, cb);
  EXPECT_GE(max_in_flight, 1);
  EXPECT_GE(in_flight_at_judge, 1);
  EXPECT_EQ(last.in_flight, 0) << "nothing runs once the batch is answered";
}
