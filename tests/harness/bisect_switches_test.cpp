// The search of a foreign compiler's own switches (harness/bisect_switches.h) on a compiler
// simulated by a table: which level, optimiser and rule a failure needs; and TVM's real switches
// where its Python package is installed.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>
#include <sstream>

#include "../../src/codegen/python_worker.h"
#include "../../src/harness/bisect_switches.h"
#include "reprokit/codegen/backend.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/process/subprocess.h"
#include "reprokit/support/errors.h"

using namespace reprokit;
using nlohmann::json;

namespace {

constexpr std::string_view kLevels[] = {"off", "low", "high"};
constexpr std::string_view kRules[] = {"R1", "R2", "R3", "R4", "R5", "R6", "R7"};
constexpr OptimizerGroup kGroups[] = {{"Rules", kRules}};

// The simulated compiler: which optimisers change the graph at each level.
std::vector<std::string> changed(const Graph&, const CompileOptions& o) {
  const std::string level = json::parse(o.backend_options.at("level")).get<std::string>();
  if (level == "off") return {};
  if (level == "low") return {"Rules"};
  return {"Rules", "FuseA", "FuseB"};
}
std::string version() { return "sim 1.0"; }
const BackendSwitches kSim = {"Sim", "level", kLevels, "disabled", kGroups, changed, version};

std::set<std::string> disabled_in(const BisectStep& s) {
  std::set<std::string> out;
  auto it = s.backend_options.find("disabled");
  if (it == s.backend_options.end()) return out;
  std::stringstream list(json::parse(it->second).get<std::string>());
  for (std::string name; std::getline(list, name, ',');) out.insert(name);
  return out;
}

std::string level_of(const BisectStep& s) {
  auto it = s.backend_options.find("level");
  return it == s.backend_options.end() ? "high" : json::parse(it->second).get<std::string>();
}

int level_index(const std::string& l) { return l == "off" ? 0 : l == "low" ? 1 : 2; }

json search(const std::function<bool(const BisectStep&)>& fails_when, int* tries = nullptr) {
  Graph g;
  BisectStep base;
  base.backend = "sim";
  int n = 0;
  json out = bisect_switches(kSim, g, base, [&](const BisectStep& s, const std::string&) {
    ++n;
    return fails_when(s);
  });
  if (tries) *tries = n;
  return out;
}

}  // namespace

TEST(BisectSwitches, ARuleInsideAGroupIsNamedByHalvingTheGroup) {
  int tries = 0;
  json r = search([](const BisectStep& s) { return level_index(level_of(s)) >= 1 && !disabled_in(s).count("Rules") && !disabled_in(s).count("R6"); },
                  &tries);
  EXPECT_EQ(r["level"], "low");
  EXPECT_EQ(r["optimizer"], "Rules");
  EXPECT_EQ(r["rule"], "R6");
  EXPECT_NE(r["finding"].get<std::string>().find("rewrite rule R6 of Rules (level low)"), std::string::npos) << r.dump();
  EXPECT_LE(tries, 2 + 1 + 3 + 1);  // two levels, the group, log2(7) halvings, one check alone
}

TEST(BisectSwitches, AnOptimiserOfAHigherLevelIsNamed) {
  json r = search([](const BisectStep& s) { return level_of(s) == "high" && !disabled_in(s).count("FuseB"); });
  EXPECT_EQ(r["level"], "high");
  EXPECT_EQ(r["optimizer"], "FuseB");
  EXPECT_TRUE(r["rule"].is_null());
}

TEST(BisectSwitches, AFailureWithEveryOptimisationOffNamesNoOptimiser) {
  json r = search([](const BisectStep&) { return true; });
  EXPECT_EQ(r["level"], "off");
  EXPECT_TRUE(r["optimizer"].is_null());
  EXPECT_NE(r["finding"].get<std::string>().find("no optimiser causes it"), std::string::npos);
}

TEST(BisectSwitches, TwoOptimisersNeededTogetherAreAnInteraction) {
  json r = search([](const BisectStep& s) {
    const auto off = disabled_in(s);
    return level_of(s) == "high" && !(off.count("FuseA") && off.count("FuseB"));
  });
  EXPECT_TRUE(r["optimizer"].is_null());
  EXPECT_NE(r["finding"].get<std::string>().find("interaction"), std::string::npos) << r.dump();
}

TEST(BisectSwitches, NoLevelFailingSaysSo) {
  json r = search([](const BisectStep&) { return false; });
  EXPECT_TRUE(r["level"].is_null());
  EXPECT_NE(r["finding"].get<std::string>().find("no optimisation level"), std::string::npos);
}

TEST(BisectSwitches, OptimisersTheBundleTurnsOffStayOff) {
  Graph g;
  BisectStep base;
  base.backend = "sim";
  base.backend_options["disabled"] = json("FuseA").dump();
  bool kept = true;
  bisect_switches(kSim, g, base, [&](const BisectStep& s, const std::string&) {
    if (s.backend_options.count("disabled")) kept &= disabled_in(s).count("FuseA") == 1;
    return level_of(s) == "high" && !disabled_in(s).count("FuseB");
  });
  EXPECT_TRUE(kept);
}

TEST(BisectSwitches, ATryThatCannotBeJudgedEndsTheSearchWithoutAnAnswer) {
  json r = search([](const BisectStep& s) {
    if (disabled_in(s).count("Rules")) throw UnjudgedTry{"without Rules"};
    return level_index(level_of(s)) >= 1;
  });
  EXPECT_EQ(r["level"], nullptr);
  EXPECT_TRUE(r["optimizer"].is_null());
  EXPECT_NE(r["finding"].get<std::string>().find("\"without Rules\" ran out of time"), std::string::npos) << r.dump();
}

TEST(BisectSwitches, ATimeoutIsUnjudgedUnlessTheFailureIsAHang) {
  Failure accuracy, hang, timed_out;
  accuracy.kind = FailureKind::accuracy;
  hang.kind = FailureKind::timeout;
  timed_out.kind = FailureKind::timeout;
  EXPECT_TRUE(unjudged(accuracy, timed_out));
  EXPECT_FALSE(unjudged(hang, timed_out));
  EXPECT_FALSE(unjudged(accuracy, Failure{}));
}

namespace {
// A compiler whose group's members depend on the graph and are asked of it (Inductor's lowerings).
std::vector<std::string> changed_dynamic(const Graph&, const CompileOptions& o) {
  if (json::parse(o.backend_options.at("level")).get<std::string>() == "off") return {};
  return {"passes", "lowerings"};
}
std::vector<std::string> lowered(const Graph&, const CompileOptions&, std::string_view group) {
  if (group != "lowerings") return {};
  return {"lowerings:a", "lowerings:b", "lowerings:c"};
}
const BackendSwitches kDynamic = {"Dyn", "level", kLevels, "disabled", {}, changed_dynamic, version, lowered, false};
}  // namespace

TEST(BisectSwitches, AGroupTheCompilerListsForTheGraphIsHalvedToOneMember) {
  Graph g;
  BisectStep base;
  base.backend = "dyn";
  json r = bisect_switches(kDynamic, g, base, [&](const BisectStep& s, const std::string&) {
    const auto off = disabled_in(s);
    return level_of(s) == "high" && !off.count("lowerings") && !off.count("lowerings:b");
  });
  EXPECT_EQ(r["optimizer"], "lowerings");
  EXPECT_EQ(r["rule"], "lowerings:b");
  EXPECT_NE(r["finding"].get<std::string>().find("Dyn's lowerings, at b (level high), causes the failure"), std::string::npos) << r.dump();
}

namespace {
// A compiler whose switches are not all optimisers: a config change is named as one.
std::string_view kind_of_dyn(std::string_view name) { return name == "passes" ? "pass" : "config change"; }
std::vector<std::string> changed_config(const Graph&, const CompileOptions& o) {
  if (json::parse(o.backend_options.at("level")).get<std::string>() == "off") return {};
  return {"passes", "precision_casts"};
}
const BackendSwitches kWithConfig = {"Dyn", "level", kLevels, "disabled", {}, changed_config, version, nullptr, false, kind_of_dyn};
}  // namespace

TEST(BisectSwitches, ASwitchIsNamedInTheCompilersOwnWords) {
  Graph g;
  BisectStep base;
  base.backend = "dyn";
  json r = bisect_switches(kWithConfig, g, base, [&](const BisectStep& s, const std::string&) {
    return level_of(s) == "high" && !disabled_in(s).count("precision_casts");
  });
  EXPECT_EQ(r["optimizer"], "precision_casts");
  EXPECT_EQ(r["optimizer_kind"], "config change");
  EXPECT_NE(r["finding"].get<std::string>().find("Dyn's config change precision_casts (level high) causes the failure"), std::string::npos)
      << r.dump();
  EXPECT_EQ(kSim.kind("FuseA"), "optimiser");
}

namespace {
// A compiler whose lowest level still runs passes that can be turned off (TVM's opt_level 0).
std::vector<std::string> changed_at_every_level(const Graph&, const CompileOptions&) { return {"passes", "precision_casts"}; }
const BackendSwitches kAllLevels = {"Low", "level", kLevels, "disabled", {}, changed_at_every_level, version, nullptr, false, kind_of_dyn, true};
}  // namespace

TEST(BisectSwitches, AtALowestLevelThatStillOptimisesTheOptimiserIsSearched) {
  Graph g;
  BisectStep base;
  base.backend = "low";
  json r = bisect_switches(kAllLevels, g, base, [&](const BisectStep& s, const std::string&) { return !disabled_in(s).count("passes"); });
  EXPECT_EQ(r["level"], "off");
  EXPECT_EQ(r["optimizer"], "passes") << r.dump();
  // Without the flag the same failure names no optimiser (ONNX Runtime's "disabled" runs none).
  const BackendSwitches without_flag = {"Low", "level", kLevels, "disabled", {}, changed_at_every_level, version, nullptr, false, kind_of_dyn};
  json plain = bisect_switches(without_flag, g, base, [&](const BisectStep& s, const std::string&) { return !disabled_in(s).count("passes"); });
  EXPECT_TRUE(plain["optimizer"].is_null()) << plain.dump();
}

// TVM's real switches, through its worker: the disabled pass reaches PassContext and is no longer
// among the passes that changed the module; an invalid name never leaves reprokit.
TEST(TvmSwitches, ADisabledPassReachesTvmAndNoLongerChangesTheModule) {
  ProcessSpec probe;
  probe.argv = {python_interpreter(), "-c", "import tvm, onnx"};
  probe.timeout_s = 120;
  if (run_process(probe).exit_code != 0)
    GTEST_SKIP() << python_interpreter() << " cannot import tvm and onnx (pip install apache-tvm onnx): TVM's switches were not tried";
  const BackendSwitches* sw = backend_named("tvm").switches;
  ASSERT_NE(sw, nullptr);
  Graph g = parse_graph("graph t(%x: f32[4, 8], %w: f32[8, 8]) {\n  %m = matmul(%x, %w)\n  %a = add(%m, %x)\n  %r = relu(%a)\n  return (%r)\n}\n");
  CompileOptions options;
  options.backend = "tvm";
  options.backend_options["opt_level"] = json("3").dump();
  const std::vector<std::string> all = sw->changed(g, options);
  ASSERT_FALSE(all.empty());
  const std::string pass = std::find(all.begin(), all.end(), "tirx.CommonSubexprElim") != all.end() ? "tirx.CommonSubexprElim" : all.front();
  options.backend_options["disabled_pass"] = json(pass).dump();
  const std::vector<std::string> without = sw->changed(g, options);
  EXPECT_EQ(std::find(without.begin(), without.end(), pass), without.end()) << pass << " still reported with it disabled";
  EXPECT_LT(without.size(), all.size());
  options.backend_options["disabled_pass"] = json("tirx.X; rm -rf /").dump();
  EXPECT_THROW(sw->changed(g, options), UserError);
  options.backend_options["disabled_pass"] = json("").dump();
  options.backend_options["opt_level"] = json(4).dump();
  EXPECT_THROW(sw->changed(g, options), UserError);
  EXPECT_NE(sw->version(), "TVM unknown");
}
