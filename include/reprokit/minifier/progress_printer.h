// The live progress line of `reprokit minify` and `reprokit reduce`: rewritten in place on a
// terminal; otherwise one line per success, and a heartbeat line whenever nothing was printed for
// `heartbeat_s` (10 s), so a log never falls silent while slow checks run.
//
// The counters add up: "checks run" are runs of the oracle (a rerun after a timeout is one more),
// "from memory" are candidates met again and answered without a run, "running" are the checks in
// flight now. No time-left estimate: the work left depends on which strategies will still find
// something, which is not known in advance, and a number that stays at ~40 s for ten minutes
// misleads more than none.
#pragma once
#include <fmt/core.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "reprokit/minifier/reducer.h"

namespace reprokit {

class ProgressPrinter {
 public:
  // `sink` receives whole lines (stderr by default); `tty` rewrites one line in place instead.
  ProgressPrinter(std::string tool, int start_nodes, double heartbeat_s = 10, std::function<void(std::string_view)> sink = {}, int tty = -1)
      : tool_(std::move(tool)),
        start_nodes_(start_nodes),
        tty_(tty < 0 ? isatty(2) != 0 : tty != 0),
        heartbeat_s_(heartbeat_s),
        sink_(sink ? std::move(sink) : [](std::string_view s) { fmt::print(stderr, "{}", s); }),
        started_(std::chrono::steady_clock::now()),
        last_print_(started_) {
    if (!tty_ && heartbeat_s_ > 0) heartbeat_ = std::thread([this] { beat(); });
  }
  ProgressPrinter(const ProgressPrinter&) = delete;
  ProgressPrinter& operator=(const ProgressPrinter&) = delete;
  ~ProgressPrinter() { done(); }

  void line(const MinifyProgress& p, bool success) {
    std::lock_guard<std::mutex> lock(m_);
    last_ = p;
    have_ = true;
    // The first time a query runs out of time, say so on a line of its own (not only in place).
    if (p.timeouts && !warned_) {
      warned_ = true;
      emit(
          fmt::format("{}[{}] a query ran past its time limit: it is asked again with twice the limit; one that runs out again is unknown "
                      "(not an answer, kept out of the repro)\n",
                      tty_ ? "\n" : "", tool_));
    }
    if (tty_) emit(fmt::format("\r{:<140}", format(p, p.elapsed_s)));
    else if (success) emit(format(p, p.elapsed_s) + "\n");
  }

  void done() {
    {
      std::lock_guard<std::mutex> lock(m_);
      if (stopped_) return;
      stopped_ = true;
    }
    cv_.notify_all();
    if (heartbeat_.joinable()) heartbeat_.join();
    if (tty_) sink_("\n");
  }

  std::string format(const MinifyProgress& p, double elapsed_s) const {
    std::string limits = p.timeouts ? fmt::format(" ({} timed out, {} unknown)", p.timeouts, p.unknown) : "";
    return fmt::format("[{}] {:>6} -> {:<6} nodes, {:>9} elements | {:>5} checks run{}, {:>5} from memory, {} running | {:7.1f}s | {}", tool_,
                       start_nodes_, p.nodes, p.elements, p.queries + p.timeouts, limits, p.cache_hits, p.in_flight, elapsed_s, p.strategy);
  }

 private:
  void emit(const std::string& s) {  // under m_
    sink_(s);
    last_print_ = std::chrono::steady_clock::now();
  }
  void beat() {
    std::unique_lock<std::mutex> lock(m_);
    const auto period = std::chrono::duration<double>(heartbeat_s_);
    while (!stopped_) {
      auto due = last_print_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(period);
      if (cv_.wait_until(lock, due, [this] { return stopped_; })) break;
      if (std::chrono::steady_clock::now() < last_print_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(period)) continue;
      double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
      MinifyProgress p = have_ ? last_ : MinifyProgress{};
      if (!have_) p.nodes = start_nodes_;
      emit(format(p, elapsed) + " (still working)\n");
    }
  }

  std::string tool_;
  int start_nodes_;
  bool tty_;
  double heartbeat_s_;
  std::function<void(std::string_view)> sink_;
  std::chrono::steady_clock::time_point started_, last_print_;
  std::mutex m_;
  std::condition_variable cv_;
  MinifyProgress last_;
  bool have_ = false, warned_ = false, stopped_ = false;
  std::thread heartbeat_;
};

// After a reduction: what the time limits cost, when they cost anything (stderr).
inline void report_time_limits(const std::string& tool, const MinifyResult& r, double largest_limit_s) {
  if (r.timeouts == 0) return;
  fmt::print(stderr, "[{}] {} quer{} ran past the time limit and {} asked again with twice the limit\n", tool, r.timeouts,
             r.timeouts == 1 ? "y" : "ies", r.timeouts == 1 ? "was" : "were");
  if (r.unknown)
    fmt::print(stderr,
               "[{}] WARNING: {} candidate{} could not be judged within {:.0f}s (unknown): they were kept out, so the repro may be larger than it "
               "could be; a larger --timeout lets them be judged\n",
               tool, r.unknown, r.unknown == 1 ? "" : "s", largest_limit_s);
}

}  // namespace reprokit
