// analyze: an accuracy injection on one op in the attention example is named as the first
// divergence, with what follows marked inherited; results are never overwritten.
#include <gtest/gtest.h>

#include "cli_util.h"

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
