// Candidate keys and serialisation (the oracle workers receive candidates as JSON lines).
#include "reprokit/minifier/candidate.h"

#include <fmt/format.h>

#include "reprokit/support/errors.h"
#include "reprokit/ir/graph_utils.h"
#include "reprokit/ir/json_format.h"
#include "reprokit/ir/names.h"

namespace reprokit {

namespace {

constexpr std::pair<InputFill, std::string_view> kFills[] = {
    {InputFill::original, "original"}, {InputFill::zeros, "zeros"}, {InputFill::ones, "ones"}, {InputFill::integers, "integers"}};

uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 1099511628211ULL; }
uint64_t mix_str(uint64_t h, std::string_view s) {
  for (char c : s) h = mix(h, static_cast<unsigned char>(c));
  return mix(h, 0xff);
}

std::vector<int64_t> int_list(const nlohmann::json& j, const char* what) {
  std::vector<int64_t> out;
  if (!j.is_array()) throw UserError(fmt::format("malformed candidate: {} must be a list", what));
  for (auto& v : j) {
    if (!v.is_number_integer()) throw UserError(fmt::format("malformed candidate: {} must hold integers", what));
    out.push_back(v.get<int64_t>());
  }
  return out;
}

}  // namespace

std::string_view fill_name(InputFill f) {
  for (auto& [k, n] : kFills)
    if (k == f) return n;
  return "?";
}

const InputEdit& Candidate::edit(const std::string& input) const {
  static const InputEdit identity;
  auto it = edits.find(input);
  return it == edits.end() ? identity : it->second;
}

uint64_t Candidate::key(bool every_name) const {
  uint64_t h = structural_hash(graph);
  if (every_name)
    for (const Node& n : graph.nodes) h = mix(mix_str(h, n.name), 0xfc);
  // Names matter here: an input's name says which value it carries.
  for (int i = 0; i < graph.num_inputs(); ++i) {
    const std::string& name = graph.node(i).name;
    h = mix_str(h, name);
    const InputEdit& e = edit(name);
    h = mix(h, static_cast<uint64_t>(e.fill));
    for (auto s : e.start) h = mix(h, static_cast<uint64_t>(s));
    h = mix(h, 0xfe);
    for (auto z : e.zeroed) h = mix(h, static_cast<uint64_t>(z));
    h = mix(h, 0xfd);
  }
  for (auto& p : disabled_passes) h = mix_str(h, p);
  for (auto& [p, n] : pass_limits) h = mix(mix_str(h, p), static_cast<uint64_t>(n));
  return h;
}

Candidate Candidate::with_graph(Graph g) const {
  Candidate r;
  r.graph = std::move(g);
  r.disabled_passes = disabled_passes;
  r.pass_limits = pass_limits;
  for (int i = 0; i < r.graph.num_inputs(); ++i)
    if (auto it = edits.find(r.graph.node(i).name); it != edits.end()) r.edits[it->first] = it->second;
  return r;
}

nlohmann::json Candidate::to_json() const {
  nlohmann::json e = nlohmann::json::object();
  for (auto& [k, v] : edits) {
    if (v.is_identity()) continue;
    nlohmann::json x = {{"fill", std::string(fill_name(v.fill))}};
    if (!v.start.empty()) x["start"] = v.start;
    if (!v.zeroed.empty()) x["zeroed"] = v.zeroed;
    e[k] = x;
  }
  nlohmann::json j = {{"graph", graph_to_json(graph)}, {"edits", e}};
  if (!disabled_passes.empty()) j["disabled_passes"] = disabled_passes;
  if (!pass_limits.empty()) j["pass_limits"] = pass_limits;
  return j;
}

Candidate Candidate::from_json(const nlohmann::json& j, const CompilerPasses& passes) {
  Candidate c;
  if (!j.is_object() || !j.contains("graph")) throw UserError("malformed candidate: no graph");
  c.graph = graph_from_json(j.at("graph"));
  if (j.contains("edits")) {
    if (!j.at("edits").is_object()) throw UserError("malformed candidate: edits must be an object");
    for (auto& [k, v] : j.at("edits").items()) {
      check_name(k, "input", "candidate");
      if (!v.is_object() || !v.contains("fill") || !v.at("fill").is_string()) throw UserError("malformed candidate: an edit needs a fill");
      InputEdit e;
      std::string f = v.at("fill").get<std::string>();
      bool known = false;
      for (auto& [kind, name] : kFills)
        if (name == f) e.fill = kind, known = true;
      if (!known) throw UserError("malformed candidate: unknown input fill '" + printable(f) + "'");
      if (v.contains("start")) e.start = int_list(v.at("start"), "start");
      if (v.contains("zeroed")) e.zeroed = int_list(v.at("zeroed"), "zeroed");
      c.edits[k] = e;
    }
  }
  auto check_pass = [&](const std::string& p) {
    if (!passes.known(p)) throw UserError("malformed candidate: unknown pass '" + printable(p) + "'");
  };
  if (j.contains("disabled_passes")) {
    c.disabled_passes = j.at("disabled_passes").get<std::set<std::string>>();
    for (auto& p : c.disabled_passes) check_pass(p);
  }
  if (j.contains("pass_limits")) {
    try {
      c.pass_limits = passes.limits_from_json(j.at("pass_limits"));
    } catch (const UserError& e) { throw UserError(std::string("malformed candidate: ") + e.what()); }
    for (auto& [p, n] : c.pass_limits) check_pass(p);
  }
  return c;
}

int64_t input_elements(const Graph& g) {
  int64_t n = 0;
  for (int i = 0; i < g.num_inputs(); ++i) n += g.node(i).type.numel();
  return n;
}

Candidate read_best_candidate(const Dir& dir, const CompilerPasses& passes) {
  const std::string path = dir.path("state.json");
  try {
    nlohmann::json j = nlohmann::json::parse(dir.read("state.json", kMaxTextFileBytes));
    if (!j.is_object() || !j.contains("best")) throw UserError("no \"best\" candidate in it");
    return Candidate::from_json(j.at("best"), passes);
  } catch (const nlohmann::json::exception& e) { throw UserError(fmt::format("{}: malformed: {}", path, e.what())); } catch (const UserError& e) {
    if (std::string_view(e.what()).substr(0, path.size()) == path) throw;
    throw UserError(fmt::format("{}: {}", path, e.what()));
  }
}

}  // namespace reprokit
