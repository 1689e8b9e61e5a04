// state.json (what --resume reads back), report.json and SUMMARY.txt of a campaign.
#include "campaign_state.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "reprokit/codegen/backend.h"
#include "reprokit/support/errors.h"
#include "reprokit/support/escape_controls.h"
#include "reprokit/ir/op_registry.h"

namespace reprokit {

using json = nlohmann::json;

static constexpr int kStateVersion = 1;

static json options_json(const CampaignOptions& o) {
  json ops = json::array();
  for (Op op : o.generator.ops) ops.push_back(std::string(op_name(op)));
  return {{"seed", o.seed},
          {"max_nodes", o.generator.max_nodes},
          {"ops", ops},
          {"train", o.generator.train},
          {"backends", o.backends},
          {"timeout_s", o.timeout_s},
          {"check", o.check},
          {"format", o.format},
          {"fail_regex", o.fail_regex},
          {"unsupported_regex", o.unsupported_regex},
          {"minify", o.minify}};
}

static json finding_json(const CampaignFinding& f) {
  return {{"id", f.id},     {"graph", f.graph},     {"index", f.index},   {"backend", f.backend},  {"mode", f.mode},
          {"kind", f.kind}, {"message", f.message}, {"minify", f.minify}, {"minify_s", f.minify_s}};
}

static json counts_json(const CampaignCounts& c) {
  return {{"graphs", c.graphs},
          {"runs", c.runs},
          {"passed", c.passed},
          {"findings", c.findings},
          {"rejected", c.rejected},
          {"timeouts", c.timeouts},
          {"not_exportable", c.not_exportable},
          {"unsupported", c.unsupported},
          {"seeds_without_graph", c.no_graph},
          {"seeds_without_values", c.no_values}};
}

void write_state(const Dir& campaign, const CampaignState& s, size_t max_bytes) {
  json findings = json::array();
  for (auto& f : s.findings) findings.push_back(finding_json(f));
  json j = {{"format_version", kStateVersion},
            {"options", options_json(s.options)},
            {"next_index", s.next_index},
            {"elapsed_s", s.elapsed_s},
            {"generate_s", s.generate_s},
            {"judge_s", s.judge_s},
            {"minify_s", s.minify_s},
            {"counts", counts_json(s.counts)},
            {"findings", findings},
            {"rejected_examples", s.rejected_examples}};
  // Compact: the file grows with the findings, and indentation alone made a state read_state
  // could hold too big for it. No person reads it (report.json and SUMMARY.txt are theirs).
  const std::string text = j.dump() + "\n";
  // A state past what read_state reads could never be resumed: the last one written stays.
  if (text.size() > max_bytes)
    throw UserError(
        fmt::format("{}: the campaign's state would be {} bytes, more than the {} bytes `reprokit fuzz --resume` reads; "
                    "state.json was left as it was (it resumes after the last graph it recorded)",
                    campaign.path("state.json"), text.size(), max_bytes));
  campaign.write("state.json", text);
}

// ---- reading state.json back: every field typed and bounded, or a UserError naming it (the
// values it quotes escaped: the file is untrusted, and the message goes to a terminal)
namespace {
struct StateReader {
  std::string file;
  [[noreturn]] void bad(const std::string& what) const {
    throw UserError(fmt::format("{}: {}; not a campaign this reprokit can resume", escape_controls(file), what));
  }
  const json& field(const json& j, const char* key) const {
    if (!j.is_object() || !j.contains(key)) bad(fmt::format("missing \"{}\"", key));
    return j.at(key);
  }
  std::string str(const json& j, const char* key) const {
    const json& v = field(j, key);
    if (!v.is_string()) bad(fmt::format("\"{}\" is not a string", key));
    return v.get<std::string>();
  }
  int64_t integer(const json& j, const char* key, int64_t lo, int64_t hi) const {
    const json& v = field(j, key);
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi) bad(fmt::format("\"{}\" is not an integer in {}..{}", key, lo, hi));
    return v.get<int64_t>();
  }
  uint64_t unsigned_integer(const json& j, const char* key) const {
    const json& v = field(j, key);
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) bad(fmt::format("\"{}\" is not a non-negative integer", key));
    return v.get<uint64_t>();
  }
  double number(const json& j, const char* key, double lo, double hi) const {
    const json& v = field(j, key);
    if (!v.is_number() || !(v.get<double>() >= lo && v.get<double>() <= hi)) bad(fmt::format("\"{}\" is not a number in {}..{}", key, lo, hi));
    return v.get<double>();
  }
  bool boolean(const json& j, const char* key) const {
    const json& v = field(j, key);
    if (!v.is_boolean()) bad(fmt::format("\"{}\" is not true or false", key));
    return v.get<bool>();
  }
  std::vector<std::string> strings(const json& j, const char* key) const {
    const json& v = field(j, key);
    if (!v.is_array()) bad(fmt::format("\"{}\" is not an array", key));
    std::vector<std::string> out;
    for (auto& e : v) {
      if (!e.is_string()) bad(fmt::format("\"{}\" holds a non-string", key));
      out.push_back(e.get<std::string>());
    }
    return out;
  }
};

// A finding's id names a directory under findings/: one plain path component.
bool plain_name(const std::string& s) {
  if (s.empty() || s.size() > 200 || s == "." || s == "..") return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  return true;
}
}  // namespace

CampaignState read_state(const Dir& campaign) {
  StateReader r{campaign.path("state.json")};
  json j = json::parse(campaign.read("state.json", kMaxTextFileBytes), nullptr, false);
  if (j.is_discarded() || !j.is_object()) r.bad("not a JSON object");
  if (r.integer(j, "format_version", 0, 1000) != kStateVersion) r.bad(fmt::format("format_version is not {}", kStateVersion));
  CampaignState s;
  const json& o = r.field(j, "options");
  s.options.seed = r.unsigned_integer(o, "seed");
  s.options.generator.max_nodes = static_cast<int>(r.integer(o, "max_nodes", 1, 200));
  for (auto& name : r.strings(o, "ops")) {
    const OpSchema* op = find_op(name);
    if (!op) r.bad(fmt::format("\"ops\" names '{}', which is not an op", escape_controls(name)));
    s.options.generator.ops.insert(op->op);
  }
  s.options.generator.train = r.boolean(o, "train");
  s.options.backends = r.strings(o, "backends");
  for (auto& b : s.options.backends)
    if (!find_backend(b)) r.bad(fmt::format("\"backends\" names '{}', which is not a backend", escape_controls(b)));
  s.options.timeout_s = r.number(o, "timeout_s", 0.1, 86400);
  s.options.check = r.str(o, "check");
  s.options.format = r.str(o, "format");
  if (s.options.format != "rk" && s.options.format != "onnx") r.bad("\"format\" is not rk or onnx");
  s.options.fail_regex = r.str(o, "fail_regex");
  s.options.unsupported_regex = r.str(o, "unsupported_regex");
  s.options.minify = r.boolean(o, "minify");
  s.next_index = r.integer(j, "next_index", 0, int64_t{1} << 40);
  s.elapsed_s = r.number(j, "elapsed_s", 0, 1e9);
  s.generate_s = r.number(j, "generate_s", 0, 1e9);
  s.judge_s = r.number(j, "judge_s", 0, 1e9);
  s.minify_s = r.number(j, "minify_s", 0, 1e9);
  const json& c = r.field(j, "counts");
  constexpr int64_t big = int64_t{1} << 40;
  s.counts = {r.integer(c, "graphs", 0, big),
              r.integer(c, "runs", 0, big),
              r.integer(c, "passed", 0, big),
              r.integer(c, "findings", 0, big),
              r.integer(c, "rejected", 0, big),
              r.integer(c, "timeouts", 0, big),
              r.integer(c, "not_exportable", 0, big),
              r.integer(c, "unsupported", 0, big),
              r.integer(c, "seeds_without_graph", 0, big),
              r.integer(c, "seeds_without_values", 0, big)};
  const json& fs = r.field(j, "findings");
  if (!fs.is_array()) r.bad("\"findings\" is not an array");
  for (auto& e : fs) {
    CampaignFinding f;
    f.id = r.str(e, "id");
    if (!plain_name(f.id)) r.bad(fmt::format("finding id '{}' is not a plain directory name", escape_controls(f.id)));
    f.graph = r.str(e, "graph");
    f.index = r.integer(e, "index", 0, big);
    f.backend = r.str(e, "backend");
    f.mode = r.str(e, "mode");
    f.kind = r.str(e, "kind");
    f.message = r.str(e, "message");
    f.minify = r.str(e, "minify");
    if (f.minify != "pending" && f.minify != "minimized" && f.minify != "failed" && f.minify != "not needed" && f.minify != "off")
      r.bad(fmt::format("finding {}: \"minify\" is '{}'", f.id, escape_controls(f.minify)));
    f.minify_s = r.number(e, "minify_s", 0, 1e9);
    s.findings.push_back(std::move(f));
  }
  s.rejected_examples = r.strings(j, "rejected_examples");
  return s;
}

std::vector<BugGroup> campaign_bugs(const Dir& campaign) {
  std::vector<ReproRecord> records;
  if (!campaign.is_dir("findings")) return {};
  for (const std::string& d : find_repro_dirs(campaign.path("findings")))
    if (auto r = read_repro(d)) records.push_back(std::move(*r));
  return group_repros(std::move(records));
}

std::string write_report(const Dir& campaign, const CampaignState& s, const std::vector<BugGroup>& bugs) {
  const CampaignCounts& c = s.counts;
  const double per_s = s.elapsed_s > 0 ? static_cast<double>(c.graphs) / s.elapsed_s : 0;
  const double gen_per_s = s.generate_s > 0 ? static_cast<double>(c.graphs) / s.generate_s : 0;
  json bug_list = json::array();
  for (auto& g : bugs) {
    const ReproRecord& r = g.smallest();
    bug_list.push_back({{"signature", g.signature},
                        {"count", g.members.size()},
                        {"kind", r.kind},
                        {"ops", r.ops_text()},
                        {"repro", r.dir},
                        {"minimized", r.minimized},
                        {"backend", r.backend},
                        {"stage", r.stage}});
  }
  json findings = json::array();
  for (auto& f : s.findings) findings.push_back(finding_json(f));
  // No top-level "check" key: triage reads a report.json holding one as a `reduce` output.
  json j = {{"format_version", kStateVersion},
            {"options", options_json(s.options)},
            {"elapsed_s", s.elapsed_s},
            {"graphs_per_s", per_s},
            {"generator_graphs_per_s", gen_per_s},
            {"seconds", {{"generate", s.generate_s}, {"judge", s.judge_s}, {"minify", s.minify_s}}},
            {"counts", counts_json(c)},
            {"distinct_bugs", bugs.size()},
            {"bugs", bug_list},
            {"findings", findings},
            {"rejected_examples", s.rejected_examples}};
  campaign.write("report.json", j.dump(2) + "\n");

  // SUMMARY.txt is printed and read on terminals: what in it came from files (the findings' kinds
  // and directories, state.json's refusals) is escaped.
  std::string t = fmt::format("reprokit fuzz campaign {}\n", escape_controls(campaign.path()));
  t += fmt::format("  {} graphs in {:.0f} s ({:.2f} graphs/s; the generator alone: {:.0f} graphs/s), {} runs\n", c.graphs, s.elapsed_s, per_s,
                   gen_per_s, c.runs);
  t += fmt::format("  time: generating {:.1f} s, judging {:.1f} s, minifying {:.1f} s\n", s.generate_s, s.judge_s, s.minify_s);
  t += fmt::format("  passed {}, findings {}, distinct bugs {}, rejected by reprokit {}, timeouts {}, not exportable {}, unsupported {}\n", c.passed,
                   c.findings, bugs.size(), c.rejected, c.timeouts, c.not_exportable, c.unsupported);
  t += fmt::format("  seeds with no graph {}, with no finite values {}\n", c.no_graph, c.no_values);
  if (!bugs.empty()) {
    t += fmt::format("\n  {:>5}  {:<14} {:<10} {:<30} {}\n", "count", "kind", "backend", "ops", "smallest repro");
    for (auto& g : bugs) {
      const ReproRecord& r = g.smallest();
      t += fmt::format("  {:>5}  {:<14} {:<10} {:<30} {}{}\n", g.members.size(), escape_controls(r.kind),
                       r.backend.empty() ? "external" : escape_controls(r.backend), escape_controls(r.ops_text()), escape_controls(r.dir),
                       r.minimized ? "" : " (not minimized)");
    }
  }
  int failed = 0;
  for (auto& f : s.findings) failed += f.minify == "failed";
  if (failed) t += fmt::format("\n  {} finding(s) could not be minified: see findings/<id>/minify.log\n", failed);
  if (!s.rejected_examples.empty()) {
    t += "\n  graphs reprokit refused (a generator bug; the first few):\n";
    for (auto& r : s.rejected_examples) t += "    " + escape_controls(r) + "\n";
  }
  campaign.write("SUMMARY.txt", t);
  return t;
}

}  // namespace reprokit
