// Query time limits (see query_limit.h).
#include "reprokit/minifier/query_limit.h"

#include <fmt/format.h>

#include <algorithm>

#include "reprokit/support/errors.h"

namespace reprokit {

namespace {
// The margin over the slowest cost seen: a busy machine is often 2-3x slower than a quiet one.
constexpr double kMargin = 3;
}  // namespace

double QueryLimit::for_candidate(const Candidate& c) const {
  if (hang_sought_) return floor_s_;
  return std::max(floor_s_, kMargin * seconds_per_op_ * std::max(1, c.graph.num_ops()));
}

std::string QueryLimit::describe(const std::string& hang_is) const {
  return hang_sought_ ? fmt::format("{:.0f}s ({})", floor_s_, hang_is) : fmt::format("at least {:.0f}s, growing with what candidates cost", floor_s_);
}

void QueryLimit::answered(const Candidate& c, double seconds) {
  seconds_per_op_ = std::max(seconds_per_op_, seconds / std::max(1, c.graph.num_ops()));
}

std::vector<Verdict> judge_within_limits(const std::vector<Candidate>& cands, QueryLimit& limit, const LimitedAttempt& attempt) {
  std::vector<double> limits;
  for (auto& c : cands) limits.push_back(limit.for_candidate(c));
  for (double l : limits) limit.note_given(l);
  std::vector<Verdict> out = attempt(cands, limits);
  std::vector<Candidate> again;
  std::vector<double> again_limits;
  std::vector<size_t> where;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].timeouts == 0) {
      limit.answered(cands[i], out[i].seconds);
    } else if (!limit.hang_sought()) {
      again.push_back(cands[i]);
      again_limits.push_back(2 * limits[i]);
      limit.note_given(again_limits.back());
      where.push_back(i);
    }
  }
  if (again.empty()) return out;
  std::vector<Verdict> retried = attempt(again, again_limits);
  for (size_t k = 0; k < where.size(); ++k) {
    Verdict& v = out[where[k]];
    const int earlier = v.timeouts;
    v = retried[k];
    v.timeouts += earlier;
    if (retried[k].timeouts == 0) {
      limit.answered(again[k], v.seconds);
    } else {
      v.unknown = true;
      v.interesting = false;
    }
  }
  return out;
}

std::vector<Verdict> in_slices(int jobs, const std::vector<Candidate>& cands, const std::vector<double>& limits, const SideBySide& side_by_side) {
  if (jobs < 1 || jobs > kMaxJobs) throw InternalError(fmt::format("in_slices: {} jobs", jobs));  // the flag's reader checks it
  const size_t per_slice = static_cast<size_t>(jobs);
  std::vector<Verdict> out;
  for (size_t start = 0; start < cands.size(); start += per_slice) {
    const size_t n = std::min(cands.size() - start, per_slice);
    for (auto& v : side_by_side(std::span(cands).subspan(start, n), std::span(limits).subspan(start, n))) out.push_back(std::move(v));
  }
  return out;
}

}  // namespace reprokit
