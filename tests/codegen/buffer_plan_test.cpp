// The workspace planner: buffers whose lives overlap never share a byte, buffers whose lives are
// disjoint do, and the cpp backend's workspace is the peak of what is live, not the sum.
#include <gtest/gtest.h>

#include <random>
#include <regex>

#include "../../src/codegen/buffer_plan.h"
#include "backend_test_util.h"

using namespace reprokit;
using namespace reprokit::codegen_detail;
using namespace reprokit::testing;

namespace {

int64_t aligned(int64_t b) { return (std::max<int64_t>(b, 1) + 63) / 64 * 64; }

// Every pair of buffers alive at the same position (a kernel that reads one while it writes the
// other included) occupies disjoint bytes, inside the workspace, 64-byte aligned.
void expect_valid(const std::vector<BufferLife>& lives, const BufferPlan& plan) {
  ASSERT_EQ(plan.offsets.size(), lives.size());
  for (size_t i = 0; i < lives.size(); ++i) {
    EXPECT_EQ(plan.offsets[i] % 64, 0);
    EXPECT_LE(plan.offsets[i] + aligned(lives[i].bytes), plan.bytes);
    for (size_t j = i + 1; j < lives.size(); ++j) {
      const bool together = lives[i].first <= lives[j].last && lives[j].first <= lives[i].last;
      const bool share = plan.offsets[i] < plan.offsets[j] + aligned(lives[j].bytes) && plan.offsets[j] < plan.offsets[i] + aligned(lives[i].bytes);
      EXPECT_FALSE(together && share) << "buffers " << i << " and " << j << " are alive together and overlap";
    }
  }
}

}  // namespace

TEST(BufferPlan, AChainReusesMemoryAndAReaderNeverSharesWithWhatItWrites) {
  // a -> b -> c -> d, each read only by the next kernel: two buffers' worth is enough, and the
  // kernel that reads a while it writes b gets a b apart from a.
  std::vector<BufferLife> lives = {{1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
  BufferPlan plan = plan_buffers(lives);
  expect_valid(lives, plan);
  EXPECT_EQ(plan.bytes, 2 * aligned(1000));
  EXPECT_NE(plan.offsets[0], plan.offsets[1]);
  EXPECT_EQ(plan.offsets[0], plan.offsets[2]);
}

TEST(BufferPlan, FreedNeighboursMergeIntoOneBlockForALargerBuffer) {
  // Two 1000-byte buffers die side by side; a 2000-byte buffer born after them fits where they were.
  std::vector<BufferLife> lives = {{1000, 0, 1}, {1000, 0, 1}, {64, 0, 5}, {2000, 2, 3}};
  BufferPlan plan = plan_buffers(lives);
  expect_valid(lives, plan);
  EXPECT_EQ(plan.bytes, 2 * aligned(1000) + 64);
}

TEST(BufferPlan, RandomLivesNeverOverlapAndStayNearThePeak) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<BufferLife> lives;
    const int n = 1 + static_cast<int>(rng() % 60);
    for (int i = 0; i < n; ++i) {
      const int first = static_cast<int>(rng() % 40);
      lives.push_back({static_cast<int64_t>(rng() % 5000), first, first + static_cast<int>(rng() % 8)});
    }
    BufferPlan plan = plan_buffers(lives);
    expect_valid(lives, plan);
    int64_t sum = 0;
    for (auto& l : lives) sum += aligned(l.bytes);
    EXPECT_LE(plan.bytes, sum);
  }
}

TEST(BufferPlan, TheCppWorkspaceIsThePeakNotTheSum) {
  // Ten matmuls in a chain: ten 64x64 intermediates (160 KiB) of which two are live at a time.
  std::string s = "graph chain(%x: f32[64, 64], %w: f32[64, 64]) {\n  %h0 = matmul(%x, %w)\n";
  for (int i = 1; i < 10; ++i) s += "  %h" + std::to_string(i) + " = matmul(%h" + std::to_string(i - 1) + ", %w)\n";
  Graph g = parse_graph(s + "  return (%h9)\n}\n");
  EXPECT_LT(max_error_vs_f64(g, cpp_options()), 1e-5);
  std::smatch m;
  const std::string source = compile_graph(g, cpp_options())->source();
  ASSERT_TRUE(std::regex_search(source, m, std::regex(R"(rk_graph_workspace_bytes\(void\) \{ return (\d+); \})")));
  EXPECT_EQ(std::stoll(m[1]), 2 * 64 * 64 * 4);
}
