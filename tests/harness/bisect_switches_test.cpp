// The search of a foreign compiler's own switches (harness/bisect_switches.h) on a compiler
// simulated by a table: which level, optimiser and rule a failure needs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <set>
#include <sstream>

#include "../../src/harness/bisect_switches.h"

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
