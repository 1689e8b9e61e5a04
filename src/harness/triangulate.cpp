// reprokit analyze --triangulate (see analyze.h): the cpp and cuda backends against float64 on the
// bundle's inputs, node by node, so that a divergence is pinned on one backend, the other or both.
#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <optional>

#include "node_accuracy.h"
#include "reprokit/codegen/backend.h"
#include "reprokit/codegen/compiled_graph.h"
#include "reprokit/harness/analyze.h"
#include "reprokit/harness/bundle.h"
#include "reprokit/support/errors.h"
#include "reprokit/support/files.h"

namespace reprokit {

using nlohmann::json;

namespace {

// One backend's side of the comparison.
struct Side {
  std::string backend;
  CompileOptions options;
  std::string fails;  // why it does not compile or run; "" when it ran
  CapturedRun run;
  std::map<int, NodeVerdict> verdicts;  // by node id
  int first_divergence = -1;
};

// Which backends a node or output is wrong on: "neither", "cpp", "cuda" or "both".
std::string wrong_on(bool cpp_wrong, bool cuda_wrong) {
  static const char* kWho[2][2] = {{"neither", "cuda"}, {"cpp", "both"}};
  return kWho[cpp_wrong][cuda_wrong];
}

// The bundle's backend runs as recorded, in a child first (a crash or hang there must not take
// this process down). The other backend is the second opinion: a fault planted with --inject is
// planted in the bundle's backend only, as a real bug lives in one backend.
Side prepare_side(const Bundle& b, const std::string& backend) {
  Side s;
  s.backend = backend;
  s.options = b.spec.options.compile;
  s.options.backend = backend;
  if (backend != b.spec.options.compile.backend) {
    s.options.injections.clear();
    return s;
  }
  s.fails = does_not_run(b, backend, "the " + backend + " backend");
  return s;
}

std::string cell(const Side& s, int id) {
  if (!s.fails.empty()) return "does not run";
  const NodeVerdict& v = s.verdicts.at(id);
  return fmt::format("{:.3g} {}", v.errors.max_abs, !v.passes() ? "DIVERGES (" + v.origin + ")" : v.decided_at_kink.empty() ? "ok" : "ok (kink)");
}

bool wrong(const Side& s, int id) { return !s.fails.empty() || !s.verdicts.at(id).passes(); }

}  // namespace

int triangulate_bundle(const AnalyzeOptions& o) {
  Bundle b = load_bundle(o.bundle_dir);
  const Graph& g = b.graph;
  fmt::print("triangulate: graph {} ({} ops), stage {}, recorded on backend {}: cpp and cuda against float64 on the bundle's inputs\n", g.name,
             g.num_ops(), b.spec.stage, b.spec.options.compile.backend);
  // The two backends that share reprokit's lowering and passes (cpp and cuda): their kernel
  // boundaries, and so the nodes each captures, agree.
  std::vector<Side> sides;
  for (const Backend& be : backend_table())
    if (be.runs_passes) sides.push_back(prepare_side(b, std::string(be.name)));
  if (sides.size() != 2) throw UserError("triangulate compares two backends that run reprokit's passes");

  // The same nodes on both sides: both backends share the lowering, so their kernel boundaries agree.
  const std::vector<int> captured = captured_nodes(g, sides[0].options, o.per_node);
  const Reference ref = reference_for(b, captured);
  for (Side& s : sides) {
    if (s.fails.empty()) {
      try {
        s.run = run_captured(b, s.options, captured);
        for (NodeVerdict& v : judge_nodes(b, s.options, captured, s.run, ref)) s.verdicts[v.id] = std::move(v);
      } catch (const CompileFailure& e) {
        s.fails = fmt::format("{}: {}", failure_kind_name(e.kind), std::string(e.what()).substr(0, std::string(e.what()).find('\n')));
      }
    }
    if (!s.fails.empty()) fmt::print("{}: does not run ({})\n", s.backend, s.fails);
    else if (!s.run.deterministic) fmt::print("{}: WARNING: two runs differ: the compiled graph is non-deterministic\n", s.backend);
  }
  const Side &cpp = sides[0], &cuda = sides[1];
  fmt::print("captured: {} of {} nodes ({}); rule: {}\n\n", captured.size(), g.num_ops(),
             o.per_node ? "every node; fusion is disturbed" : "kernel boundaries; fusion undisturbed",
             ref.tolerance ? fmt::format("fixed tolerance {}", *ref.tolerance) : "auto (noise floor)");

  // Node by node: each side's largest error against float64 and verdict, and how far the two
  // backends are from each other (triangulate.json has rmse, relative and ulp errors too).
  fmt::print("{:<24} {:<10} {:<26} {:<26} {:>12}  {}\n", "node", "op", "cpp (max_abs, verdict)", "cuda (max_abs, verdict)", "|cpp - cuda|",
             "wrong on");
  json nodes = json::array();
  for (size_t k = 0; k < captured.size(); ++k) {
    const int id = captured[k];
    const Node& n = g.node(id);
    std::optional<double> apart;
    if (cpp.fails.empty() && cuda.fails.empty()) apart = errors(cpp.run.values[k], cuda.run.values[k], n.type.dtype).max_abs;
    const std::string who = wrong_on(wrong(cpp, id), wrong(cuda, id));
    fmt::print("%{:<23} {:<10} {:<26} {:<26} {:>12}  {}\n", n.name, op_name(n.op), cell(cpp, id), cell(cuda, id),
               apart ? fmt::format("{:.3g}", *apart) : "-", who == "neither" ? "" : who);
    json row = {
        {"node", n.name}, {"op", std::string(op_name(n.op))}, {"wrong_on", who}, {"cpp_vs_cuda_max_abs", apart ? json(*apart) : json(nullptr)}};
    for (const Side* s : {&cpp, &cuda}) {
      if (!s->fails.empty()) continue;
      const NodeVerdict& v = s->verdicts.at(id);
      row[s->backend] = {{"rmse", v.errors.rmse},
                         {"max_abs", v.errors.max_abs},
                         {"max_rel", v.errors.max_rel},
                         {"max_ulp", v.errors.max_ulp},
                         {"passes", v.passes()},
                         {"origin", v.origin.empty() ? json(nullptr) : json(v.origin)},
                         {"why", v.why}};
    }
    nodes.push_back(row);
  }
  for (Side& s : sides)
    for (int id : captured)
      if (s.fails.empty() && !s.verdicts.at(id).passes()) {
        s.first_divergence = id;
        break;
      }

  // Output by output, then the verdict.
  fmt::print("\n");
  json outputs = json::array();
  bool any_wrong = !cpp.fails.empty() || !cuda.fails.empty();
  for (int id : g.outputs) {
    if (std::find(captured.begin(), captured.end(), id) == captured.end()) continue;  // an input handed back
    const std::string who = wrong_on(wrong(cpp, id), wrong(cuda, id));
    any_wrong |= who != "neither";
    fmt::print("output %{}: {}\n", g.node(id).name,
               who == "neither" ? "cpp and cuda both agree with float64" : fmt::format("wrong on {}", who == "both" ? "both backends" : who));
    outputs.push_back({{"output", g.node(id).name}, {"wrong_on", who}});
  }
  json first = json::object();
  for (const Side& s : sides) {
    json f = s.first_divergence >= 0 ? json(g.node(s.first_divergence).name) : json(nullptr);
    first[s.backend] = f;
    if (!s.fails.empty()) fmt::print("{}: does not run, so it is not compared\n", s.backend);
    else if (s.first_divergence >= 0)
      fmt::print("{}: first divergence %{} = {} ({} error)\n", s.backend, g.node(s.first_divergence).name, op_name(g.node(s.first_divergence).op),
                 s.verdicts.at(s.first_divergence).origin);
    else fmt::print("{}: no node diverges\n", s.backend);
  }
  json backends = json::object();
  for (const Side& s : sides)
    backends[s.backend] = {{"runs", s.fails.empty()},
                           {"fails", s.fails.empty() ? json(nullptr) : json(s.fails)},
                           {"deterministic", s.fails.empty() ? json(s.run.deterministic) : json(nullptr)},
                           {"injected", s.options.injections.size()}};
  json out = {{"graph", g.name},
              {"stage", b.spec.stage},
              {"recorded_backend", b.spec.options.compile.backend},
              {"per_node", o.per_node},
              {"rule", ref.tolerance ? fmt::format("fixed tolerance {}", *ref.tolerance) : "auto (noise floor)"},
              {"backends", backends},
              {"outputs", outputs},
              {"nodes", nodes},
              {"first_divergence", first}};
  Dir d = Dir::open(o.bundle_dir);
  std::string name = write_unique(d, "triangulate", "json", out.dump(2) + "\n");
  fmt::print("wrote {}\n", d.path(name));
  return any_wrong ? 1 : 0;
}

}  // namespace reprokit
