// The search of a foreign compiler's own switches (harness/bisect_switches.h) on a compiler
// simulated by a table: which level, optimiser and rule a failure needs; and the real switches of
// TVM, IREE and OpenVINO where their Python packages are installed.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <sstream>

#include "../../src/codegen/python_worker.h"
#include "../../src/harness/bisect_switches.h"
#include "reprokit/codegen/backend.h"
#include "reprokit/codegen/compiler.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/process/subprocess.h"
#include "reprokit/runtime/input_gen.h"
#include "reprokit/runtime/interpreter.h"
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

namespace {

// Whether the worker's interpreter runs `imports` ("import iree.compiler, onnx").
bool python_can(const std::string& imports) {
  ProcessSpec probe;
  probe.argv = {python_interpreter(), "-c", imports};
  probe.timeout_s = 120;
  return run_process(probe).exit_code == 0;
}

// OpenVINO computes in bf16 only on a CPU with bf16 units; elsewhere it keeps f32.
const char* kHasBf16 = "import openvino, sys; sys.exit('BF16' not in openvino.Core().get_property('CPU', 'OPTIMIZATION_CAPABILITIES'))";

CompileOptions options_of(const BisectStep& s) {
  CompileOptions o;
  o.backend = s.backend;
  o.backend_options = s.backend_options;
  return o;
}

const char* kMatmulChain =
    "graph t(%x: f32[4, 8], %w: f32[8, 8]) {\n  %m = matmul(%x, %w)\n  %a = add(%m, %x)\n  %t = tanh(%a)\n  %u = mul(%t, %a)\n"
    "  %r = relu(%u)\n  return (%r)\n}\n";

}  // namespace

// IREE's real flags, through its worker: a flag turned off reaches iree-compile and no longer
// changes the module; a bad level or a name outside the table never leaves reprokit.
TEST(IreeSwitches, AFlagTurnedOffReachesIreeAndNoLongerChangesTheModule) {
  if (!python_can("import iree.compiler, iree.runtime, onnx"))
    GTEST_SKIP() << python_interpreter()
                 << " cannot import iree.compiler, iree.runtime and onnx (pip install iree-base-compiler iree-base-runtime onnx): "
                 << "IREE's switches were not tried";
  const BackendSwitches* sw = backend_named("iree").switches;
  ASSERT_NE(sw, nullptr);
  Graph g = parse_graph(kMatmulChain);
  CompileOptions options;
  options.backend = "iree";
  options.backend_options["opt_level"] = json("O2").dump();
  const std::vector<std::string> all = sw->changed(g, options);
  const std::string flag = "iree-opt-generalize-matmul";  // on from O2: the matmul becomes a linalg.generic
  ASSERT_NE(std::find(all.begin(), all.end(), flag), all.end()) << fmt::format("{}", fmt::join(all, ", "));
  options.backend_options["disabled_flags"] = json(flag).dump();
  const std::vector<std::string> without = sw->changed(g, options);
  EXPECT_EQ(std::find(without.begin(), without.end(), flag), without.end()) << flag << " still reported with it turned off";
  EXPECT_LT(without.size(), all.size());
  // At O0 the flag is off already: turning it off changes nothing.
  options.backend_options = {{"opt_level", json("O0").dump()}};
  const std::vector<std::string> at_o0 = sw->changed(g, options);
  EXPECT_EQ(std::find(at_o0.begin(), at_o0.end(), flag), at_o0.end());
  options.backend_options["disabled_flags"] = json("iree-hal-dump-executable-files-to=/tmp/x").dump();
  try {
    sw->changed(g, options);
    ADD_FAILURE() << "a flag outside the table was taken";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "backend option disabled_flags: 'iree-hal-dump-executable-files-to=/tmp/x' is not one of IREE's optimisation flags"),
              std::string::npos)
        << e.what();
  }
  options.backend_options = {{"opt_level", json("O4").dump()}};
  try {
    sw->changed(g, options);
    ADD_FAILURE() << "opt_level O4 was taken";
  } catch (const UserError& e) { EXPECT_STREQ(e.what(), "backend option opt_level: 'O4' is not one of O0, O1, O2, O3"); }
  EXPECT_NE(sw->version(), "IREE unknown");
}

// A real failure of IREE's, nothing planted: from O2 it reassociates float reductions, so a sum is
// no longer the in-order float32 sum. The search finds the level, then the one flag of those that
// change the module whose turning off brings the in-order sum back.
TEST(IreeSwitches, BisectNamesTheFlagThatReassociatesASum) {
  if (!python_can("import iree.compiler, iree.runtime, onnx"))
    GTEST_SKIP() << python_interpreter() << " cannot import iree.compiler, iree.runtime and onnx: IREE's switches were not tried";
  const BackendSwitches* sw = backend_named("iree").switches;
  ASSERT_NE(sw, nullptr);
  Graph g = parse_graph("graph r(%x: f32[4, 256]) {\n  %s = sum(%x, dims=[1])\n  return (%s)\n}\n");
  // Values of many magnitudes, so that the order of the additions shows in the rounding.
  std::mt19937 rng(1);
  std::normal_distribution<double> normal;
  std::vector<double> values(4 * 256);
  for (double& v : values) v = static_cast<float>(normal(rng) * std::exp(3 * normal(rng)));
  const Tensor x = Tensor::from_doubles(DType::f32, {4, 256}, values);
  std::vector<double> in_order(4);
  for (size_t row = 0; row < 4; ++row) {
    float acc = 0;
    for (size_t k = 0; k < 256; ++k) acc += static_cast<float>(values[row * 256 + k]);
    in_order[row] = acc;
  }
  BisectStep base;
  base.backend = "iree";
  base.backend_options["opt_level"] = json("O3").dump();
  std::vector<std::string> tries;
  json r = bisect_switches(*sw, g, base, [&](const BisectStep& s, const std::string& what) {
    tries.push_back(what);
    return compile_graph(g, options_of(s))->run({x}).at(0).to_doubles() != in_order;
  });
  EXPECT_EQ(r["level"], "O2") << r.dump();
  EXPECT_EQ(r["optimizer"], "iree-llvmcpu-reassociate-fp-reductions") << r.dump();
  EXPECT_NE(r["finding"].get<std::string>().find("IREE's flag iree-llvmcpu-reassociate-fp-reductions (level O2) causes the failure"),
            std::string::npos)
      << r.dump();
  EXPECT_EQ(tries.front(), "iree at opt_level=O0");
}

// OpenVINO's real properties, through its worker: a switch turned off reaches compile_model and no
// longer changes the graph the CPU plugin executes; bad values and names never leave reprokit.
TEST(OpenVinoSwitches, ASwitchTurnedOffReachesOpenVinoAndNoLongerChangesTheModel) {
  if (!python_can("import openvino, onnx"))
    GTEST_SKIP() << python_interpreter() << " cannot import openvino and onnx (pip install openvino onnx): OpenVINO's switches were not tried";
  const BackendSwitches* sw = backend_named("openvino").switches;
  ASSERT_NE(sw, nullptr);
  Graph g = parse_graph(kMatmulChain);
  CompileOptions options;
  options.backend = "openvino";
  // At reprokit's f32 only the snippets' fusion of the elementwise chain changes the graph.
  EXPECT_EQ(sw->changed(g, options), std::vector<std::string>{"SNIPPETS_MODE"});
  options.backend_options["disabled_properties"] = json("SNIPPETS_MODE").dump();
  EXPECT_EQ(sw->changed(g, options), std::vector<std::string>{});
  if (python_can(kHasBf16)) {
    options.backend_options["INFERENCE_PRECISION_HINT"] = json("bf16").dump();
    EXPECT_EQ(sw->changed(g, options), std::vector<std::string>{"INFERENCE_PRECISION_HINT"});
    options.backend_options.erase("disabled_properties");
    EXPECT_EQ(sw->changed(g, options), (std::vector<std::string>{"INFERENCE_PRECISION_HINT", "SNIPPETS_MODE"}));
  }
  const std::pair<const char*, const char*> bad[] = {
      {"SNIPPETS_MODE", "backend option SNIPPETS_MODE: 'OFF' is not one of ENABLE, IGNORE_CALLBACK, DISABLE"},
      {"EXECUTION_MODE_HINT", "backend option EXECUTION_MODE_HINT: 'OFF' is not ACCURACY or PERFORMANCE"},
      {"disabled_properties", "backend option disabled_properties: 'OFF' is not INFERENCE_PRECISION_HINT or SNIPPETS_MODE"},
  };
  for (const auto& [key, message] : bad) {
    CompileOptions o = options;
    o.backend_options[key] = json("OFF").dump();
    try {
      sw->changed(g, o);
      ADD_FAILURE() << key << "=OFF was taken";
    } catch (const UserError& e) { EXPECT_STREQ(e.what(), message); }
  }
  EXPECT_NE(sw->version(), "OpenVINO unknown");
}

// A real failure of OpenVINO's, nothing planted: asked to infer in bf16, the CPU plugin computes a
// matmul in bf16, far off its float64 value; the search names the property, at either level.
TEST(OpenVinoSwitches, BisectNamesThePropertyThatLowersThePrecision) {
  if (!python_can("import openvino, onnx"))
    GTEST_SKIP() << python_interpreter() << " cannot import openvino and onnx: OpenVINO's switches were not tried";
  if (!python_can(kHasBf16)) GTEST_SKIP() << "this CPU has no bf16 units: OpenVINO's CPU plugin ignores INFERENCE_PRECISION_HINT=bf16 here";
  const BackendSwitches* sw = backend_named("openvino").switches;
  ASSERT_NE(sw, nullptr);
  Graph g = parse_graph(kMatmulChain);
  const std::vector<Tensor> inputs = generate_inputs(g, 3);
  InterpretOptions f64;
  f64.cast_to_f64 = true;
  const std::vector<double> want = interpret(g, inputs, f64).at(0).to_doubles();
  BisectStep base;
  base.backend = "openvino";
  base.backend_options["INFERENCE_PRECISION_HINT"] = json("bf16").dump();
  json r = bisect_switches(*sw, g, base, [&](const BisectStep& s, const std::string&) {
    const std::vector<double> got = compile_graph(g, options_of(s))->run(inputs).at(0).to_doubles();
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]) / std::max(1.0, std::fabs(want[i])));
    return worst > 1e-4;  // float32 rounding is far below; bf16's 8 bits far above
  });
  EXPECT_EQ(r["level"], "ACCURACY") << r.dump();
  EXPECT_EQ(r["optimizer"], "INFERENCE_PRECISION_HINT") << r.dump();
  EXPECT_NE(r["finding"].get<std::string>().find("OpenVINO's property INFERENCE_PRECISION_HINT (level ACCURACY) causes the failure"),
            std::string::npos)
      << r.dump();
}
