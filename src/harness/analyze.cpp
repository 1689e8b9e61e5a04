// reprokit analyze (see analyze.h).
#include "reprokit/harness/analyze.h"

#include "node_accuracy.h"
#include "reprokit/support/files.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "reprokit/codegen/compiler.h"
#include "reprokit/harness/accuracy.h"
#include "reprokit/harness/noise_floor.h"
#include "reprokit/harness/bundle.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/graph_utils.h"
#include "reprokit/runtime/interpreter.h"

namespace reprokit {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string svg_plot(const std::vector<std::string>& names, const std::vector<double>& compiled, const std::vector<double>& eager) {
  const int w = 900, h = 360, left = 60, bottom = 300;
  double lo = -12, hi = 2;
  auto y = [&](double v) { return bottom - (std::clamp(std::log10(std::max(v, 1e-12)), lo, hi) - lo) / (hi - lo) * 260; };
  auto x = [&](size_t i) { return left + (names.size() > 1 ? static_cast<double>(i) * (w - left - 20) / static_cast<double>(names.size() - 1) : 0); };
  std::string s = fmt::format("<svg xmlns='http://www.w3.org/2000/svg' width='{}' height='{}' font-family='sans-serif' font-size='11'>\n", w, h);
  s += fmt::format("<text x='{}' y='16' font-size='13'>RMSE against float64 along the topological order (log scale)</text>\n", left);
  for (int p = -12; p <= 2; p += 2)
    s += fmt::format("<line x1='{}' x2='{}' y1='{:.1f}' y2='{:.1f}' stroke='#ddd'/><text x='8' y='{:.1f}'>1e{}</text>\n", left, w - 20,
                     y(std::pow(10, p)), y(std::pow(10, p)), y(std::pow(10, p)) + 4, p);
  auto poly = [&](const std::vector<double>& v, const char* color, const char* label, int ly) {
    std::string pts;
    for (size_t i = 0; i < v.size(); ++i) pts += fmt::format("{:.1f},{:.1f} ", x(i), y(v[i]));
    return fmt::format("<polyline fill='none' stroke='{}' stroke-width='2' points='{}'/><text x='{}' y='{}' fill='{}'>{}</text>\n", color, pts,
                       w - 160, ly, color, label);
  };
  s += poly(compiled, "#d62728", "compiled", 40) + poly(eager, "#1f77b4", "eager", 56);
  for (size_t i = 0; i < names.size(); ++i)
    s += fmt::format("<text transform='translate({:.1f},{}) rotate(60)' fill='#555'>%{}</text>\n", x(i), bottom + 8, names[i]);
  return s + "</svg>\n";
}

// The floor of each graph output, and the nodes whose relative noise grows most over their
// operands' (the amplifiers: cancellation, normalisation over few elements, ill-conditioned ops).
void print_noise_floor(const Graph& g, const std::vector<int>& captured, const NoiseFloor& floor, const std::vector<Tensor>& ref) {
  std::map<int, size_t> slot;
  for (size_t k = 0; k < captured.size(); ++k) slot[captured[k]] = k;
  auto relative = [&](int id) -> std::optional<double> {
    auto it = slot.find(id);
    if (it == slot.end() || !is_floating(g.node(id).type.dtype)) return std::nullopt;
    double scale = deviation(ref[it->second].to_doubles(), std::vector<double>(static_cast<size_t>(ref[it->second].numel()), 0.0)).rms;
    return scale > 0 ? floor.outputs[it->second].rms / scale : 0.0;
  };
  fmt::print("\nnoise floor (auto rule: error against float64 within {} x (1 + 2/sqrt(elements)) x the floor + {} ulps; variants: {}):\n",
             kFloorFactor, kUlpSlack, fmt::join(floor.variants, ", "));
  int shown = 0, outputs = 0;
  for (int id : g.outputs) {
    auto it = slot.find(id);
    if (it == slot.end() || !is_floating(g.node(id).type.dtype)) continue;
    if (++outputs > 10) continue;  // analyze.json has every node's floor
    ++shown;
    const OutputNoise& o = floor.outputs[it->second];
    fmt::print("  output %{:<24} rms {:.3g} ({}), largest {:.3g} ({}), relative {:.3g}\n", g.node(id).name, o.rms, o.rms_from, o.max, o.max_from,
               relative(id).value_or(0));
  }
  if (outputs > shown) fmt::print("  ... and {} more outputs (analyze.json has the floor of every captured node)\n", outputs - shown);
  std::vector<std::pair<double, int>> gain;
  for (int id : captured) {
    auto mine = relative(id);
    if (!mine) continue;
    double in = 0;
    bool known = false;
    for (auto& op : g.node(id).operands)
      if (op.is_value())
        if (auto r = relative(op.value); r || g.node(op.value).is_input()) in = std::max(in, r.value_or(0)), known = true;
    if (known) gain.push_back({*mine / std::max(in, 1e-8), id});
  }
  std::sort(gain.rbegin(), gain.rend());
  if (gain.empty()) return;
  fmt::print("  amplifiers (relative noise over the operands'):");
  for (size_t k = 0; k < gain.size() && k < 5; ++k)
    fmt::print("{} %{} ({}) x{:.3g}", k ? "," : "", g.node(gain[k].second).name, op_name(g.node(gain[k].second).op), gain[k].first);
  fmt::print("\n");
}

// The nodes marked "ok (kink)": within their floor only because a relu input or a comparison near
// its threshold may go either way. The first such node explains the rest downstream of it.
void print_kink_notes(const std::vector<NodeVerdict>& verdicts) {
  constexpr size_t kShown = 3;
  size_t kinks = 0;
  for (const NodeVerdict& v : verdicts) {
    if (v.decided_at_kink.empty()) continue;
    if (kinks++ < kShown) fmt::print("note: {}\n", v.decided_at_kink);
  }
  if (kinks > kShown) fmt::print("note: ... and {} more nodes marked 'ok (kink)' (analyze.json has each one's line)\n", kinks - kShown);
}

}  // namespace

int analyze_bundle(const AnalyzeOptions& o) {
  Bundle b = load_bundle(o.bundle_dir);
  const Graph& g = b.graph;
  CompileOptions copts = b.spec.options.compile;
  fmt::print("analyze: graph {} ({} ops), stage {}, backend {}\n", g.name, g.num_ops(), b.spec.stage, copts.backend);

  // analyze runs the compiled graph in this process, so first make sure it runs at all: a graph
  // that crashes or hangs is probed in a child (bisect's step, with the bundle's own settings).
  if (std::string why = does_not_run(b, copts.backend, "the compiled graph"); !why.empty()) {
    fmt::print(
        "analyze: the compiled graph does not run ({}); analyze compares numbers and needs a graph that runs.\n"
        "analyze: use `reprokit minify` or `reprokit bisect` on this bundle.\n",
        why);
    return 1;
  }

  const std::vector<int> captured = captured_nodes(g, copts, o.per_node);
  // Determinism first: two runs of the compiled graph must agree bit for bit.
  CapturedRun run;
  try {
    run = run_captured(b, copts, captured);
  } catch (const CompileFailure& e) { throw UserError(std::string("analyze needs a graph that compiles and runs; this one fails: ") + e.what()); }
  fmt::print("determinism: {}\n",
             run.deterministic ? "two runs agree bit for bit" : "WARNING: two runs differ: the compiled graph is non-deterministic");
  fmt::print("captured: {} of {} nodes ({})\n", captured.size(), g.num_ops(),
             o.per_node ? "every node; fusion is disturbed" : "kernel boundaries; fusion undisturbed");

  const Reference ref = reference_for(b, captured);
  const bool fixed = ref.tolerance.has_value();
  if (!fixed) {
    std::vector<Tensor> captured_f64;
    for (int id : captured) captured_f64.push_back(ref.f64[static_cast<size_t>(id)]);
    print_noise_floor(g, captured, ref.floor, captured_f64);
  }

  json rows = json::array();
  std::vector<std::string> names;
  std::vector<double> crmse, ermse;
  int first_bad = -1;
  fmt::print("\n{:<24} {:<8} {:>10} {:>10} {:>10} {:>9} {:>10}  {}\n", "node", "op", "rmse", "max_abs", "max_rel", "max_ulp", "eager_rmse",
             "verdict");
  const std::vector<NodeVerdict> verdicts = judge_nodes(b, copts, captured, run, ref);
  for (size_t k = 0; k < verdicts.size(); ++k) {
    const NodeVerdict& v = verdicts[k];
    const Node& n = g.node(v.id);
    const Errors &ce = v.errors, &ee = v.eager_errors;
    std::string verdict = !v.passes() ? "DIVERGES (" + v.origin + ")" : v.decided_at_kink.empty() ? "ok" : "ok (kink)";
    if (!v.passes() && first_bad < 0) first_bad = v.id;
    fmt::print("%{:<23} {:<8} {:>10.3g} {:>10.3g} {:>10.3g} {:>9.3g} {:>10.3g}  {}\n", n.name, op_name(n.op), ce.rmse, ce.max_abs, ce.max_rel,
               ce.max_ulp, ee.rmse, verdict);
    rows.push_back({{"node", n.name},
                    {"op", std::string(op_name(n.op))},
                    {"rmse", ce.rmse},
                    {"max_abs", ce.max_abs},
                    {"max_rel", ce.max_rel},
                    {"max_ulp", ce.max_ulp},
                    {"eager_rmse", ee.rmse},
                    {"noise_floor_rms", fixed ? json(nullptr) : json(ref.floor.outputs[k].rms)},
                    {"noise_floor_max", fixed ? json(nullptr) : json(ref.floor.outputs[k].max)},
                    {"passes", v.passes()},
                    {"origin", v.origin.empty() ? json(nullptr) : json(v.origin)},
                    {"why", v.why},
                    {"decided_at_kink", v.decided_at_kink.empty() ? json(nullptr) : json(v.decided_at_kink)}});
    names.push_back(n.name);
    crmse.push_back(ce.rmse);
    ermse.push_back(ee.rmse);
  }
  print_kink_notes(verdicts);
  if (first_bad >= 0)
    fmt::print("\nfirst divergence: %{} = {} (its own error; later divergences marked 'inherited' come from it)\n", g.node(first_bad).name,
               op_name(g.node(first_bad).op));
  else fmt::print("\nno node diverges\n");
  json out = {{"graph", g.name},
              {"deterministic", run.deterministic},
              {"per_node", o.per_node},
              {"nodes", rows},
              {"rule", fixed ? fmt::format("fixed tolerance {}", *b.spec.tolerance) : "auto (noise floor)"},
              {"first_divergence", first_bad >= 0 ? json(g.node(first_bad).name) : json(nullptr)}};
  // Never overwrite an earlier analysis: analyze.json, else analyze-2.json, ...; the plot takes
  // the same stem.
  Dir d = Dir::open(o.bundle_dir);
  std::string json_name = write_unique(d, "analyze", "json", out.dump(2) + "\n");
  std::string svg_name = json_name.substr(0, json_name.size() - 4) + "svg";
  d.write(svg_name, svg_plot(names, crmse, ermse));
  fmt::print("wrote {} and {}\n", d.path(json_name), d.path(svg_name));
  return first_bad >= 0 ? 1 : 0;
}

}  // namespace reprokit
