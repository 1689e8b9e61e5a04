// A failure that names a node of the model is tried on that node first: `reprokit reduce` of a
// model whose check prints a compiler's message naming the culprit ends in one check of it alone,
// or of it with the nodes that feed it (a fusion); a name the message quotes counts, a word of
// prose does not, and of two names that overlap the longer one is meant.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../harness/cli_util.h"
#include "onnx_test_util.h"
#include "reprokit/onnx/onnx_original_nodes.h"

namespace reprokit::testing {
namespace {

namespace fs = std::filesystem;

// A chain of 24 named nodes; node "/blk12/Tanh" is the one the check's compiler refuses, and
// "/blk7/Sigmoid" feeds "/blk7/Mul" beside the chain (x * sigmoid(x), a fused pattern).
std::string named_chain() {
  ModelBuilder b(17, "chain");
  b.input("x", F32, {4, 8}).output("y", F32);
  std::string at = "x";
  for (int i = 0; i < 24; ++i) {
    const std::string out = "v" + std::to_string(i);
    if (i == 12) {
      b.node("Tanh", {at}, {out}, "/blk12/Tanh");
    } else if (i == 7) {
      b.node("Sigmoid", {at}, {"sig7"}, "/blk7/Sigmoid");
      b.node("Mul", {at, "sig7"}, {out}, "/blk7/Mul");
    } else {
      b.node(i % 2 ? "Relu" : "Neg", {at}, {out}, "/blk" + std::to_string(i) + "/Op");
    }
    at = out;
  }
  b.node("Abs", {at}, {"y"}, "/head/Abs");
  return b.bytes();
}

// named_chain() in a fresh directory, reduced with a check script of `body` ("$1" is the model).
struct Reduced {
  fs::path dir;
  ProcessResult run;
};
Reduced reduce_named_chain(const std::string& name, const std::string& body) {
  fs::path dir = fresh_dir(name);
  { std::ofstream(dir / "m.onnx", std::ios::binary) << named_chain(); }
  { std::ofstream(dir / "check.sh") << "#!/bin/sh\n" << body; }
  fs::permissions(dir / "check.sh", fs::perms::owner_all);
  return {dir, reprokit_cli({"reduce", "m.onnx", "--check", (dir / "check.sh").string() + " {}", "-o", "out"}, dir)};
}

TEST(FailureNamedNodes, QuotedNamesCountAndTheLongestOverlapWins) {
  ModelBuilder b(17, "g");
  b.input("x", F32, {2}).output("y", F32);
  b.node("Relu", {"x"}, {"r"}, "/Mul");
  b.node("Neg", {"r"}, {"n"}, "/Mul_1");
  b.node("Abs", {"n"}, {"output"}, "/Abs");
  b.node("Exp", {"output"}, {"y"}, "/Exp");
  const std::string bytes = b.bytes();
  ImportOptions o;
  o.keep_original_nodes = true;
  ImportedModel im = import_onnx_bytes(bytes, "g.onnx", o);
  OriginalOnnxModel model(bytes, im.graph, im.origins, "g.onnx");
  EXPECT_EQ(model.nodes_named_in("Failed to find kernel (node:'/Mul/QuickGeluFusion/' ep:'CPU')"), std::vector<int>{0});
  EXPECT_EQ(model.nodes_named_in("node with name '/Mul_1' and then \"/Exp\""), (std::vector<int>{1, 3}));
  EXPECT_EQ(model.nodes_named_in("Op with name (/Abs) domain"), std::vector<int>{2});
  EXPECT_EQ(model.nodes_named_in("the output is wrong"), std::vector<int>{});       // prose, not a name
  EXPECT_EQ(model.nodes_named_in("tensor 'output' has NaN"), std::vector<int>{2});  // an output name, quoted
  EXPECT_EQ(model.nodes_named_in("/Mul_10 and /Abs"), std::vector<int>{});          // unquoted
}

TEST(FailureNamedNodes, ANamedCulpritIsReducedToInOneCheck) {
  auto [dir, r] = reduce_named_chain("reduce_named_node",
                                     "if grep -q Tanh \"$1\"; then echo \"NOT_IMPLEMENTED : Could not find an implementation for Tanh(13) "
                                     "node with name '/blk12/Tanh'\"; exit 1; fi\nexit 0\n");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("the failure names node 13 '/blk12/Tanh' (Tanh): tried first alone, then with the nodes that feed it\n"), std::string::npos)
      << r.err;
  const auto report = read_json(dir / "out" / "report.json");
  EXPECT_EQ(report["model_nodes"], nlohmann::json::array({"Tanh"}));
  EXPECT_EQ(report["per_strategy"]["named-in-failure"]["queries"], 1);
  EXPECT_EQ(report["per_strategy"]["named-in-failure"]["successes"], 1);
  EXPECT_FALSE(report["per_strategy"].contains("truncate")) << report["per_strategy"];  // one node: nothing left to search
  // --skip named-in-failure: the search finds it alone, in more checks.
  auto s = reprokit_cli({"reduce", "m.onnx", "--check", (dir / "check.sh").string() + " {}", "-o", "skip", "--skip", "named-in-failure"}, dir);
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const auto skipped = read_json(dir / "skip" / "report.json");
  EXPECT_EQ(skipped["model_nodes"], nlohmann::json::array({"Tanh"}));
  EXPECT_FALSE(skipped["per_strategy"].contains("named-in-failure"));
  EXPECT_GT(skipped["queries"].get<int>(), report["queries"].get<int>() + 2);
}

TEST(FailureNamedNodes, AFusionNamedAfterItsLastNodeIsTriedWithWhatFeedsIt) {
  // Interesting while a Sigmoid feeds a Mul (an ONNX file names its nodes' op types in order).
  auto [dir, r] = reduce_named_chain("reduce_named_fusion",
                                     "if grep -q Sigmoid \"$1\" && grep -q Mul \"$1\"; then echo \"Failed to find kernel for QuickGelu(1) "
                                     "(node:'/blk7/Mul/QuickGeluFusion/' ep:'CPUExecutionProvider')\"; exit 1; fi\nexit 0\n");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("'/blk7/Mul' (Mul): tried first alone, then with the nodes that feed it\n"), std::string::npos) << r.err;
  const auto report = read_json(dir / "out" / "report.json");
  EXPECT_EQ(report["model_nodes"], nlohmann::json::array({"Sigmoid", "Mul"}));
  EXPECT_EQ(report["per_strategy"]["named-in-failure"]["queries"], 2);  // alone (not interesting), then with its feeders
  EXPECT_EQ(report["per_strategy"]["named-in-failure"]["successes"], 1);
}

TEST(FailureNamedNodes, AWrongNameCostsItsGuessesAndTheSearchGoesOn) {
  // The message names the head, but the Tanh is what fails.
  auto [dir, r] = reduce_named_chain("reduce_named_wrong", "if grep -q Tanh \"$1\"; then echo \"error in node '/head/Abs'\"; exit 1; fi\nexit 0\n");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto report = read_json(dir / "out" / "report.json");
  EXPECT_EQ(report["model_nodes"], nlohmann::json::array({"Tanh"}));
  EXPECT_EQ(report["per_strategy"]["named-in-failure"]["successes"], 0);
  EXPECT_LE(report["per_strategy"]["named-in-failure"]["queries"].get<int>(), 2);
}

}  // namespace
}  // namespace reprokit::testing
