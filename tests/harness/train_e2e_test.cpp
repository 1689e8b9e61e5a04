// --train through the whole stack: gradients agree across backends; at REPRO_AFTER=aot a bug that
// only the backward graph has is caught in stage aot_backward with the backward graph's real inputs.
#include <gtest/gtest.h>

#include <cmath>

#include "cli_util.h"
#include "reprokit/runtime/npy.h"

using namespace reprokit;
using namespace reprokit::testing;

TEST(Train, GradientsAgreeAcrossBackends) {
  auto dir = fresh_dir("train_backends");
  for (const char* b : {"eager", "cpp"}) {
    auto r = reprokit_cli({"run", example("mlp"), "--train", "--backend", b, "--save-outputs", std::string("out_") + b}, dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("%grad_w1: f32[32, 16]"), std::string::npos) << r.out;
  }
  for (const char* name : {"grad_w1", "grad_b1", "grad_w2", "t"}) {
    auto a = read_npy((dir / "out_eager" / (std::string(name) + ".npy")).string()).to_doubles();
    auto c = read_npy((dir / "out_cpp" / (std::string(name) + ".npy")).string()).to_doubles();
    ASSERT_EQ(a.size(), c.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], c[i], 1e-4 * (1 + std::fabs(a[i]))) << name << "[" << i << "]";
  }
}

TEST(Train, BackwardOnlyBugIsCaughtInStageAotBackward) {
  auto dir = fresh_dir("train_backward");
  // After decomposition only the backward graph negates (the gradient of sub).
  auto r = reprokit_cli({"run", example("mlp"), "--train", "--inject", "neg:runtime_error"}, dir, {{"REPRO_AFTER", "aot"}, {"REPRO_DIR", "out"}});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  auto b = bundles_in(dir / "out");
  ASSERT_EQ(b.size(), 1u) << r.err;
  auto m = read_json(b[0] / "manifest.json");
  EXPECT_EQ(m["spec"]["stage"], "aot_backward");
  EXPECT_EQ(m["failure"]["kind"], "runtime_error");
  auto rep = reprokit_cli({"repro", (b[0] / "original" / "repro.rk").string()}, dir);
  EXPECT_EQ(rep.exit_code, 1) << rep.out << rep.err;
  auto min = reprokit_cli({"minify", b[0].string()}, dir);
  EXPECT_EQ(min.exit_code, 0) << min.err;
  EXPECT_NE(min.out.find("= neg("), std::string::npos) << min.out;
}

TEST(Train, DynamoLevelAccuracyComparesGradients) {
  auto dir = fresh_dir("train_dynamo_acc");
  auto r = reprokit_cli({"run", example("mlp"), "--train", "--inject", "neg:accuracy"}, dir,
                        {{"REPRO_AFTER", "dynamo"}, {"REPRO_LEVEL", "4"}, {"REPRO_DIR", "out"}});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("output %grad_w1"), std::string::npos) << "the failing outputs are gradients: " << r.err;
}
