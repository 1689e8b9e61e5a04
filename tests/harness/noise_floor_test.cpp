// The noise floor and the auto accuracy rule: accumulation orders in the reference interpreter
// really change float32 sums, one-ulp input moves, a floor that is wide where the graph amplifies
// rounding and narrow where it does not, and the auto rule catching a 1e-4 relative error and one
// wrong element in a thousand while passing results that differ only by summation order.
#include <gtest/gtest.h>

#include <cmath>

#include "reprokit/harness/accuracy.h"
#include "reprokit/harness/noise_floor.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/runtime/input_gen.h"
#include "reprokit/runtime/interpreter.h"

using namespace reprokit;

namespace {

std::vector<Tensor> run(const Graph& g, const std::vector<Tensor>& in, AccumulationOrder order) {
  InterpretOptions o;
  o.accumulation = order;
  return interpret(g, in, o);
}

Tensor scaled(const Tensor& t, double factor) {
  auto v = t.to_doubles();
  for (double& x : v) x *= factor;
  return Tensor::from_doubles(t.dtype(), t.shape(), v);
}

}  // namespace

// 2^24 followed by 64 ones: in float32, adding the ones one by one to 2^24 loses each of them;
// adding them first keeps them all; the exact sum is rounded once.
TEST(AccumulationOrder, Float32OrdersGiveTheirOwnSums) {
  Graph g = parse_graph("graph s(%x: f32[65]) {\n  %y = sum(%x, dims=[0])\n  return (%y)\n}\n");
  std::vector<double> v(65, 1.0);
  v[0] = 16777216.0;
  std::vector<Tensor> in = {Tensor::from_doubles(DType::f32, {65}, v)};
  EXPECT_EQ(run(g, in, AccumulationOrder::exact)[0].to_doubles()[0], 16777216.0 + 64);
  EXPECT_EQ(run(g, in, AccumulationOrder::forward)[0].to_doubles()[0], 16777216.0);
  EXPECT_EQ(run(g, in, AccumulationOrder::reversed)[0].to_doubles()[0], 16777216.0 + 64);
  // Pairwise and blocked add 2^24 to a partial sum of several ones: some of them survive.
  double pairwise = run(g, in, AccumulationOrder::pairwise)[0].to_doubles()[0];
  double blocked = run(g, in, AccumulationOrder::blocked)[0].to_doubles()[0];
  EXPECT_GT(pairwise, 16777216.0);
  EXPECT_GT(blocked, 16777216.0);
}

// matmul and conv2d honour the order too (one term per k / per tap), and agree with the exact
// result to float32 rounding on ordinary data.
TEST(AccumulationOrder, MatmulAndConvFollowTheOrder) {
  Graph g = parse_graph(
      "graph m(%a: f32[1, 65], %b: f32[65, 1], %x: f32[1, 65, 1, 1], %w: f32[1, 65, 1, 1]) {\n"
      "  %y = matmul(%a, %b)\n"
      "  %z = conv2d(%x, %w)\n"
      "  return (%y, %z)\n"
      "}\n");
  std::vector<double> big(65, 1.0);
  big[0] = 16777216.0;
  std::vector<double> ones(65, 1.0);
  std::vector<Tensor> in = {Tensor::from_doubles(DType::f32, {1, 65}, big), Tensor::from_doubles(DType::f32, {65, 1}, ones),
                            Tensor::from_doubles(DType::f32, {1, 65, 1, 1}, big), Tensor::from_doubles(DType::f32, {1, 65, 1, 1}, ones)};
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(run(g, in, AccumulationOrder::exact)[k].to_doubles()[0], 16777216.0 + 64) << k;
    EXPECT_EQ(run(g, in, AccumulationOrder::forward)[k].to_doubles()[0], 16777216.0) << k;
    EXPECT_EQ(run(g, in, AccumulationOrder::reversed)[k].to_doubles()[0], 16777216.0 + 64) << k;
  }
  auto rnd = generate_inputs(g, 3);
  auto exact = run(g, rnd, AccumulationOrder::exact);
  for (auto order : {AccumulationOrder::forward, AccumulationOrder::reversed, AccumulationOrder::pairwise, AccumulationOrder::blocked}) {
    auto o = run(g, rnd, order);
    for (int k = 0; k < 2; ++k) EXPECT_NEAR(o[k].to_doubles()[0], exact[k].to_doubles()[0], 1e-5 * (1 + std::fabs(exact[k].to_doubles()[0])));
  }
}

TEST(NoiseFloor, OneUlpMovesEveryNonzeroElementByOneUlp) {
  Tensor t = Tensor::from_doubles(DType::f32, {4}, {1.0, -3.0, 0.0, 1e-3});
  Tensor k = Tensor::from_int64s(DType::i64, {2}, {5, 7});
  auto out = perturb_by_one_ulp({t, k}, 9);
  auto v = out[0].to_doubles();
  EXPECT_EQ(std::fabs(v[0] - 1.0), std::ldexp(1.0, -23));
  EXPECT_EQ(std::fabs(v[1] + 3.0), std::ldexp(1.0, -22));
  EXPECT_EQ(v[2], 0.0);
  EXPECT_EQ(std::fabs(v[3] - static_cast<float>(1e-3)), ulp_of(1e-3, DType::f32));
  EXPECT_EQ(out[1].to_int64s(), (std::vector<int64_t>{5, 7}));
}

// exp of order-one inputs: a floor of about an ulp. A long sum whose terms cancel: a floor far
// above an ulp of the result, from the accumulation orders.
TEST(NoiseFloor, WideWhereTheGraphAmplifiesRoundingNarrowWhereNot) {
  Graph calm = parse_graph("graph c(%x: f32[256]) {\n  %y = exp(%x)\n  return (%y)\n}\n");
  auto in = generate_inputs(calm, 1);
  InterpretOptions f64;
  f64.cast_to_f64 = true;
  NoiseFloor c = measure_noise_floor(calm, in, interpret(calm, in, f64));
  double scale = std::sqrt(std::exp(2.0));  // rms of exp(x) for x of order one, roughly
  EXPECT_LT(c.outputs[0].rms, 1e-6 * scale);
  EXPECT_GT(c.outputs[0].rms, 0.0);

  Graph cancel = parse_graph("graph s(%x: f32[4096]) {\n  %y = sum(%x, dims=[0])\n  return (%y)\n}\n");
  std::vector<double> v(4096);
  for (size_t i = 0; i < v.size(); ++i) v[i] = (i % 2 ? -1.0 : 1.0) * (1000.0 + static_cast<double>(i % 7) * 0.1);
  std::vector<Tensor> xs = {Tensor::from_doubles(DType::f32, {4096}, v)};
  auto ref = interpret(cancel, xs, f64);
  NoiseFloor s = measure_noise_floor(cancel, xs, ref);
  double result = std::fabs(ref[0].to_doubles()[0]);
  EXPECT_GT(s.outputs[0].rms, 100 * ulp_of(result, DType::f32)) << s.outputs[0].rms_from;
  EXPECT_NE(s.outputs[0].rms_from.find("accumulation"), std::string::npos) << s.outputs[0].rms_from;
  EXPECT_GE(s.variants.size(), 5u);
}

// The kinks variant: a relu input just above 0 and a comparison just past its threshold go the
// other way; values far from the kink do not move.
TEST(NoiseFloor, KinksVariantTakesNearDecisionsTheOtherWay) {
  Graph g = parse_graph("graph k(%x: f32[4], %y: f32[4]) {\n  %r = relu(%x)\n  %c = gt(%x, %y)\n  return (%r, %c)\n}\n");
  std::vector<Tensor> in = {Tensor::from_doubles(DType::f32, {4}, {1.0, 1e-6, -1e-6, -1.0}),
                            Tensor::from_doubles(DType::f32, {4}, {0.0, 0.0, 0.0, 0.0})};
  InterpretOptions o;
  o.flip_kinks_band = 1.0 / 65536;
  auto out = interpret(g, in, o);
  auto r = out[0].to_doubles();
  EXPECT_EQ(r[0], 1.0);
  EXPECT_EQ(r[1], 0.0) << "1e-6 > 0, but within the band: treated as -1e-6";
  EXPECT_FLOAT_EQ(static_cast<float>(r[2]), 1e-6f) << "-1e-6 treated as +1e-6";
  EXPECT_EQ(r[3], 0.0);
  EXPECT_EQ(out[1].to_int64s(), (std::vector<int64_t>{1, 0, 1, 0}));
  auto plain = interpret(g, in);
  EXPECT_EQ(plain[1].to_int64s(), (std::vector<int64_t>{1, 1, 0, 0}));
  // The floor of a relu graph whose input sits at a kink is wide: the variant shows it.
  InterpretOptions f64;
  f64.cast_to_f64 = true;
  NoiseFloor f = measure_noise_floor(g, in, interpret(g, in, f64));
  EXPECT_GE(f.outputs[0].max, 9e-7);
  EXPECT_EQ(f.outputs[0].max_from, "kinks");
}

// The auto rule (tolerance nullopt) on a matmul + softmax: a result computed in another float32
// accumulation order passes; 1e-4 relative error on every element fails; so does one element in a
// thousand off by 1%. (1% of a softmax probability near zero is within that output's noise: the
// floor is absolute, at the scale of the tensor.)
TEST(AutoRule, PassesOtherOrdersCatchesSubtleErrors) {
  Graph g = parse_graph(
      "graph a(%x: f32[40, 64], %w: f32[64, 50]) {\n"
      "  %h = matmul(%x, %w)\n"
      "  %p = softmax(%h, dim=1)\n"
      "  return (%h, %p)\n"
      "}\n");
  auto in = generate_inputs(g, 5);
  for (auto order : {AccumulationOrder::forward, AccumulationOrder::reversed, AccumulationOrder::pairwise, AccumulationOrder::blocked}) {
    Failure f = check_accuracy(g, in, run(g, in, order), std::nullopt);
    EXPECT_FALSE(f.failed()) << f.message;
  }
  auto eager = interpret(g, in);
  auto rel = eager;
  rel[0] = scaled(eager[0], 1 + 1e-4);
  Failure f = check_accuracy(g, in, rel, std::nullopt);
  EXPECT_TRUE(f.failed());
  EXPECT_NE(f.message.find("output %h"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("noise floor"), std::string::npos) << f.message;
  // The fixed rule (REPRO_TOLERANCE=1e-3) lets the same error through: what auto adds.
  EXPECT_FALSE(check_accuracy(g, in, rel, 1e-3).failed());

  auto one = eager;
  auto h = eager[0].to_doubles();
  for (size_t i = 0; i < h.size(); i += 1000) h[i] = h[i] * 1.01;
  one[0] = Tensor::from_doubles(DType::f32, eager[0].shape(), h);
  Failure fo = check_accuracy(g, in, one, std::nullopt);
  EXPECT_TRUE(fo.failed());
  EXPECT_NE(fo.message.find("output %h"), std::string::npos) << fo.message;
}

// A floor of zero (every variant exact: a relu) still allows a few ulps, and no more.
TEST(AutoRule, ExactFloorAllowsAFewUlps) {
  Graph g = parse_graph("graph r(%x: f32[8]) {\n  %y = relu(%x)\n  return (%y)\n}\n");
  auto in = generate_inputs(g, 2);
  auto eager = interpret(g, in);
  EXPECT_FALSE(check_accuracy(g, in, {scaled(eager[0], 1 + 1e-7)}, std::nullopt).failed());
  EXPECT_TRUE(check_accuracy(g, in, {scaled(eager[0], 1 + 1e-5)}, std::nullopt).failed());
}
