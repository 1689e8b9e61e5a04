// disable-passes and limit-rewrites: the fewest compiler passes, and within each the fewest
// rewrites (the budget bisect uses: CompileOptions::pass_limits), with which the failure stays.
// The repro's spec records the result (candidate_spec), so `reprokit repro` runs exactly that
// configuration.
#include "reprokit/minifier/compiler_decisions.h"

#include "reprokit/codegen/compile_options.h"
#include "reprokit/codegen/compiler.h"
#include "reprokit/codegen/passes/pass_manager.h"

namespace reprokit {

namespace {

class ReprokitPasses : public CompilerPasses {
 public:
  bool known(const std::string& pass) const override { return find_pass(pass) != nullptr; }
  std::map<std::string, int64_t> limits_from_json(const nlohmann::json& limits) const override { return pass_limits_from_json(limits); }
};

// The candidate's compiler decisions as options (for counting what each pass would rewrite).
CompileOptions decisions(const Candidate& c) {
  CompileOptions o;
  o.disabled_passes = c.disabled_passes;
  o.pass_limits = c.pass_limits;
  return o;
}

// Per enabled pass, in pipeline order: how many rewrites it applies now.
std::vector<std::pair<std::string, int64_t>> applied_rewrites(const Candidate& c) {
  std::vector<PassRecord> records;
  lower_for_codegen(c.graph, decisions(c), &records);
  std::vector<std::pair<std::string, int64_t>> out;
  for (auto& r : records)
    if (r.rewrites > 0) out.push_back({r.name, r.rewrites});
  return out;
}

}  // namespace

const CompilerPasses& reprokit_passes() {
  static const ReprokitPasses passes;
  return passes;
}

const std::vector<Strategy>& strategy_table() {
  static const std::vector<Strategy> table = strategy_table_with({disable_passes_strategy(), limit_rewrites_strategy()});
  return table;
}

Strategy disable_passes_strategy() {
  Strategy s{"disable-passes", "switch compiler passes off (delta debugging over the pipeline)", SearchKind::delta,
             [](const Candidate& c) {
               std::vector<int> units;
               const auto& passes = pass_table();
               for (size_t k = 0; k < passes.size(); ++k)
                 if (!c.disabled_passes.count(passes[k].name)) units.push_back(static_cast<int>(k));
               return units;
             },
             [](const Candidate& c, const std::vector<int>& removed) {
               Candidate r = c;
               for (int k : removed) {
                 const std::string& name = pass_table().at(static_cast<size_t>(k)).name;
                 r.disabled_passes.insert(name);
                 r.pass_limits.erase(name);
               }
               return r;
             }};
  s.compiler_only = true;
  return s;
}

// Units: the rewrites of every pass that applies some, last first, pass after pass; removing the
// first k lowers the first pass's limit by k (then the next pass's), so a binary search finds the
// smallest budget (and, with one pass left, the rewrite that introduces the failure).
Strategy limit_rewrites_strategy() {
  Strategy s{"limit-rewrites", "apply only the first rewrites of each pass (binary search, as bisect does)", SearchKind::prefix,
             [](const Candidate& c) {
               int64_t total = 0;
               for (auto& [pass, n] : applied_rewrites(c)) total += n;
               std::vector<int> units;
               for (int64_t k = 0; k < std::min<int64_t>(total, 1 << 20); ++k) units.push_back(static_cast<int>(k));
               return units;
             },
             [](const Candidate& c, const std::vector<int>& removed) {
               Candidate r = c;
               auto left = static_cast<int64_t>(removed.size());
               for (auto& [pass, n] : applied_rewrites(c)) {
                 int64_t cut = std::min(left, n);
                 if (cut > 0) r.pass_limits[pass] = n - cut;
                 left -= cut;
               }
               return r;
             }};
  s.compiler_only = true;
  return s;
}

ReproSpec candidate_spec(const ReproSpec& base, const Candidate& c) {
  ReproSpec s = base;
  s.options.compile.disabled_passes.insert(c.disabled_passes.begin(), c.disabled_passes.end());
  for (auto& [p, n] : c.pass_limits) s.options.compile.pass_limits[p] = n;
  return s;
}

}  // namespace reprokit
