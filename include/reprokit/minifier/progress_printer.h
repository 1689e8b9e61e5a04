// The live progress line of `reprokit minify` and `reprokit reduce`: rewritten in place on a
// terminal, one line per success otherwise (logs stay short).
#pragma once
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "reprokit/minifier/reducer.h"

namespace reprokit {

class ProgressPrinter {
 public:
  ProgressPrinter(std::string tool, int start_nodes) : tool_(std::move(tool)), start_nodes_(start_nodes), tty_(isatty(2)) {}
  void line(const MinifyProgress& p, bool success) {
    // Remaining work: about two binary searches over what is left, at the mean query time so far.
    double per_query = p.queries ? p.elapsed_s / p.queries : 0;
    double eta = per_query * (2 * std::log2(std::max(2, p.nodes)) + 10);
    std::string limits = p.timeouts ? fmt::format(" | {} timed out, {} unknown", p.timeouts, p.unknown) : "";
    std::string s = fmt::format("[{}] {:>6} -> {:<6} nodes, {:>9} elements | {:>5} queries, {:>5} cached{} | {:7.1f}s | ~{:.0f}s left | {}", tool_,
                                start_nodes_, p.nodes, p.elements, p.queries, p.cache_hits, limits, p.elapsed_s, eta, p.strategy);
    // The first time a query runs out of time, say so on a line of its own (not only in place).
    if (p.timeouts && !warned_) {
      warned_ = true;
      fmt::print(stderr, "{}[{}] a query ran past its time limit: it is asked again with twice the limit; one that runs out again is unknown "
                 "(not an answer, kept out of the repro)\n", tty_ ? "\n" : "", tool_);
    }
    if (tty_) fmt::print(stderr, "\r{:<130}", s);
    else if (success) fmt::print(stderr, "{}\n", s);
  }
  void done() {
    if (tty_) fmt::print(stderr, "\n");
  }

 private:
  std::string tool_;
  int start_nodes_;
  bool tty_;
  bool warned_ = false;
};

// After a reduction: what the time limits cost, when they cost anything (stderr).
inline void report_time_limits(const std::string& tool, const MinifyResult& r, double largest_limit_s) {
  if (r.timeouts == 0) return;
  fmt::print(stderr, "[{}] {} quer{} ran past the time limit and {} asked again with twice the limit\n", tool, r.timeouts, r.timeouts == 1 ? "y" : "ies",
             r.timeouts == 1 ? "was" : "were");
  if (r.unknown)
    fmt::print(stderr,
               "[{}] WARNING: {} candidate{} could not be judged within {:.0f}s (unknown): they were kept out, so the repro may be larger than it "
               "could be; a larger --timeout lets them be judged\n",
               tool, r.unknown, r.unknown == 1 ? "" : "s", largest_limit_s);
}

}  // namespace reprokit
