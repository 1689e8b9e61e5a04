// The tiled reference convolution against the direct loops, bit for bit: every accumulation
// order, float32 and float64 results, odd sizes, a size of 1, stride, padding, dilation, groups
// (depthwise included), 3-D, and more channels or positions than one tile holds; on every
// instruction set the machine has.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "../../src/runtime/conv_tiles.h"
#include "reprokit/ir/text_format.h"

using namespace reprokit;
using namespace reprokit::kernels;

namespace {

struct ConvCase {
  const char* name;
  Shape x, w;
  bool bias;
  std::string attrs;  // ", stride=[...]" etc.
};

Values random_values(DType dt, const Shape& s, std::mt19937_64& rng, bool with_zeros) {
  std::vector<double> v(static_cast<size_t>(numel(s)));
  std::uniform_real_distribution<double> u(-2, 2);
  for (size_t i = 0; i < v.size(); ++i) {
    double d = u(rng);
    if (dt == DType::f32) d = static_cast<float>(d);
    v[i] = with_zeros && i % 7 == 3 ? 0.0 : d;  // zeros: a negative weight times 0 gives -0
  }
  return Values::floats(dt, s, std::move(v));
}

const char* order_name(AccumulationOrder o) {
  switch (o) {
    case AccumulationOrder::exact: return "exact";
    case AccumulationOrder::forward: return "forward";
    case AccumulationOrder::reversed: return "reversed";
    case AccumulationOrder::pairwise: return "pairwise";
    case AccumulationOrder::blocked: return "blocked";
    case AccumulationOrder::wide: return "wide";
  }
  return "?";
}

class ConvTiles : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvTiles, GiveTheDirectLoopsResultBitForBit) {
  const ConvCase& c = GetParam();
  for (DType dt : {DType::f32, DType::f64}) {
    const std::string ty = dt == DType::f32 ? "f32" : "f64";
    const std::string op = c.x.size() == 5 ? "conv3d" : "conv2d";
    const std::string text =
        fmt::format("graph t(%x: {0}[{1}], %w: {0}[{2}]{3}) {{ %z = {4}(%x, %w{5}{6})\n return (%z) }}", ty, fmt::join(c.x, ", "),
                    fmt::join(c.w, ", "), c.bias ? fmt::format(", %b: {}[{}]", ty, c.w[0]) : "", op, c.bias ? ", %b" : "", c.attrs);
    Graph g = parse_graph(text);
    const Node& n = g.node(g.outputs[0]);
    std::mt19937_64 rng(7);
    std::vector<Values> a = {random_values(dt, c.x, rng, true), random_values(dt, c.w, rng, false)};
    if (c.bias) a.push_back(random_values(dt, {c.w[0]}, rng, false));
    ASSERT_TRUE(conv_tiles_apply(a[1]));
    for (AccumulationOrder o : {AccumulationOrder::exact, AccumulationOrder::forward, AccumulationOrder::reversed, AccumulationOrder::pairwise,
                                AccumulationOrder::blocked, AccumulationOrder::wide}) {
      const std::vector<double> direct = conv_direct(n, a, n.type.shape, o);
      for (TileIsa isa : tile_isas_here()) {  // each instruction set this machine has
        const std::vector<double> tiled = conv_tiled(n, a, n.type.shape, o, isa);
        ASSERT_EQ(tiled.size(), direct.size());
        ASSERT_GT(tiled.size(), 0u);
        for (size_t i = 0; i < tiled.size(); ++i)
          ASSERT_EQ(std::memcmp(&tiled[i], &direct[i], sizeof(double)), 0) << ty << " " << order_name(o) << " isa " << static_cast<int>(isa)
                                                                           << " element " << i << ": tiled " << tiled[i] << ", direct " << direct[i];
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvTiles,
    ::testing::Values(ConvCase{"one_by_one", {1, 1, 1, 1}, {1, 1, 1, 1}, false, ""},
                      ConvCase{"odd_sizes_padding", {2, 3, 7, 5}, {5, 3, 3, 3}, true, ", padding=[1, 1]"},
                      ConvCase{"stride_dilation", {1, 4, 11, 9}, {6, 4, 3, 2}, true, ", stride=[2, 3], padding=[2, 1], dilation=[2, 1]"},
                      ConvCase{"groups", {1, 6, 5, 6}, {9, 2, 3, 3}, true, ", padding=[1, 1], groups=3"},
                      ConvCase{"depthwise", {2, 5, 9, 9}, {5, 1, 3, 3}, false, ", stride=[2, 2], padding=[1, 1], groups=5"},
                      // more output channels than one work item, taps past the pairwise levels' first few
                      ConvCase{"many_channels", {1, 40, 6, 6}, {70, 40, 3, 3}, true, ", padding=[1, 1]"},
                      ConvCase{"positions_past_a_chunk", {1, 2, 13, 17}, {3, 2, 1, 1}, false, ""},
                      ConvCase{"padding_only_window", {1, 1, 2, 2}, {1, 1, 3, 3}, true, ", padding=[2, 2]"},
                      ConvCase{"three_d", {1, 3, 4, 5, 3}, {4, 3, 2, 3, 2}, true, ", stride=[1, 2, 1], padding=[1, 0, 1]"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ConvTilesApply, OnlyToFiniteWeights) {
  EXPECT_TRUE(conv_tiles_apply(Values::floats(DType::f32, {2}, {1.0, -0.0})));
  EXPECT_FALSE(conv_tiles_apply(Values::floats(DType::f32, {2}, {1.0, INFINITY})));
  EXPECT_FALSE(conv_tiles_apply(Values::floats(DType::f32, {2}, {NAN, 1.0})));
}

}  // namespace
