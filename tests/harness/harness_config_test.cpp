// HarnessConfig::from_env: the defaults of DESIGN.md, every REPRO_* variable read, and a UserError
// naming the variable and its value for each bad value (the CLI turns it into exit status 2).
#include <gtest/gtest.h>

#include <cstdlib>

#include "reprokit/harness/harness_config.h"
#include "reprokit/support/errors.h"

using namespace reprokit;

namespace {

const char* kVars[] = {"REPRO_AFTER", "REPRO_LEVEL", "REPRO_DIR", "REPRO_MINIFY", "REPRO_TOLERANCE", "REPRO_TIMEOUT"};

// Clears the REPRO_* variables for the test and again after it, so no test sees another's.
struct CleanEnv : ::testing::Test {
  void SetUp() override {
    for (auto v : kVars) ::unsetenv(v);
  }
  void TearDown() override { SetUp(); }
};

void expect_rejected(const char* var, const char* value, const std::string& message) {
  ::setenv(var, value, 1);
  try {
    HarnessConfig::from_env();
    ADD_FAILURE() << var << "=" << value << " was accepted";
  } catch (const UserError& e) { EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what(); }
  ::unsetenv(var);
}

}  // namespace

using HarnessConfigEnv = CleanEnv;

TEST_F(HarnessConfigEnv, DefaultsAreTheHarnessOff) {
  HarnessConfig c = HarnessConfig::from_env();
  EXPECT_FALSE(c.enabled());
  EXPECT_EQ(c.level, 2);
  EXPECT_EQ(c.dir, "reprokit_out");
  EXPECT_FALSE(c.minify);
  EXPECT_FALSE(c.tolerance.has_value());
  EXPECT_EQ(c.timeout_s, 0);
}

TEST_F(HarnessConfigEnv, EveryVariableIsRead) {
  ::setenv("REPRO_AFTER", "aot", 1);
  ::setenv("REPRO_LEVEL", "4", 1);
  ::setenv("REPRO_DIR", "/tmp/somewhere", 1);
  ::setenv("REPRO_MINIFY", "1", 1);
  ::setenv("REPRO_TOLERANCE", "0.05", 1);
  ::setenv("REPRO_TIMEOUT", "2.5", 1);
  HarnessConfig c = HarnessConfig::from_env();
  EXPECT_TRUE(c.enabled());
  EXPECT_EQ(c.after, "aot");
  EXPECT_EQ(c.level, 4);
  EXPECT_EQ(c.dir, "/tmp/somewhere");
  EXPECT_TRUE(c.minify);
  ASSERT_TRUE(c.tolerance.has_value());
  EXPECT_DOUBLE_EQ(*c.tolerance, 0.05);
  EXPECT_DOUBLE_EQ(c.timeout_s, 2.5);
}

// auto (and unset) judge against the noise floor: no fixed tolerance.
TEST_F(HarnessConfigEnv, ToleranceAutoMeansTheNoiseFloor) {
  ::setenv("REPRO_TOLERANCE", "auto", 1);
  EXPECT_FALSE(HarnessConfig::from_env().tolerance.has_value());
  ::unsetenv("REPRO_TOLERANCE");
  EXPECT_FALSE(HarnessConfig::from_env().tolerance.has_value());
}

TEST_F(HarnessConfigEnv, BadValuesNameTheVariable) {
  expect_rejected("REPRO_AFTER", "inductor", "REPRO_AFTER=inductor is not one of: dynamo, aot");
  expect_rejected("REPRO_LEVEL", "0", "REPRO_LEVEL=0 is not one of: 1, 2, 3, 4");
  expect_rejected("REPRO_LEVEL", "22", "REPRO_LEVEL=22");
  expect_rejected("REPRO_MINIFY", "yes", "REPRO_MINIFY=yes is not 0 or 1");
  expect_rejected("REPRO_TOLERANCE", "tight", "REPRO_TOLERANCE=tight is neither auto nor a number");
  expect_rejected("REPRO_TOLERANCE", "5e", "REPRO_TOLERANCE=5e is not a number in [0,");
  expect_rejected("REPRO_TOLERANCE", "-1", "REPRO_TOLERANCE=-1 is not a number in [0,");
  expect_rejected("REPRO_TIMEOUT", "-1", "REPRO_TIMEOUT=-1 is not a number in [0,");
  expect_rejected("REPRO_TIMEOUT", "5s", "REPRO_TIMEOUT=5s");
}
