// bisect: names the pass and the rewrite planted with --inject-pass, for every pass; says when no
// pass is to blame; reports how many runs the rewrite search took.
#include <gtest/gtest.h>

#include <cmath>

#include "cli_util.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

// Every pass has at least two rewrites to make on this graph.
const char* kAllPasses =
    R"(graph bis(%x: f32[4, 8], %y: f32[4, 8], %z: f32[1, 8, 6, 6], %zs: f32[1, 8, 1, 1], %zw: f32[4, 8, 1, 1], %zt: f32[1, 4, 1, 1], %zv: f32[4, 4, 1, 1]) {
  %dead1 = exp(%x)
  %dead2 = sin(%y)
  %a = mul(%x, %y)
  %a2 = mul(%x, %y)
  %b = add(%a, %a2)
  %b2 = sub(%a, %a2)
  %c1 = full(shape=[4, 8], value=2.0, dtype=f32)
  %c2 = mul(%c1, 3.0)
  %c3 = add(%c2, 1.0)
  %d = mul(%b, 1.0)
  %e = add(%d, 0.0)
  %f = mul(%e, %c3)
  %g = tanh(%f)
  %h = neg(%g)
  %s = sum(%h, dims=[1])
  %t = exp(%b2)
  %u = amax(%t, dims=[1])
  %o = add(%s, %u)
  %v = mul(%y, 0.5)
  %vr = reshape(%v, shape=[32])
  %vt = tanh(%vr)
  %w = sub(%x, %y)
  %wr = reshape(%w, shape=[8, 4])
  %we = exp(%wr)
  %k = mul(%y, 3.0)
  %k1 = abs(%k)
  %k2 = amax(%k, dims=[1])
  %j = sub(%x, 2.0)
  %j1 = neg(%j)
  %j2 = sum(%j, dims=[1])
  %zm = mul(%z, %zs)
  %zc = conv2d(%zm, %zw)
  %zn = mul(%zc, %zt)
  %zd = conv2d(%zn, %zv)
  %p1 = mul(%x, 2.0)
  %p2 = add(%p1, 1.0)
  %pt = permute(%p2, dims=[1, 0])
  %pe = exp(%pt)
  return (%o, %vt, %we, %k1, %k2, %j1, %j2, %zd, %pe)
}
)";

struct PassCase {
  const char* pass;
  int n;
};

nlohmann::json bisect_with(const std::string& inject, const std::string& flag, const std::string& name) {
  auto dir = fresh_dir(name);
  std::ofstream(dir / "bis.rk") << kAllPasses;
  auto run = reprokit_cli({"run", "bis.rk", flag, inject}, dir, {{"REPRO_AFTER", "aot"}, {"REPRO_LEVEL", "4"}, {"REPRO_DIR", "out"}});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  auto b = bundles_in(dir / "out");
  if (b.size() != 1) return {};
  auto r = reprokit_cli({"bisect", b[0].string()}, dir);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  return read_json(b[0] / "bisect.json");
}

class BisectPasses : public ::testing::TestWithParam<PassCase> {};

}  // namespace

TEST_P(BisectPasses, NamesThePassAndTheRewrite) {
  const PassCase& c = GetParam();
  auto result = bisect_with(std::string(c.pass) + ":" + std::to_string(c.n), "--inject-pass", std::string("bisect_") + c.pass);
  ASSERT_FALSE(result.is_null());
  EXPECT_EQ(result["stage"], "cpp with passes");
  EXPECT_EQ(result["pass"], c.pass);
  EXPECT_EQ(result["rewrite"], c.n);
  EXPECT_LE(result["rewrite_runs"].get<int>(), 4);  // log2(R) + 1 for the R <= 8 rewrites here
}

INSTANTIATE_TEST_SUITE_P(EveryPass, BisectPasses,
                         ::testing::Values(PassCase{"dce", 1}, PassCase{"dce", 2}, PassCase{"cse", 1}, PassCase{"constant-folding", 1},
                                           PassCase{"constant-folding", 2}, PassCase{"algebraic-simplification", 2}, PassCase{"reshape-hoisting", 2},
                                           PassCase{"permute-hoisting", 2}, PassCase{"conv-scale-folding", 2}, PassCase{"pointwise-fusion", 3},
                                           PassCase{"pointwise-duplication", 2}, PassCase{"reduction-fusion", 2}),
                         [](const auto& info) {
                           std::string s = std::string(info.param.pass) + "_" + std::to_string(info.param.n);
                           for (auto& ch : s)
                             if (ch == '-') ch = '_';
                           return s;
                         });

TEST(Bisect, ACodegenBugIsNotBlamedOnAPass) {
  auto result = bisect_with("exp:runtime_error", "--inject", "bisect_codegen");
  ASSERT_FALSE(result.is_null());
  EXPECT_EQ(result["stage"], "cpp with no passes (lowering + codegen)");
  EXPECT_TRUE(result["pass"].is_null());
}

TEST(Bisect, BadBundleIsAUsageError) {
  auto dir = fresh_dir("bisect_bad");
  auto r = reprokit_cli({"bisect", (dir / "nothing").string()}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is not a bundle directory"), std::string::npos) << r.err;
}

TEST(Bisect, TrainingBundlesAddTheAutodiffStage) {
  auto dir = fresh_dir("bisect_train");
  auto run = reprokit_cli({"run", example("mlp"), "--train", "--inject", "neg:accuracy"}, dir,
                          {{"REPRO_AFTER", "dynamo"}, {"REPRO_LEVEL", "4"}, {"REPRO_DIR", "out"}});
  ASSERT_EQ(run.exit_code, 1) << run.err;
  auto b = bundles_in(dir / "out").at(0);
  auto r = reprokit_cli({"bisect", b.string()}, dir);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("aot_eager with autodiff and partitioning                   passes"), std::string::npos) << r.out;
  auto result = read_json(b / "bisect.json");
  EXPECT_EQ(result["stage"], "cpp with no passes (lowering + codegen)");
  EXPECT_TRUE(result["pass"].is_null());
}
