// The one-line difference between a failing candidate and its passing twin, for BUG_REPORT.md
// and report.json.
#pragma once
#include <string>
#include <string_view>

#include "reprokit/minifier/candidate.h"

namespace reprokit {

// What a passing twin changed: "fails with pass X on, passes without it", "fails with
// %x: f32[4, 3] (dim 0 = 4), passes with f32[2, 3]", ...
// `words` name the two sides: minify says "fails"/"passes", reduce "interesting"/"not interesting".
struct DifferenceWords {
  std::string_view bad = "fails", good = "passes";
};
std::string describe_difference(const Candidate& failing, const Candidate& passing, const DifferenceWords& words = {});

}  // namespace reprokit
