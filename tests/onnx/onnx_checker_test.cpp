// ONNX's checker in its reprokit child (`reprokit onnx-check`): a refused model exits 2 with the
// reason, an accepted one answers with the inferred types, and the importer says so plainly when
// the child cannot be started at all (no checking in the importer's own process instead).
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "onnx_test_util.h"
#include "reprokit/process/subprocess.h"

namespace reprokit::testing {
namespace {

ProcessResult onnx_check(const std::string& model) {
  ProcessSpec s;
  s.argv = {REPROKIT_EXE, "onnx-check"};
  s.stdin_text = model;
  s.timeout_s = 120;
  return run_process(s);
}

TEST(OnnxCheckChild, RefusesAHostileModelWithExit2AndTheReason) {
  ModelBuilder b(13);
  b.input("x", F32, {2}).output("y", F32, std::vector<int64_t>{2});
  b.node("Add", {"x", "ghost"}, {"y"});  // reads a value nobody defines
  ProcessResult r = onnx_check(b.bytes());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out.substr(0, 2), "EC");
  EXPECT_NE(r.err.find("reprokit onnx-check: error: not a valid ONNX model: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ghost"), std::string::npos) << r.err;
}

TEST(OnnxCheckChild, AnswersWithTheInferredTypes) {
  ModelBuilder b(13);
  b.input("x", F32, {2, 3}).output("y", F32, std::vector<int64_t>{2, 3});
  b.node("Relu", {"x"}, {"r"});
  b.node("Neg", {"r"}, {"y"});
  ProcessResult r = onnx_check(b.bytes());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(r.out.substr(0, 2), "OK");
  onnx::GraphProto types;
  ASSERT_TRUE(types.ParseFromString(r.out.substr(2)));
  bool found = false;
  for (const auto& vi : types.value_info())
    if (vi.name() == "r") found = vi.type().tensor_type().shape().dim_size() == 2;
  EXPECT_TRUE(found) << types.DebugString();
}

TEST(OnnxCheckChild, RefusesWhatIsNoModel) {
  ProcessResult r = onnx_check(std::string("\xff\xff\xff\xff not a protobuf", 20));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("not an ONNX model"), std::string::npos) << r.err;
}

TEST(OnnxCheckChild, AChildThatCannotStartIsAnErrorNotAnUncheckedImport) {
  ModelBuilder b(13);
  b.input("x", F32, {2}).output("y", F32, std::vector<int64_t>{2});
  b.node("Relu", {"x"}, {"y"});
  const char* was = std::getenv("REPROKIT_EXE");
  const std::optional<std::string> saved = was ? std::optional<std::string>(was) : std::nullopt;
  ::setenv("REPROKIT_EXE", "/nonexistent/reprokit", 1);
  const std::string e = import_error(b);
  if (saved) ::setenv("REPROKIT_EXE", saved->c_str(), 1);
  else ::unsetenv("REPROKIT_EXE");
  EXPECT_HAS(e, "test.onnx: ONNX's checker runs in a reprokit child, which cannot be started");
  EXPECT_HAS(e, "REPROKIT_EXE");
  EXPECT_EQ(import_error(b), "(no error)");
}

}  // namespace
}  // namespace reprokit::testing
