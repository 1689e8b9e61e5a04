// analyze: an accuracy injection on one op in the attention example is named as the first
// divergence, with what follows marked inherited; results are never overwritten. --triangulate:
// a fault planted in cpp or in cuda is pinned on that backend (on a GPU; without one it exits 2).
#include <gtest/gtest.h>

#include <map>

#include "../../src/harness/node_accuracy.h"
#include "../codegen/backend_test_util.h"
#include "cli_util.h"
#include "reprokit/ir/text_format.h"

using namespace reprokit;
using namespace reprokit::testing;

TEST(Analyze, NamesTheInjectedNodeAndMarksDownstreamInherited) {
  auto dir = fresh_dir("analyze");
  auto run = reprokit_cli({"run", example("attention"), "--inject", "exp:accuracy"}, dir,
                          {{"REPRO_AFTER", "aot"}, {"REPRO_LEVEL", "4"}, {"REPRO_DIR", "out"}});
  ASSERT_EQ(run.exit_code, 1) << run.err;
  auto b = bundles_in(dir / "out").at(0);
  auto r = reprokit_cli({"analyze", b.string()}, dir);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("determinism: two runs agree bit for bit"), std::string::npos) << r.out;
  auto a = read_json(b / "analyze.json");
  EXPECT_EQ(a["first_divergence"], "p.exp");
  bool seen_first = false;
  int inherited = 0;
  for (auto& n : a["nodes"]) {
    if (n["node"] == "p.exp") {
      seen_first = true;
      EXPECT_EQ(n["origin"], "own");
    } else if (seen_first && !n["passes"].get<bool>()) {
      EXPECT_EQ(n["origin"], "inherited") << n["node"];
      ++inherited;
    }
  }
  EXPECT_GT(inherited, 3);
  EXPECT_TRUE(fs::exists(b / "analyze.svg"));
  reprokit_cli({"analyze", b.string()}, dir);
  EXPECT_TRUE(fs::exists(b / "analyze-2.json")) << "a second analysis must not overwrite the first";
}

// A node that passes only because a relu input within the noise of zero went the other way gets
// the kink line (and "ok (kink)" in analyze's table); one whose error is rounding alone does not.
TEST(Analyze, SaysWhenADecisionNearAKinkExplainsANodesError) {
  Bundle b;
  b.graph = parse_graph("graph g(%x: f32[4]) {\n  %r = relu(%x)\n  %y = mul(%r, 100.0)\n  return (%y)\n}\n");
  b.inputs = {Tensor::from_doubles(DType::f32, {4}, {0.5, -0.25, 0.75, 7e-6})};
  const int r = b.graph.find("r"), y = b.graph.find("y");
  const std::vector<int> captured = {r, y};
  const Reference ref = reference_for(b, captured);
  CapturedRun flipped;  // relu(7e-6) decided as 0
  flipped.values = {Tensor::from_doubles(DType::f32, {4}, {0.5, 0, 0.75, 0}), Tensor::from_doubles(DType::f32, {4}, {50, 0, 75, 0})};
  std::vector<NodeVerdict> v = judge_nodes(b, b.spec.options.compile, captured, flipped, ref);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_TRUE(v[1].passes()) << v[1].why;
  EXPECT_NE(v[1].decided_at_kink.find("%y: its error (largest 0.0007) is more than rounding moves it"), std::string::npos) << v[1].decided_at_kink;
  CapturedRun exact;
  exact.values = {ref.f64[static_cast<size_t>(r)].to(DType::f32), ref.f64[static_cast<size_t>(y)].to(DType::f32)};
  v = judge_nodes(b, b.spec.options.compile, captured, exact, ref);
  EXPECT_TRUE(v[0].passes() && v[1].passes());
  EXPECT_EQ(v[0].decided_at_kink + v[1].decided_at_kink, "");
}

TEST(Analyze, PerNodeCapturesEveryNode) {
  auto dir = fresh_dir("analyze_per_node");
  reprokit_cli({"run", example("mlp"), "--inject", "tanh:accuracy"}, dir, {{"REPRO_AFTER", "aot"}, {"REPRO_LEVEL", "4"}, {"REPRO_DIR", "out"}});
  auto b = bundles_in(dir / "out").at(0);
  auto r = reprokit_cli({"analyze", b.string(), "--per-node"}, dir);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  auto a = read_json(b / "analyze.json");
  EXPECT_EQ(a["first_divergence"], "a.tanh");
  EXPECT_TRUE(a["per_node"].get<bool>());
}

// --triangulate: an accuracy fault planted in one backend is pinned on that backend, node and
// output, while the other backend agrees with float64 (on a GPU only: the cuda side runs there).
struct TriangulateCase {
  const char* backend;  // where the fault is planted (the bundle's backend)
  const char* other;
};
void PrintTo(const TriangulateCase& c, std::ostream* os) { *os << "planted in " << c.backend; }
class Triangulate : public ::testing::TestWithParam<TriangulateCase> {};

TEST_P(Triangulate, PinsAPlantedAccuracyBugOnItsBackend) {
  REQUIRE_GPU();
  const TriangulateCase& c = GetParam();
  auto dir = fresh_dir(std::string("triangulate_") + c.backend);
  auto run = reprokit_cli({"run", example("mlp"), "--backend", c.backend, "--inject", "gelu:accuracy"}, dir,
                          {{"REPRO_AFTER", "dynamo"}, {"REPRO_LEVEL", "4"}, {"REPRO_DIR", "out"}});
  ASSERT_EQ(run.exit_code, 1) << run.out << run.err;
  auto b = bundles_in(dir / "out").at(0);
  auto r = reprokit_cli({"analyze", b.string(), "--triangulate", "--per-node"}, dir);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto t = read_json(b / "triangulate.json");
  EXPECT_EQ(t["recorded_backend"], c.backend);
  EXPECT_TRUE(t["backends"]["cpp"]["runs"].get<bool>()) << r.out;
  EXPECT_TRUE(t["backends"]["cuda"]["runs"].get<bool>()) << r.out;
  EXPECT_EQ(t["first_divergence"][c.backend], "a") << r.out;  // the gelu, its own error
  EXPECT_TRUE(t["first_divergence"][c.other].is_null()) << r.out;
  for (auto& n : t["nodes"]) {
    if (n["node"] == "a") { EXPECT_EQ(n[c.backend]["origin"], "own"); }
    EXPECT_NE(n["wrong_on"], "both") << n["node"];
    EXPECT_NE(n["wrong_on"], c.other) << n["node"];
  }
  // %t comes after the gelu, %h (the first linear) before it.
  std::map<std::string, std::string> outputs;
  for (auto& o : t["outputs"]) outputs[o["output"]] = o["wrong_on"];
  EXPECT_EQ(outputs, (std::map<std::string, std::string>{{"t", c.backend}, {"h", "neither"}})) << r.out;
  EXPECT_NE(r.out.find(std::string("wrong on ") + c.backend), std::string::npos) << r.out;
  reprokit_cli({"analyze", b.string(), "--triangulate"}, dir);
  EXPECT_TRUE(fs::exists(b / "triangulate-2.json")) << "a second triangulation must not overwrite the first";
}

INSTANTIATE_TEST_SUITE_P(Backends, Triangulate, ::testing::Values(TriangulateCase{"cuda", "cpp"}, TriangulateCase{"cpp", "cuda"}),
                         [](const auto& info) { return std::string("planted_in_") + info.param.backend; });

// Without a GPU the cuda side cannot run: the command says why and exits 2, writing nothing.
TEST(TriangulateWithoutAGpu, SaysSoAndExitsTwo) {
  if (have_gpu()) GTEST_SKIP() << "a GPU is here: Triangulate.* runs instead";
  auto dir = fresh_dir("triangulate_no_gpu");
  auto run = reprokit_cli({"run", example("mlp"), "--inject", "gelu:accuracy"}, dir,
                          {{"REPRO_AFTER", "dynamo"}, {"REPRO_LEVEL", "4"}, {"REPRO_DIR", "out"}});
  ASSERT_EQ(run.exit_code, 1) << run.err;
  auto b = bundles_in(dir / "out").at(0);
  auto r = reprokit_cli({"analyze", b.string(), "--triangulate"}, dir);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  // What is missing is named: the driver, or NVRTC where the toolkit has none either.
  EXPECT_TRUE(r.err.find("no CUDA driver") != std::string::npos || r.err.find("NVRTC (libnvrtc.so) was not found") != std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(b / "triangulate.json"));
}

// A bundle whose graph crashes is probed in a child first: analyze says it does not run (and
// what it does) instead of dying, and points at minify and bisect.
TEST(Analyze, ACrashingGraphIsProbedInAChildAndSaysSo) {
  auto dir = fresh_dir("analyze_crash");
  auto run =
      reprokit_cli({"run", example("mlp"), "--inject", "gelu:crash"}, dir, {{"REPRO_AFTER", "dynamo"}, {"REPRO_LEVEL", "3"}, {"REPRO_DIR", "out"}});
  ASSERT_NE(run.exit_code, 0) << run.err;
  auto b = bundles_in(dir / "out").at(0);
  auto r = reprokit_cli({"analyze", b.string()}, dir);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("analyze: the compiled graph does not run (crash: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("use `reprokit minify` or `reprokit bisect`"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(b / "analyze.json"));
}
