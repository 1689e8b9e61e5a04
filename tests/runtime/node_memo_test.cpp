// The node memo: a run that remembers gives every value the run without it gives, bit for bit; a
// part of the graph on the same inputs takes its nodes from the memo; other values, or runs that
// draw random numbers, never do.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "reprokit/ir/text_format.h"
#include "reprokit/runtime/interpreter.h"
#include "reprokit/runtime/node_memo.h"

using namespace reprokit;

namespace {

// A small CNN block, with sums, a comparison and a literal: every kind of node the options touch.
const char* kFull = R"(graph t(%x: f32[1, 3, 6, 6], %w: f32[4, 3, 3, 3], %b: f32[4], %m: f32[16, 5]) {
  %c = conv2d(%x, %w, %b, padding=[1, 1])
  %r = relu(%c)
  %f = reshape(%r, shape=[9, 16])
  %y = matmul(%f, %m)
  %s = sum(%y, dims=[1])
  %k = gt(%s, 0.25)
  %z = mul(%y, 0.5)
  return (%z, %k)
})";
// Its first nodes, as a minifier's truncated candidate keeps them.
const char* kPrefix = R"(graph t(%x: f32[1, 3, 6, 6], %w: f32[4, 3, 3, 3], %b: f32[4], %m: f32[16, 5]) {
  %c = conv2d(%x, %w, %b, padding=[1, 1])
  %r = relu(%c)
  %f = reshape(%r, shape=[9, 16])
  %y = matmul(%f, %m)
  return (%y)
})";

std::vector<Tensor> inputs_of(const Graph& g, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<Tensor> in;
  for (int i = 0; i < g.num_inputs(); ++i) {
    const auto& t = g.node(i).type;
    std::vector<double> v(static_cast<size_t>(t.numel()));
    for (double& d : v) d = u(rng);
    in.push_back(Tensor::from_doubles(t.dtype, t.shape, v));
  }
  return in;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.data(), cb.data(), static_cast<size_t>(ca.numel()) * dtype_size(ca.dtype())) == 0;
}

void expect_same(const std::vector<Tensor>& a, const std::vector<Tensor>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t k = 0; k < a.size(); ++k) EXPECT_TRUE(same_bits(a[k], b[k])) << what << ": value " << k;
}

std::vector<InterpretOptions> option_sets() {
  std::vector<InterpretOptions> v;
  for (AccumulationOrder o : {AccumulationOrder::exact, AccumulationOrder::forward, AccumulationOrder::reversed, AccumulationOrder::pairwise,
                              AccumulationOrder::blocked, AccumulationOrder::wide}) {
    InterpretOptions x;
    x.accumulation = o;
    v.push_back(x);
  }
  InterpretOptions f64, kinks;
  f64.cast_to_f64 = true;
  kinks.flip_kinks_band = 0.5;  // wide: some decisions go the other way
  v.push_back(f64);
  v.push_back(kinks);
  return v;
}

class NodeMemo : public ::testing::Test {
 protected:
  void TearDown() override { enable_node_memo(0); }
};

TEST_F(NodeMemo, RemembersWithoutChangingAValueAndAPartOfTheGraphReusesIt) {
  const Graph full = parse_graph(kFull), prefix = parse_graph(kPrefix);
  const std::vector<Tensor> in = inputs_of(full, 1);
  for (const InterpretOptions& o : option_sets()) {
    enable_node_memo(0);
    const std::vector<Tensor> plain = interpret_all(full, in, o), plain_prefix = interpret_all(prefix, in, o);
    enable_node_memo(size_t{64} << 20);
    expect_same(interpret_all(full, in, o), plain, "the first run, remembering");
    const NodeMemoStats before = node_memo_stats();
    expect_same(interpret_all(prefix, in, o), plain_prefix, "the part, from the memo");
    const NodeMemoStats after = node_memo_stats();
    EXPECT_EQ(after.hits - before.hits, 4u) << "each of the part's four nodes is remembered";
    EXPECT_EQ(after.misses, before.misses);
  }
}

TEST_F(NodeMemo, OtherInputValuesAreNeverTakenForTheRemembered) {
  const Graph full = parse_graph(kFull);
  std::vector<Tensor> in = inputs_of(full, 1);
  enable_node_memo(size_t{64} << 20);
  interpret_all(full, in);
  in[3] = inputs_of(full, 2)[3];  // another %m: the matmul and everything after it change
  const NodeMemoStats before = node_memo_stats();
  const std::vector<Tensor> got = interpret_all(full, in);
  EXPECT_EQ(node_memo_stats().hits - before.hits, 3u) << "conv2d, relu and reshape do not read %m";
  enable_node_memo(0);
  expect_same(got, interpret_all(full, in), "after another input value");
}

TEST_F(NodeMemo, RunsThatDrawRandomNumbersNeverUseIt) {
  const Graph full = parse_graph(kFull);
  const std::vector<Tensor> in = inputs_of(full, 1);
  enable_node_memo(size_t{64} << 20);
  InterpretOptions ulp;
  ulp.perturb_values_seed = 1;
  interpret_all(full, in, ulp);
  const NodeMemoStats before = node_memo_stats();
  interpret_all(full, in, ulp);
  const NodeMemoStats after = node_memo_stats();
  EXPECT_EQ(after.hits, before.hits);
  EXPECT_EQ(after.misses, before.misses);
  EXPECT_EQ(after.bytes, 0u);
}

TEST_F(NodeMemo, ACallerChangingAResultDoesNotChangeWhatIsRemembered) {
  const Graph full = parse_graph(kFull);
  const std::vector<Tensor> in = inputs_of(full, 1);
  enable_node_memo(size_t{64} << 20);
  const std::vector<Tensor> first = interpret_all(full, in);
  std::vector<Tensor> second = interpret_all(full, in);
  Tensor& z = second[static_cast<size_t>(full.find("z"))];
  z.set(0, 1234.5);
  expect_same(interpret_all(full, in), first, "after a caller wrote into a remembered value");
}

TEST_F(NodeMemo, EmptyValuesAreRememberedToo) {
  const Graph g = parse_graph("graph t(%x: f32[0, 3]) { %r = relu(%x)\n %s = sum(%r, dims=[0])\n return (%s) }");
  const std::vector<Tensor> in = {Tensor::zeros(DType::f32, {0, 3})};
  enable_node_memo(size_t{1} << 20);
  const std::vector<Tensor> first = interpret_all(g, in);
  const NodeMemoStats before = node_memo_stats();
  expect_same(interpret_all(g, in), first, "the empty graph again");
  EXPECT_EQ(node_memo_stats().hits - before.hits, 2u);
}

TEST_F(NodeMemo, HoldsNoMoreThanItsBytes) {
  const Graph full = parse_graph(kFull);
  enable_node_memo(1024);  // a few of the values
  interpret_all(full, inputs_of(full, 1));
  interpret_all(full, inputs_of(full, 2));
  EXPECT_LE(node_memo_stats().bytes, 1024u);
  EXPECT_GT(node_memo_stats().bytes, 0u);
}

}  // namespace
