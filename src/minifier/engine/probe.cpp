// Probing the original before a reduction (see probe.h).
#include "reprokit/minifier/probe.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace reprokit {

int ProbeResult::attempts_per_candidate() const {
  if (fails == 0 || fails == runs) return 1;
  double cautious = static_cast<double>(fails) / (runs + 4);
  return std::min(12, static_cast<int>(std::ceil(std::log(0.001) / std::log(1 - cautious))));
}

ProbeResult probe_original(const ProbeOptions& o, const std::function<Verdict()>& run_once) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const int runs = std::max(1, o.runs);
  int min_runs = std::min(runs, std::max(1, o.min_runs));
  ProbeResult r;
  // After min_runs, another run only where it would end within the budget (as the slowest did).
  auto measuring = [&](int i) {
    return i < min_runs || (i < runs && std::chrono::duration<double>(Clock::now() - start).count() + r.slowest_s < o.budget_s);
  };
  for (int i = 0; i < std::max(runs, o.look_until) && (measuring(i) || r.fails == 0); ++i) {
    auto q0 = Clock::now();
    Verdict v = run_once();
    r.slowest_s = std::max(r.slowest_s, std::chrono::duration<double>(Clock::now() - q0).count());
    ++r.runs;
    if (v.interesting) ++r.fails;
    if (r.slowest_s * min_runs > o.budget_s) min_runs = std::min(min_runs, std::max(1, o.min_runs_when_slow));
  }
  return r;
}

}  // namespace reprokit
