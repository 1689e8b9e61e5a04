// report.json's shared part (see report_json.h).
#include "reprokit/minifier/report_json.h"

namespace reprokit {

using nlohmann::json;

json reduction_report(const MinifyResult& r, const Graph& original, double failure_rate, const std::string& twin_difference) {
  json per = json::object();
  for (auto& [name, st] : r.per_strategy)
    per[name] = {{"queries", st.queries}, {"successes", st.successes}, {"timeouts", st.timeouts}, {"unknown", st.unknown}};
  json hist = json::array();
  for (auto& h : r.history) hist.push_back({{"nodes", h.nodes}, {"queries", h.queries}, {"seconds", h.elapsed_s}, {"strategy", h.strategy}});
  return {{"original_ops", original.num_ops()},
          {"final_ops", r.best.graph.num_ops()},
          {"original_elements", input_elements(original)},
          {"final_elements", input_elements(r.best.graph)},
          {"twin", r.twin ? json{{"strategy", r.twin_strategy}, {"difference", twin_difference}} : json(nullptr)},
          {"queries", r.queries},
          {"cache_hits", r.cache_hits},
          {"timeouts", r.timeouts},
          {"unknown", r.unknown},
          {"reduce_seconds", r.seconds},
          {"failure_rate", failure_rate},
          {"per_strategy", per},
          {"history", hist}};
}

}  // namespace reprokit
