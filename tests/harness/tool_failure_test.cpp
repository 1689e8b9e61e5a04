// A reprokit process inside a check records its own failure where its caller asked
// (support/tool_failure.h); without the variable it records nothing anywhere.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "../scratch_dir.h"
#include "reprokit/support/tool_failure.h"

using namespace reprokit;
namespace fs = std::filesystem;

TEST(ToolFailure, AnInternalErrorIsRecordedForTheCaller) {
  const fs::path log = reprokit::testing::scratch_root("rk_tool_failure_test_") / "c1.tool-failures";
  fs::remove(log);
  EXPECT_EQ(recorded_tool_failures(log.string()), "");  // no file: nothing recorded
  auto env = tool_failure_environment(log.string(), "/opt/reprokit/bin/reprokit");
  EXPECT_EQ(env.at(kToolFailureLogVariable), log.string());
  EXPECT_EQ(env.at("REPROKIT_EXE"), "/opt/reprokit/bin/reprokit");
  ::setenv(kToolFailureLogVariable, log.string().c_str(), 1);
  report_own_failures_to_caller("compare");
  ::unsetenv(kToolFailureLogVariable);
  record_own_failure("internal error: an output's floor has no element");
  EXPECT_EQ(recorded_tool_failures(log.string()), "reprokit compare: internal error: an output's floor has no element\n");
}
