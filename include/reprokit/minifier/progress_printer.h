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
    std::string s = fmt::format("[{}] {:>6} -> {:<6} nodes, {:>9} elements | {:>5} queries, {:>5} cached | {:7.1f}s | ~{:.0f}s left | {}", tool_,
                                start_nodes_, p.nodes, p.elements, p.queries, p.cache_hits, p.elapsed_s, eta, p.strategy);
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
};

}  // namespace reprokit
