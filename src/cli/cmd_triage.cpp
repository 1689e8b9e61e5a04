// `reprokit triage DIR...`: groups repros (minified bundles, reduce outputs, campaign
// directories, whole CI-farm trees) into distinct bugs by triage.h's signature.
#include <fmt/core.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "command.h"
#include "reprokit/campaign/known_bugs.h"
#include "reprokit/campaign/triage.h"
#include "reprokit/support/errors.h"
#include "reprokit/support/escape_controls.h"

namespace reprokit::cli {

namespace fs = std::filesystem;

// A DIR triage can walk. Nothing under a campaign is opened through a symlink, DIR included: one
// would be walked as nothing ("0 repros"), so it is refused, naming where it leads.
static void check_root(const std::string& root) {
  std::string link = root;  // "DIR/" resolves a symlink DIR; the name itself is what is checked
  while (link.size() > 1 && link.back() == '/') link.pop_back();
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(link, ec)))
    throw UserError(fmt::format("{}: is a symbolic link (to {}); triage follows no symlink: give the directory itself", escape_controls(root),
                                escape_controls(fs::read_symlink(link, ec).string())));
  if (!fs::is_directory(root, ec)) throw UserError(fmt::format("{}: not a directory", escape_controls(root)));
}

static int run_triage(const std::vector<std::string>& argv) {
  Args args(argv, {"--known"}, {"--json"});
  if (args.positional().empty()) throw UsageError("expected one or more DIRs (bundles, reduce outputs or campaigns)");
  for (const std::string& root : args.positional()) check_root(root);
  const std::map<std::string, std::string> known = args.get("--known") ? read_known_bugs(*args.get("--known")) : std::map<std::string, std::string>{};
  // "new", or what the known list says of the group (its reference, or that it is listed).
  auto standing = [&](const BugGroup& g) -> std::string {
    auto it = known.find(g.signature);
    if (it == known.end()) return "new";
    return it->second.empty() ? "known" : "known: " + it->second;
  };
  std::vector<ReproRecord> records;
  std::vector<std::string> unreadable;
  for (const std::string& root : args.positional()) {
    TooDeep too_deep;
    for (const std::string& dir : find_repro_dirs(root, &too_deep)) {
      std::string why;
      if (auto r = read_repro(dir, &why)) records.push_back(std::move(*r));
      else unreadable.push_back(why);
    }
    if (too_deep.count)  // never silently: repros may lie there
      fmt::print(stderr,
                 "reprokit triage: {} {} more than {} levels below {} {} not visited (the first: {}); give a deeper DIR to triage what they hold\n",
                 too_deep.count, too_deep.count == 1 ? "directory" : "directories", kMaxReproDepth, escape_controls(root),
                 too_deep.count == 1 ? "was" : "were", escape_controls(too_deep.first));
  }
  // What is printed came from the repros' files and directory names: escaped, so that none can
  // act on the terminal or forge a line of triage's verdict.
  for (auto& why : unreadable) fmt::print(stderr, "reprokit triage: skipped {}\n", escape_controls(why));
  const size_t total = records.size();
  std::vector<BugGroup> groups = group_repros(std::move(records));
  if (args.has("--json")) {
    nlohmann::json out = nlohmann::json::array();
    for (auto& g : groups) {
      const ReproRecord& s = g.smallest();
      out.push_back({{"signature", g.signature},
                     {"count", g.members.size()},
                     {"kind", s.kind},
                     {"ops", s.ops_text()},
                     {"repro", s.dir},
                     {"minimized", s.minimized},
                     {"backend", s.backend},
                     {"stage", s.stage}});
      if (!s.cause.empty()) out.back()["cause"] = s.cause;
      if (!s.location.empty()) out.back()["location"] = s.location;
      if (args.get("--known")) out.back()["known"] = standing(g) != "new";
      if (args.get("--known") && known.count(g.signature)) out.back()["reference"] = known.at(g.signature);
    }
    // \uXXXX for everything outside ASCII (controls, DEL and C1 included), and U+FFFD for bytes
    // of a directory name that are not UTF-8 (which JSON cannot hold).
    fmt::print("{}\n", out.dump(2, ' ', true, nlohmann::json::error_handler_t::replace));
    return 0;
  }
  size_t fresh = 0;
  for (auto& g : groups) fresh += standing(g) == "new";
  fmt::print("{} repro{} in {} distinct bug{}{}\n", total, total == 1 ? "" : "s", groups.size(), groups.size() == 1 ? "" : "s",
             args.get("--known") ? fmt::format(" ({} new, {} known)", fresh, groups.size() - fresh) : "");
  for (auto& g : groups) {
    const ReproRecord& s = g.smallest();
    // A failure of reprokit itself (inside a check) is the tool's bug, never the compiler's.
    const std::string backend = s.backend.empty() ? "external" : s.backend == "reprokit" ? "reprokit (tool bug)" : escape_controls(s.backend);
    fmt::print("{:>4}x  {:<14} {:<10} ops: {:<28} {}{}\n      smallest: {}\n", g.members.size(), escape_controls(s.kind), backend,
               escape_controls(s.ops_text()), escape_controls(s.message.substr(0, 80)), s.minimized ? "" : "  (not minimized)",
               escape_controls(s.dir));
    if (!s.cause.empty() || !s.location.empty())
      fmt::print("      cause: {}\n", escape_controls(s.cause.empty()      ? "the compiler's " + s.location
                                                      : s.location.empty() ? s.cause
                                                                           : s.cause + ", at " + s.location));
    if (args.get("--known")) fmt::print("      {}\n", escape_controls(standing(g)));
  }
  return 0;
}

static CommandRegistration reg({"triage", "reprokit triage DIR... [--json] [--known FILE]",
                                "group repros (bundles, reduce outputs, fuzz campaigns) into distinct bugs",
                                "  DIR     a minified bundle, a reduce OUT directory, a campaign, or any tree holding them\n"
                                "  --json  the groups as a JSON array of {signature, count, kind, ops, repro, ...}\n"
                                "  --known FILE  bugs already filed: a JSON array of {\"signature\", \"reference\"} (triage --json output with\n"
                                "          references added will do); each group is marked new or known (with its reference)\n"
                                "Two repros are the same bug when backend, failure kind, the passes the repro keeps on, the multiset\n"
                                "of its ops, the source line the compiler names and its normalised message agree; or, when minify named\n"
                                "the compiler's own optimiser that causes it, backend, kind and that optimiser (docs/FUZZING.md). The\n"
                                "smallest repro of each group is named.",
                                run_triage});

}  // namespace reprokit::cli
