// --train through the whole stack: gradients agree across backends; at REPRO_AFTER=aot a bug that
// only the backward graph has is caught in stage aot_backward with the backward graph's real inputs.
#include <gtest/gtest.h>

#include <cmath>

#include "../ir/all_ops.h"
#include "cli_util.h"
#include "reprokit/codegen/compiler.h"
#include "reprokit/harness/repro_spec.h"
#include "reprokit/harness/stack.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/runtime/input_gen.h"
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
  // cpp's outputs and gradients by the project's accuracy rule (auto) on the joint graph, on the
  // inputs the CLI drew (seed 0).
  Graph g = load_module_file(example("mlp")).entry();
  StackResult cpp;
  for (int o : g.outputs) cpp.outputs.push_back(read_npy((dir / "out_cpp" / (g.node(o).name + ".npy")).string()));
  for (const char* name : {"grad_w1", "grad_b1", "grad_w2"}) cpp.grads.push_back(read_npy((dir / "out_cpp" / (std::string(name) + ".npy")).string()));
  ReproSpec spec;
  spec.stage = "dynamo";
  spec.options.train = true;
  Failure f = check_stage_accuracy(spec, g, assemble_inputs(g, {}, "", 0), cpp);
  EXPECT_FALSE(f.failed()) << f.message;
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

// Regression: at the dynamo level with --train, aot decomposed gelu away before the inner compiler
// resolved --inject gelu:KIND, so the injection silently did nothing (exit 0, no bundle).
TEST(Train, CompositeOpInjectionSurvivesAotAtTheDynamoLevel) {
  Graph g = load_module_file(example("mlp")).entry();
  StackOptions o;
  o.train = true;
  o.compile.cache_dir = std::string(REPROKIT_BINARY_DIR) + "/test-cache";
  o.compile.injections = {parse_fault_injection("gelu:runtime_error")};
  try {
    run_stage("dynamo", g, generate_inputs(g, 1), o);
    FAIL() << "the injected runtime error did not happen";
  } catch (const CompileFailure& e) {
    EXPECT_EQ(e.kind, FailureKind::runtime_error);
    EXPECT_NE(std::string(e.what()).find("injected runtime error in node %a"), std::string::npos) << e.what();
  }
  auto dir = fresh_dir("train_dynamo_composite");
  auto r = reprokit_cli({"run", example("mlp"), "--train", "--inject", "gelu:accuracy"}, dir,
                        {{"REPRO_AFTER", "dynamo"}, {"REPRO_LEVEL", "4"}, {"REPRO_DIR", "out"}});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  auto b = bundles_in(dir / "out");
  ASSERT_EQ(b.size(), 1u) << r.err;
  EXPECT_EQ(read_json(b[0] / "manifest.json")["failure"]["kind"], "accuracy");
}

TEST(Train, EveryOpAndExampleModelGradientsMatchEagerThroughCpp) {
  std::vector<std::pair<std::string, Graph>> graphs;
  for (auto name : {"mlp", "attention", "embedding_classifier", "mixed_precision"}) graphs.push_back({name, load_module_file(example(name)).entry()});
  graphs.push_back({"all_ops", parse_graph(kAllOpsGraph)});
  for (auto& [name, g] : graphs) {
    SCOPED_TRACE(name);
    bool any_grad = false;
    for (auto& n : g.nodes) any_grad |= n.is_input() && n.type.requires_grad;
    if (!any_grad) continue;
    auto inputs = generate_inputs(g, 3);
    StackOptions eager, cpp;
    eager.train = cpp.train = true;
    eager.compile.backend = "eager";
    cpp.compile.backend = "cpp";
    cpp.compile.cache_dir = std::string(REPROKIT_BINARY_DIR) + "/test-cache";
    auto a = run_stage("dynamo", g, inputs, eager), b = run_stage("dynamo", g, inputs, cpp);
    ASSERT_EQ(a.grads.size(), b.grads.size());
    ASSERT_FALSE(a.grads.empty());
    // cpp's outputs and gradients by the project's rule (auto) against the joint graph.
    ReproSpec spec;
    spec.stage = "dynamo";
    spec.options = cpp;
    Failure f = check_stage_accuracy(spec, g, inputs, b);
    EXPECT_FALSE(f.failed()) << f.message;
  }
}
