// Candidate keys and serialisation (the oracle workers receive candidates as JSON lines).
#include "reprokit/minifier/candidate.h"

#include "reprokit/ir/errors.h"
#include "reprokit/ir/graph_utils.h"
#include "reprokit/ir/json_format.h"

namespace reprokit {

uint64_t Candidate::key() const {
  uint64_t h = structural_hash(graph);
  // Names matter here: an input's name says which value it carries.
  for (int i = 0; i < graph.num_inputs(); ++i) {
    for (char c : graph.node(i).name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    auto it = fills.find(graph.node(i).name);
    h = (h ^ static_cast<uint64_t>(it == fills.end() ? 0 : static_cast<int>(it->second) + 1)) * 1099511628211ULL;
  }
  return h;
}

Candidate Candidate::with_graph(Graph g) const {
  Candidate r;
  r.graph = std::move(g);
  for (int i = 0; i < r.graph.num_inputs(); ++i)
    if (auto it = fills.find(r.graph.node(i).name); it != fills.end()) r.fills[it->first] = it->second;
  return r;
}

static const char* fill_name(InputFill f) { return f == InputFill::zeros ? "zeros" : f == InputFill::ones ? "ones" : "original"; }

nlohmann::json Candidate::to_json() const {
  nlohmann::json f = nlohmann::json::object();
  for (auto& [k, v] : fills)
    if (v != InputFill::original) f[k] = fill_name(v);
  return {{"graph", graph_to_json(graph)}, {"fills", f}};
}

Candidate Candidate::from_json(const nlohmann::json& j) {
  Candidate c;
  if (!j.is_object() || !j.contains("graph")) throw UserError("malformed candidate: no graph");
  c.graph = graph_from_json(j.at("graph"));
  if (j.contains("fills"))
    for (auto& [k, v] : j.at("fills").items()) {
      std::string s = v.get<std::string>();
      if (s != "zeros" && s != "ones" && s != "original") throw UserError("malformed candidate: unknown input fill '" + s + "'");
      c.fills[k] = s == "zeros" ? InputFill::zeros : s == "ones" ? InputFill::ones : InputFill::original;
    }
  return c;
}

}  // namespace reprokit
