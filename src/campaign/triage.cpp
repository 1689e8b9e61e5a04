// Triage: reading repros of every kind reprokit writes, their signatures, and the grouping.
#include "reprokit/campaign/triage.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <string_view>
#include <utility>
#include <functional>
#include <tuple>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "reprokit/codegen/backend.h"
#include "reprokit/codegen/passes/pass_manager.h"
#include "reprokit/harness/bundle.h"
#include "reprokit/harness/failure.h"
#include "reprokit/harness/repro_file.h"
#include "reprokit/support/errors.h"
#include "reprokit/onnx/onnx_import.h"
#include "reprokit/onnx/onnx_op_types.h"
#include "reprokit/runtime/torch_emitter.h"
#include "reprokit/support/files.h"
#include "reprokit/support/regex.h"

namespace reprokit {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(fs::symlink_status(p, ec));
}

std::optional<json> read_json(const fs::path& p) {
  if (!is_file(p)) return std::nullopt;
  json j = json::parse(read_file(p.string(), kMaxTextFileBytes), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

// The repro graph's value names in its message, as whole words, become <v>: a compiler names
// what it reports after them ("node (v2/QuickGeluFusion/)"), and the minifier keeps the original
// graph's names, which differ from repro to repro of one bug.
std::string strip_value_names(const std::string& message, const Graph& g) {
  std::set<std::string> names;
  for (const Node& n : g.nodes) names.insert(n.name);
  auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::string out;
  for (size_t i = 0; i < message.size();) {
    if (!word_char(message[i]) || (i > 0 && word_char(message[i - 1]))) {
      out += message[i++];
      continue;
    }
    size_t end = i;
    while (end < message.size() && word_char(message[end])) ++end;
    const std::string word = message.substr(i, end - i);
    out += names.count(word) ? "<v>" : word;
    i = end;
  }
  return out;
}

void count_graph(ReproRecord& r, const Graph& g) {
  r.message = strip_value_names(r.message, g);
  for (int i = g.num_inputs(); i < g.size(); ++i) ++r.ops[std::string(op_name(g.node(i).op))];
  r.ops_count = g.num_ops();
  for (int i = 0; i < g.num_inputs(); ++i) r.elements += g.node(i).type.numel();
}

// What an exporter writes around an op (silu is x * Sigmoid(x)): left out of a foreign compiler's
// ops, so one kernel's bug is one group whichever reprokit op reached it.
constexpr std::string_view kExporterGlue[] = {
    "Add", "Sub", "Mul", "Div", "Neg", "Cast", "Identity", "Reshape", "Unsqueeze", "Squeeze", "Constant", "ConstantOfShape", "Expand"};

// r.ops as the compiler saw them: `types`, less the exporter's glue (all of them when nothing else is left).
void count_compiler_ops(ReproRecord& r, const std::vector<std::string>& types) {
  std::map<std::string, int> ops, all;
  for (const std::string& t : types) {
    ++all[t];
    if (std::find(std::begin(kExporterGlue), std::end(kExporterGlue), t) == std::end(kExporterGlue)) ++ops[t];
  }
  r.ops = ops.empty() ? all : ops;
}

// The first source file and line a compiler's message names ("/src/core/pool_attributes.h:88" ->
// "pool_attributes.h:88"): where the compiler itself says it failed.
std::string source_location(const std::string& message) {
  static const Regex kLocation(R"([A-Za-z0-9_\-]+\.(?:h|hpp|hh|c|cc|cpp|cxx|cu|py|inc)[:(]\d+)", "source location");
  std::optional<std::string> m = kLocation.search(message);
  if (!m) return "";
  std::replace(m->begin(), m->end(), '(', ':');
  return *m;
}

// The cause `bisect_compiler_switches` named, as minify recorded it in report.json.
std::string recorded_cause(const std::optional<json>& report) {
  if (!report || !report->contains("compiler_switches") || !(*report)["compiler_switches"].is_object()) return "";
  const json& s = (*report)["compiler_switches"];
  if (s.value("rule", json()).is_string()) return "rule " + s["rule"].get<std::string>();
  if (s.value("optimizer", json()).is_string()) return "optimizer " + s["optimizer"].get<std::string>();
  return "";
}

// The passes a repro keeps on, as the minifier left them (those it could turn off are off).
std::vector<std::string> kept_passes(const CompileOptions& c) {
  std::vector<std::string> kept;
  if (!passes_run(c)) return kept;
  for (auto& p : pass_table()) {
    if (c.disabled_passes.count(p.name)) continue;
    auto lim = c.pass_limits.find(p.name);
    if (lim == c.pass_limits.end()) kept.push_back(p.name);
    else if (lim->second > 0) kept.push_back(fmt::format("{}:{}", p.name, lim->second));
  }
  return kept;
}

// What varies between repros of one bug beyond normalise_signature's rule: the graph's name
// ("generated code for graph a failed") and identifiers a compiler quotes, which generated code
// derives from value names ('rk_injected_compile_error_in_s').
constexpr std::pair<std::string_view, std::string_view> kQuotes[] = {{"\u2018", "\u2019"}, {"'", "'"}};  // g++'s quotes, ASCII quotes

std::string triage_message(const std::string& signature) {
  std::string out;
  for (size_t i = 0; i < signature.size();) {
    if (signature.compare(i, 6, "graph ") == 0 && (i == 0 || !std::isalnum(static_cast<unsigned char>(signature[i - 1])))) {
      out += "graph <g>";
      i += 6;
      while (i < signature.size() && (std::isalnum(static_cast<unsigned char>(signature[i])) || signature[i] == '_' || signature[i] == '.')) ++i;
      continue;
    }
    bool quoted = false;
    // A quote right after a letter or digit is an apostrophe ("Runtime's"), not an opening quote.
    const bool after_word = i > 0 && std::isalnum(static_cast<unsigned char>(signature[i - 1]));
    for (auto [open, close] : kQuotes) {
      if (after_word) break;
      const size_t end = signature.compare(i, open.size(), open) == 0 ? signature.find(close, i + open.size()) : std::string::npos;
      if (end == std::string::npos) continue;
      out += std::string(open) + "<id>" + std::string(close);
      i = end + close.size();
      quoted = true;
      break;
    }
    if (!quoted) out += signature[i++];
  }
  return out;
}

void from_spec(ReproRecord& r, const ReproSpec& spec, const Graph& g) {
  r.backend = spec.options.compile.backend;
  r.kind = std::string(spec.expected.kind_name());
  r.stage = spec.stage;
  r.passes = kept_passes(spec.options.compile);
  r.message = triage_message(spec.expected.signature.empty() ? normalise_signature(spec.expected.message) : spec.expected.signature);
  count_graph(r, g);
  const Backend* b = find_backend(r.backend);
  if (!b || b->ops == OpLanguage::reprokit) return;
  // A compiler that is not reprokit's: named in its own terms, the ops of the model it reads.
  r.location = source_location(spec.expected.message);
  if (b->ops == OpLanguage::aten) {
    std::vector<std::string> aten;
    for (int id = g.num_inputs(); id < g.size(); ++id) aten.push_back(aten_op_name(g, g.node(id)));
    count_compiler_ops(r, aten);
    return;
  }
  try {
    count_compiler_ops(r, onnx_op_types(g));
  } catch (const UserError&) {  // a graph ONNX cannot hold keeps reprokit's op names
  }
}

// A `reduce` OUT directory: the user's check decided, so the kind is "check" and the message is
// what the final check said.
std::optional<ReproRecord> from_reduce(const fs::path& dir, const fs::path& model, const json& report) {
  ReproRecord r;
  r.dir = dir.string();
  r.repro = model.string();
  r.kind = "check";
  std::string said = report.value("final_check_said", std::string());
  if (said == "(not verified)") said.clear();
  r.message = triage_message(normalise_signature(said));
  r.location = source_location(said);
  count_graph(r, load_model(model.string()).entry());
  if (model.extension() == ".onnx") count_compiler_ops(r, onnx_op_types_in_file(model.string()));
  return r;
}

}  // namespace

std::string ReproRecord::ops_text() const {
  std::vector<std::string> parts;
  for (auto& [op, n] : ops) parts.push_back(n == 1 ? op : fmt::format("{} x{}", op, n));
  return fmt::format("{}", fmt::join(parts, ", "));
}

// One cause the compiler names is one bug, whatever ops reach it; else the ops, the source line the
// compiler names and its message.
std::string ReproRecord::signature() const {
  const std::string who = backend.empty() ? "external" : backend;
  if (!cause.empty()) return fmt::format("{}|{}|cause:{}", who, kind, cause);
  return fmt::format("{}|{}|passes:{}|ops:{}|{}{}", who, kind, passes.empty() ? "none" : fmt::format("{}", fmt::join(passes, ",")), ops_text(),
                     location.empty() ? "" : "at:" + location + "|", message);
}

std::optional<ReproRecord> read_repro(const std::string& dir_str, std::string* why) {
  const fs::path dir(dir_str);
  auto fail = [&](std::string w) -> std::optional<ReproRecord> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  try {
    const auto report = read_json(dir / "report.json");
    const bool from_check = report && report->contains("check");
    if (from_check) {
      for (const char* name : {"repro.rk", "repro.onnx"})
        if (is_file(dir / name)) return from_reduce(dir, dir / name, *report);
      return fail(fmt::format("{}: a reduce report without repro.rk or repro.onnx", dir_str));
    }
    if (is_file(dir / "repro.rk")) {
      ReproFile f = load_repro_file((dir / "repro.rk").string());
      ReproRecord r;
      r.dir = dir_str;
      r.repro = (dir / "repro.rk").string();
      from_spec(r, f.spec, f.graph);
      r.cause = recorded_cause(report);
      return r;
    }
    if (is_file(dir / "manifest.json")) {
      Bundle b = load_bundle(dir_str);
      if (!b.spec.expected.failed()) return fail(fmt::format("{}: no failure recorded yet (a level-3 bundle written before compiling)", dir_str));
      ReproRecord r;
      r.dir = dir_str;
      r.repro = (dir / "original" / "repro.rk").string();
      r.minimized = false;
      from_spec(r, b.spec, b.graph);
      return r;
    }
    if (auto finding = read_json(dir / "finding.json"); finding && is_file(dir / "model.rk")) {
      // A failure with no bundle to minify (reprokit itself exited 3 or died): the generated graph.
      ReproRecord r;
      r.dir = dir_str;
      r.repro = (dir / "model.rk").string();
      r.minimized = false;
      r.backend = finding->value("backend", std::string());
      r.kind = finding->value("kind", std::string("internal"));
      r.stage = finding->value("mode", std::string());
      r.message = triage_message(normalise_signature(finding->value("message", std::string())));
      count_graph(r, load_model(r.repro).entry());
      return r;
    }
  } catch (const std::exception& e) {
    // A field of the wrong type (nlohmann's message) names no file: the directory is named.
    const std::string what = e.what();
    return fail(what.find(dir_str) != std::string::npos ? what : fmt::format("{}: {}", dir_str, what));
  }
  return fail(fmt::format("{}: no repro.rk, repro.onnx, manifest.json or finding.json", dir_str));
}

namespace {

// The subdirectories of `d` a walk may go into, in path order: never through a symlink, and not
// into the parts of a repro (work directories, original/, twin/) or a campaign's scratch.
std::vector<fs::path> walked_subdirectories(const fs::path& d) {
  std::error_code ec;
  std::vector<fs::path> subs;
  for (auto& e : fs::directory_iterator(d, ec)) {
    if (!e.is_directory(ec) || e.is_symlink(ec)) continue;
    const std::string name = e.path().filename().string();
    if (name == "minify_work" || name == "reduce_work" || name == "original" || name == "twin" || name == "graphs") continue;
    subs.push_back(e.path());
  }
  std::sort(subs.begin(), subs.end());
  return subs;
}

bool holds_repro(const fs::path& d) {
  for (const char* f : {"repro.rk", "manifest.json"})
    if (is_file(d / f)) return true;
  auto report = read_json(d / "report.json");
  if (report && report->contains("check")) return true;
  auto finding = read_json(d / "finding.json");
  return finding && finding->contains("kind") && !fs::exists(d / "bundles") && !fs::exists(d / "reduced");
}

}  // namespace

std::vector<std::string> find_repro_dirs(const std::string& root, TooDeep* too_deep) {
  std::vector<std::string> found;
  std::function<void(const fs::path&, int)> walk = [&](const fs::path& d, int depth) {
    if (holds_repro(d)) {
      found.push_back(d.string());
      return;  // its subdirectories (original/, twin/, work) are parts of it
    }
    for (auto& s : walked_subdirectories(d)) {
      if (depth > 0) {
        walk(s, depth - 1);
      } else if (too_deep) {  // counted, so that a caller can say what was left out
        if (too_deep->count++ == 0) too_deep->first = s.string();
      }
    }
  };
  std::error_code ec;
  if (fs::is_directory(fs::symlink_status(root, ec))) walk(fs::path(root), kMaxReproDepth);
  return found;
}

std::vector<BugGroup> group_repros(std::vector<ReproRecord> records) {
  std::vector<BugGroup> groups;
  std::map<std::string, size_t> index;
  for (auto& r : records) {
    std::string sig = r.signature();
    auto [it, fresh] = index.emplace(sig, groups.size());
    if (fresh) groups.push_back(BugGroup{sig, {}});
    groups[it->second].members.push_back(std::move(r));
  }
  for (auto& g : groups)
    std::stable_sort(g.members.begin(), g.members.end(), [](const ReproRecord& a, const ReproRecord& b) {
      if (a.minimized != b.minimized) return a.minimized;
      return std::tie(a.ops_count, a.elements) < std::tie(b.ops_count, b.elements);
    });
  return groups;
}

}  // namespace reprokit
