// The input values of a candidate: the original run's values (inputs, and cut points' values by
// node name), windowed to the candidate's declared shapes, with its edits applied. Both front ends
// build them from a bundle (`reduce` from one made in memory).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "reprokit/harness/bundle.h"
#include "reprokit/minifier/candidate.h"

namespace reprokit {

// The values cut points carry: each node's value in the original run (reference interpreter,
// original precision), computed on first use and only as far back as needed.
class KnownValues {
 public:
  explicit KnownValues(const Bundle& b);
  const Tensor& of(int node_id);

 private:
  const Bundle& b_;
  std::vector<std::optional<Tensor>> values_;
};

// The inputs of a candidate: original inputs and cut-point values (by node name), windowed to
// the declared shapes, with the candidate's edits. UserError when they do not fit.
std::vector<Tensor> candidate_inputs(const Candidate& c, const Bundle& b, KnownValues& known);
// Why an input-value edit of c (zeros, ones, integers, zeroed elements) is not allowed: it makes
// some value NaN or infinite in float64 where c on its unedited values keeps it finite (a 0 into
// reciprocal, log or rsqrt); nullopt when c has no value edit or the edit stays in every op's domain.
std::optional<std::string> value_edit_leaves_domain(const Candidate& c, const Bundle& b, KnownValues& known);

}  // namespace reprokit
