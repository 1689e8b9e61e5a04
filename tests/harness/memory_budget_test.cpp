// The memory budget (runtime/memory_budget.h): a small model that asks for a huge value is refused
// with exit 2 and a message naming REPRO_MEMORY_BUDGET, before it allocates (not after the OOM
// killer); a bad budget is exit 2 naming the variable; a model within the budget runs.
#include <gtest/gtest.h>

#include <fstream>

#include "cli_util.h"

using namespace reprokit;
using namespace reprokit::testing;

TEST(MemoryBudget, AHugeValueIsRefusedBeforeItIsAllocated) {
  const fs::path root = fresh_dir("memory_budget");
  // 168 bytes of text, 400 million elements: 1.6 GB as f32, 3.2 GB as the reference's doubles.
  write_text(root / "big.rk", "graph big(%x: f32[2]) {\n  %y = full(shape=[20000, 20000], value=1.5)\n  %s = sum(%y)\n  return (%s)\n}\n");
  for (const char* backend : {"eager", "cpp"}) {
    auto r = reprokit_cli({"run", (root / "big.rk").string(), "--backend", backend}, root, {{"REPRO_MEMORY_BUDGET", "256"}});
    EXPECT_EQ(r.exit_code, 2) << backend << ": " << r.err;
    EXPECT_NE(r.err.find("memory budget of 256 MB"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("REPRO_MEMORY_BUDGET"), std::string::npos) << r.err;
  }
  // Under the harness the refusal is bad input too, not a bug of the compiler under test.
  auto h = reprokit_cli({"run", (root / "big.rk").string(), "--backend", "cpp"}, root,
                        {{"REPRO_MEMORY_BUDGET", "256"}, {"REPRO_AFTER", "aot"}, {"REPRO_LEVEL", "4"}, {"REPRO_DIR", (root / "out").string()}});
  EXPECT_EQ(h.exit_code, 2) << h.out << h.err;
  EXPECT_TRUE(bundles_in(root / "out").empty());
}

TEST(MemoryBudget, ABadBudgetNamesTheVariableAndASmallModelRunsWithinIt) {
  const fs::path root = fresh_dir("memory_budget_bad");
  write_text(root / "m.rk", "graph m(%x: f32[64, 64]) {\n  %y = exp(%x)\n  %z = sum(%y)\n  return (%z)\n}\n");
  for (const char* bad : {"lots", "-5", "0", "nan"}) {
    auto r = reprokit_cli({"run", (root / "m.rk").string(), "--backend", "eager"}, root, {{"REPRO_MEMORY_BUDGET", bad}});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find("REPRO_MEMORY_BUDGET"), std::string::npos) << r.err;
  }
  auto ok = reprokit_cli({"run", (root / "m.rk").string(), "--backend", "cpp"}, root,
                         {{"REPRO_MEMORY_BUDGET", "64"}, {"REPRO_AFTER", "aot"}, {"REPRO_LEVEL", "4"}, {"REPRO_DIR", (root / "out").string()}});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

// What the count of tensors does not see is seen through the resident size: `run` prints its
// outputs' statistics from a copy as doubles, twice the size of an f32 value, and that copy took
// a process under REPRO_MEMORY_BUDGET=300 to 400 MB.
TEST(MemoryBudget, CopiesTheTensorCountDoesNotSeeAreJudgedBeforeTheyAreMade) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's shadow memory and quarantine of freed blocks inflate the resident size this rule reads";
#endif
  const fs::path root = fresh_dir("memory_budget_copies");
  write_text(root / "m.rk", "graph m(%x: f32[25000000]) {\n  %y = exp(%x)\n  return (%y)\n}\n");  // 100 MB in, 100 MB out
  auto r = reprokit_cli({"run", (root / "m.rk").string(), "--backend", "cpp"}, root, {{"REPRO_MEMORY_BUDGET", "300"}});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("a value's copy as doubles needs"), std::string::npos) << r.err;
  auto roomy = reprokit_cli({"run", (root / "m.rk").string(), "--backend", "cpp"}, root, {{"REPRO_MEMORY_BUDGET", "700"}});
  EXPECT_EQ(roomy.exit_code, 0) << roomy.err;
}

// Inputs too large for the budget together are refused before the first is drawn (a 1e9-element
// input was drawn in full, for minutes, before the model was refused).
TEST(MemoryBudget, GeneratedInputsAreWeighedBeforeAnyIsDrawn) {
  const fs::path root = fresh_dir("memory_budget_inputs");
  write_text(root / "m.rk", "graph m(%a: f32[50000000], %b: f32[50000000]) {\n  %y = add(%a, %b)\n  return (%y)\n}\n");  // 2 x 200 MB
  auto r = reprokit_cli({"run", (root / "m.rk").string(), "--backend", "eager"}, root, {{"REPRO_MEMORY_BUDGET", "300"}});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("the model's generated inputs need 381 MB more"), std::string::npos) << r.err;
}
