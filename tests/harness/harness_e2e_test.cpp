// End to end through `reprokit run`: for each failure kind at both levels the bundle exists, its
// manifest names the kind, and `reprokit repro` on the un-minified repro reproduces it; with no
// injection nothing is written.
#include <gtest/gtest.h>

#include "cli_util.h"

using namespace reprokit;
using namespace reprokit::testing;

struct KindCase {
  const char* kind;
  int level;
  const char* after;
};
// How ctest lists a case (else gtest prints the struct's bytes).
void PrintTo(const KindCase& c, std::ostream* os) { *os << c.kind << " at level " << c.level << ", REPRO_AFTER=" << c.after; }

class HarnessKinds : public ::testing::TestWithParam<KindCase> {};

TEST_P(HarnessKinds, BundleManifestAndRepro) {
  const KindCase& c = GetParam();
  auto dir = fresh_dir(std::string("kind_") + c.kind + "_" + c.after);
  auto r = reprokit_cli({"run", example("mlp"), "--inject", std::string("gelu:") + c.kind}, dir,
                        {{"REPRO_AFTER", c.after}, {"REPRO_LEVEL", std::to_string(c.level)}, {"REPRO_DIR", "out"}, {"REPRO_TIMEOUT", "2"}});
  std::string kind = c.kind;
  if (kind == "crash") EXPECT_EQ(r.signal, 11) << r.err;
  else if (kind == "hang") EXPECT_EQ(r.exit_code, 124) << r.err;
  else EXPECT_EQ(r.exit_code, 1) << r.err;
  auto bundles = bundles_in(dir / "out");
  ASSERT_EQ(bundles.size(), 1u) << r.err;
  auto manifest = read_json(bundles[0] / "manifest.json");
  EXPECT_EQ(manifest["format_version"], 1);
  EXPECT_EQ(manifest["spec"]["stage"], std::string(c.after) == "aot" ? "aot_forward" : "dynamo");
  std::string recorded =
      kind == "crash" ? read_json(bundles[0] / "crash.json")["kind"].get<std::string>() : manifest["failure"]["kind"].get<std::string>();
  EXPECT_EQ(recorded, kind == "hang" ? "timeout" : kind);
  EXPECT_TRUE(fs::exists(bundles[0] / "minifier_launcher"));
  // The bundle is named after the failure (a crash too: the signal handler renames it), and the
  // path printed last is the one that exists.
  const std::string recorded_name = bundles[0].filename().string();
  EXPECT_NE(recorded_name.find("-" + recorded + "-"), std::string::npos) << recorded_name;
  EXPECT_EQ(recorded_name.find("pending"), std::string::npos) << recorded_name;
  EXPECT_NE(r.err.find("wrote out/" + recorded_name + "/\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("minify with: out/" + recorded_name + "/minifier_launcher"), std::string::npos) << r.err;
  // The kind is said once: no "accuracy: accuracy" in the report or the messages.
  std::string report = read_text(bundles[0] / "original" / "BUG_REPORT.md");
  EXPECT_EQ(report.find(recorded + ": " + recorded), std::string::npos) << report;
  EXPECT_EQ(r.err.find(recorded + ": " + recorded), std::string::npos) << r.err;
  auto rep = reprokit_cli({"repro", (bundles[0] / "original" / "repro.rk").string()}, dir);
  EXPECT_EQ(rep.exit_code, 1) << rep.out << rep.err;
  EXPECT_NE(rep.out.find("REPRODUCED: " + (kind == "hang" ? std::string("timeout") : kind)), std::string::npos) << rep.out << rep.err;
}

INSTANTIATE_TEST_SUITE_P(Kinds, HarnessKinds,
                         ::testing::Values(KindCase{"compile_error", 2, "dynamo"}, KindCase{"compile_error", 2, "aot"},
                                           KindCase{"runtime_error", 2, "dynamo"}, KindCase{"runtime_error", 2, "aot"},
                                           KindCase{"crash", 3, "dynamo"}, KindCase{"crash", 3, "aot"}, KindCase{"hang", 2, "dynamo"},
                                           KindCase{"hang", 2, "aot"}, KindCase{"accuracy", 4, "dynamo"}, KindCase{"accuracy", 4, "aot"}),
                         [](const auto& info) { return std::string(info.param.kind) + "_" + info.param.after; });

TEST(Harness, NothingIsWrittenWithoutAFailure) {
  for (int level = 1; level <= 4; ++level)
    for (const char* after : {"dynamo", "aot"}) {
      auto dir = fresh_dir(std::string("clean_") + after + std::to_string(level));
      auto r = reprokit_cli({"run", example("mlp")}, dir, {{"REPRO_AFTER", after}, {"REPRO_LEVEL", std::to_string(level)}, {"REPRO_DIR", "out"}});
      EXPECT_EQ(r.exit_code, 0) << r.err;
      EXPECT_TRUE(bundles_in(dir / "out").empty()) << "level " << level << " " << after;
    }
}

TEST(Harness, EarlierBundlesAreNeverOverwritten) {
  auto dir = fresh_dir("twice");
  for (int i = 0; i < 2; ++i)
    reprokit_cli({"run", example("mlp"), "--inject", "gelu:runtime_error"}, dir, {{"REPRO_AFTER", "dynamo"}, {"REPRO_DIR", "out"}});
  EXPECT_EQ(bundles_in(dir / "out").size(), 2u);
}

TEST(Harness, BadEnvironmentValuesAreUsageErrors) {
  auto dir = fresh_dir("badenv");
  auto r = reprokit_cli({"run", example("mlp")}, dir, {{"REPRO_AFTER", "inductor"}});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("REPRO_AFTER=inductor is not one of: dynamo, aot"), std::string::npos) << r.err;
  r = reprokit_cli({"run", example("mlp")}, dir, {{"REPRO_LEVEL", "7"}});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("REPRO_LEVEL=7"), std::string::npos) << r.err;
  r = reprokit_cli({"run", example("mlp"), "--inject", "gelu:explode"}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown kind 'explode'"), std::string::npos) << r.err;
}
