// Several input samples (--samples N): samples drawn like the inputs (weights kept, index ranges
// kept, deterministic), bad values of the option refused naming it, the harness recording which
// samples fail, and the minifier keeping a candidate only while it fails on those samples.
#include <gtest/gtest.h>

#include <fstream>

#include "cli_util.h"
#include "reprokit/harness/repro_spec.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/runtime/input_gen.h"

namespace reprokit::testing {
namespace {

TEST(SampleLike, DrawsLikeTheInputsKeepsWeightsAndRanges) {
  Graph g = parse_graph(
      "graph s(%x: f32[2000], %w: f32[4] grad, %i: i64[50], %c: f32[3], %b: bool[100]) {\n"
      "  %y = add(%x, 1.0)\n  return (%y)\n}\n");
  std::vector<double> x(2000), b(100, 0.0);
  for (size_t k = 0; k < x.size(); ++k) x[k] = 5.0 + (k % 2 ? 2.0 : -2.0);  // mean 5, spread 2
  for (size_t k = 0; k < 25; ++k) b[k] = 1;                                 // a quarter true
  std::vector<int64_t> idx(50);
  for (size_t k = 0; k < idx.size(); ++k) idx[k] = 3 + static_cast<int64_t>(k % 5);  // [3, 7]
  std::vector<Tensor> in = {Tensor::from_doubles(DType::f32, {2000}, x), Tensor::from_doubles(DType::f32, {4}, {1, 2, 3, 4}),
                            Tensor::from_int64s(DType::i64, {50}, idx), Tensor::from_doubles(DType::f32, {3}, {7, 7, 7}),
                            Tensor::from_int64s(DType::boolean, {100}, std::vector<int64_t>(b.begin(), b.end()))};
  auto s = sample_like(g, in, 3);
  auto sx = s[0].to_doubles();
  double mean = 0, sq = 0;
  for (double v : sx) mean += v / 2000, sq += v * v / 2000;
  EXPECT_NEAR(mean, 5.0, 0.2);
  EXPECT_NEAR(std::sqrt(sq - mean * mean), 2.0, 0.2);
  EXPECT_NE(sx, x);
  EXPECT_EQ(s[1].to_doubles(), in[1].to_doubles()) << "a weight (grad) is kept";
  for (int64_t v : s[2].to_int64s()) EXPECT_TRUE(v >= 3 && v <= 7) << v;
  EXPECT_EQ(s[3].to_doubles(), (std::vector<double>{7, 7, 7}));
  int trues = 0;
  for (int64_t v : s[4].to_int64s()) trues += v != 0;
  EXPECT_GT(trues, 5);
  EXPECT_LT(trues, 50);
  EXPECT_EQ(sample_like(g, in, 3)[0].to_doubles(), sx) << "the same seed draws the same sample";
  EXPECT_NE(sample_like(g, in, 4)[0].to_doubles(), sx);
}

TEST(Samples, BadValuesAreUsageErrorsNamingTheOption) {
  fs::path d = fresh_dir("samples_bad");
  std::map<std::string, std::string> env = {{"REPRO_AFTER", "aot"}, {"REPRO_DIR", "out"}};
  for (const char* bad : {"0", "-2", "abc", "1001", "99999999999999999999"}) {
    auto r = reprokit_cli({"run", example("mlp"), "--samples", bad}, d, env);
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find("--samples"), std::string::npos) << bad << ": " << r.err;
  }
  auto r = reprokit_cli({"run", example("mlp"), "--samples", "3"}, d);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--samples needs the harness"), std::string::npos) << r.err;
  EXPECT_EQ(reprokit_cli({"run", example("mlp"), "--samples", "3"}, d, env).exit_code, 0) << "no bug: every sample passes";
}

// exp:accuracy_one=40 changes the elements whose value hashes to 0 mod 40: on 32 inputs some
// samples have one, others not. The bundle records which fail; minify keeps them failing.
TEST(Samples, HarnessRecordsFailingSamplesAndMinifyKeepsThemFailing) {
  fs::path d = fresh_dir("samples_minify");
  {
    std::ofstream f(d / "small.rk");
    f << "graph small(%x: f32[4, 8]) {\n  %y = exp(%x)\n  %z = sum(%y, dims=[1])\n  return (%z)\n}\n";
  }
  auto r = reprokit_cli({"run", "small.rk", "--inject", "exp:accuracy_one=40", "--samples", "8"}, d,
                        {{"REPRO_AFTER", "aot"}, {"REPRO_LEVEL", "4"}, {"REPRO_DIR", "out"}});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("of 8 input samples"), std::string::npos) << r.err;
  auto bundles = bundles_in(d / "out");
  ASSERT_EQ(bundles.size(), 1u);
  auto spec = read_json(bundles[0] / "manifest.json")["spec"];
  EXPECT_EQ(spec["sample_seeds"].size(), 7u);
  ASSERT_FALSE(spec["failing_samples"].empty());
  EXPECT_LT(spec["failing_samples"].size(), 8u) << "a hash that hits every sample tests nothing here";
  auto m = reprokit_cli({"minify", bundles[0].string()}, d, {}, 600);
  ASSERT_EQ(m.exit_code, 0) << m.out << m.err;
  EXPECT_NE(m.out.find("verified: REPRODUCED"), std::string::npos) << m.out;
  // The repro keeps the samples: it still fails on each of them.
  EXPECT_EQ(reprokit_cli({"repro", (bundles[0] / "repro.rk").string()}, d).exit_code, 1);
}

TEST(Samples, SpecRejectsBadFailingSamples) {
  nlohmann::json j = ReproSpec{}.to_json();
  j["sample_seeds"] = {1, 2};
  j["failing_samples"] = {0, 3};
  EXPECT_THROW(ReproSpec::from_json(j), UserError);
  j["failing_samples"] = {1, 1};
  EXPECT_THROW(ReproSpec::from_json(j), UserError);
  j["failing_samples"] = {0, 2};
  EXPECT_EQ(ReproSpec::from_json(j).failing_samples, (std::vector<int>{0, 2}));
}

}  // namespace
}  // namespace reprokit::testing
