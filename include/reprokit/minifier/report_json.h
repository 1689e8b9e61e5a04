// The part of report.json that `reprokit minify` and `reprokit reduce` share: sizes before and
// after, the twin, query counts and times, per-strategy counts and the history of successes.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "reprokit/minifier/reducer.h"

namespace reprokit {

nlohmann::json reduction_report(const MinifyResult& r, const Graph& original, double failure_rate, const std::string& twin_difference);

}  // namespace reprokit
