// The benchmark programs' command lines (bench/bench_options.h): what a mistyped option gets is
// the reason and the usage on stderr and exit status 2, never a run with the defaults.
#include "../../bench/bench_options.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <string>
#include <vector>

namespace {

using reprokit::bench::BenchOption;
using reprokit::bench::BenchOptions;

const std::vector<BenchOption> kTable = {
    {"--iters", "N", "timed runs a model"},
    {"--skip", "COLUMN", "leave an engine out (repeatable)"},
    {"--quick", nullptr, "fewer models"},
};

// Parses `args` (after the program's name) against kTable.
BenchOptions parse(std::vector<std::string> args) {
  std::vector<char*> argv{const_cast<char*>("bench_demo")};
  for (std::string& a : args) argv.push_back(a.data());
  return BenchOptions((int)argv.size(), argv.data(), "bench_demo", kTable);
}

TEST(BenchOptions, TakesFlagsNumbersAndRepeatedValues) {
  BenchOptions o = parse({"--iters", "20", "--skip", "inductor", "--quick", "--skip", "openvino"});
  EXPECT_TRUE(o.flag("--quick"));
  EXPECT_EQ(o.number("--iters", 5, 1), 20);
  EXPECT_EQ(o.texts("--skip"), (std::vector<std::string>{"inductor", "openvino"}));
  BenchOptions none = parse({});
  EXPECT_FALSE(none.flag("--quick"));
  EXPECT_EQ(none.number("--iters", 5, 1), 5);
  EXPECT_EQ(none.text("--skip", "nothing"), "nothing");
}

TEST(BenchOptionsDeathTest, AnUnknownOptionIsRefusedWithTheUsage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(parse({"--itres", "20"}), ::testing::ExitedWithCode(2), "bench_demo: unknown option --itres\nusage: bench_demo \\[--iters N\\]");
}

TEST(BenchOptionsDeathTest, AMissingValueIsRefused) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(parse({"--quick", "--iters"}), ::testing::ExitedWithCode(2), "--iters needs a value \\(N\\)");
}

TEST(BenchOptionsDeathTest, ANumberThatDoesNotParseOrIsTooSmallIsRefused) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(parse({"--iters", "2O"}).number("--iters", 5, 1), ::testing::ExitedWithCode(2), "--iters takes a whole number of at least 1, not '2O'");
  EXPECT_EXIT(parse({"--iters", "0"}).number("--iters", 5, 1), ::testing::ExitedWithCode(2), "--iters takes a whole number of at least 1, not '0'");
}

TEST(BenchOptionsDeathTest, HelpPrintsEveryOptionAndExitsZero) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // The usage goes to stdout, here pointed at stderr, which the death test reads (after the line
  // gtest_main prints when the test binary runs again as the dying child).
  EXPECT_EXIT(
      {
        dup2(2, 1);
        parse({"--iters", "3", "--help"});
      },
      ::testing::ExitedWithCode(0),
      "usage: bench_demo \\[--iters N\\] \\[--skip COLUMN\\] \\[--quick\\]\n  --iters N +timed runs a model\n  --skip COLUMN +leave an "
      "engine out \\(repeatable\\)\n  --quick +fewer models\n");
}

}  // namespace
