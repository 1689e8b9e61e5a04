// The accuracy rule, case by case: close to eager within the tolerance; the RMSE rule
// against float64 (multiplier 2, 3 for f16/bf16); NaN and inf placement; integer and bool outputs
// exact; dtype, shape and output-count mismatches; the tolerance override and per-dtype defaults.
// compare_output is fed hand-made (compiled, eager, reference) triples so each branch is pinned;
// check_accuracy is run on real graphs for the whole-graph verdict and its signature.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "reprokit/harness/accuracy.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/runtime/input_gen.h"
#include "reprokit/runtime/interpreter.h"

using namespace reprokit;

namespace {

Tensor vec(DType t, const std::vector<double>& v) { return Tensor::from_doubles(t, {static_cast<int64_t>(v.size())}, v); }
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST(AccuracyRule, CloseToEagerWithinTolerancePasses) {
  auto ref = vec(DType::f64, {1.0, 2.0});
  EXPECT_EQ(compare_output("y", vec(DType::f32, {1.0005, 2.0}), vec(DType::f32, {1.0, 2.0}), ref, 1e-3), "");
}

TEST(AccuracyRule, FarFromEagerAndFromTheReferenceFails) {
  auto ref = vec(DType::f64, {1.0, 2.0});
  std::string m = compare_output("y", vec(DType::f32, {1.5, 2.0}), vec(DType::f32, {1.0, 2.0}), ref, 1e-3);
  EXPECT_NE(m.find("output %y"), std::string::npos) << m;
  EXPECT_NE(m.find("RMSE"), std::string::npos) << m;
}

TEST(AccuracyRule, CloserToFloat64ThanEagerPasses) {
  // Eager itself is off by 0.1; a compiled result that is exact is not a bug even though it
  // differs from eager by far more than the tolerance.
  std::string m = compare_output("y", vec(DType::f32, {1.0}), vec(DType::f32, {1.1}), vec(DType::f64, {1.0}), 1e-3);
  EXPECT_EQ(m, "");
}

TEST(AccuracyRule, MultiplierIsTwoForF32AndThreeForF16) {
  // Eager is 0.1 away from float64 (0.0996 in f16), compiled 0.25 away: within 3x, not within 2x.
  auto ref = vec(DType::f64, {1.0});
  EXPECT_NE(compare_output("y", vec(DType::f32, {1.25}), vec(DType::f32, {1.1}), ref, 1e-3), "");
  EXPECT_EQ(compare_output("y", vec(DType::f16, {1.25}), vec(DType::f16, {1.1}), ref, 1e-3), "");
  EXPECT_EQ(compare_output("y", vec(DType::bf16, {1.25}), vec(DType::bf16, {1.1}), ref, 1e-3), "");
  // And the tenth of the tolerance: a perfect eager leaves compiled tol/10 of RMSE room.
  EXPECT_EQ(compare_output("y", vec(DType::f32, {1.05}), vec(DType::f32, {1.0}), ref, 1.0), "");
}

TEST(AccuracyRule, NaNMustAppearExactlyWhereTheReferenceHasIt) {
  auto ref = vec(DType::f64, {kNaN, 1.0});
  EXPECT_EQ(compare_output("y", vec(DType::f32, {kNaN, 1.0}), vec(DType::f32, {kNaN, 1.0}), ref, 1e-3), "");
  std::string extra = compare_output("y", vec(DType::f32, {kNaN, kNaN}), vec(DType::f32, {kNaN, 1.0}), ref, 1e-3);
  EXPECT_NE(extra.find("element 1 is nan"), std::string::npos) << extra;
  std::string missing = compare_output("y", vec(DType::f32, {0.0, 1.0}), vec(DType::f32, {kNaN, 1.0}), ref, 1e-3);
  EXPECT_NE(missing.find("element 0 is 0 where eager is nan"), std::string::npos) << missing;
}

TEST(AccuracyRule, InfinitiesMustMatchEager) {
  auto ref = vec(DType::f64, {kInf, 1.0});
  EXPECT_EQ(compare_output("y", vec(DType::f32, {kInf, 1.0}), vec(DType::f32, {kInf, 1.0}), ref, 1e-3), "");
  EXPECT_NE(compare_output("y", vec(DType::f32, {-kInf, 1.0}), vec(DType::f32, {kInf, 1.0}), ref, 1e-3), "");
  EXPECT_NE(compare_output("y", vec(DType::f32, {3e38, 1.0}), vec(DType::f32, {kInf, 1.0}), ref, 1e-3), "");
}

TEST(AccuracyRule, IntegerAndBoolOutputsMustMatchExactly) {
  // Even a difference far inside any float tolerance is a failure for integers.
  auto iref = vec(DType::f64, {1, 2, 3});
  EXPECT_EQ(compare_output("i", vec(DType::i64, {1, 2, 3}), vec(DType::i64, {1, 2, 3}), iref, 10.0), "");
  std::string m = compare_output("i", vec(DType::i64, {1, 2, 4}), vec(DType::i64, {1, 2, 3}), iref, 10.0);
  EXPECT_NE(m.find("1 of 3 elements differ from eager (integer and bool outputs must match exactly)"), std::string::npos) << m;
  auto bref = vec(DType::f64, {1, 0});
  EXPECT_NE(compare_output("b", vec(DType::boolean, {1, 1}), vec(DType::boolean, {1, 0}), bref, 10.0), "");
  EXPECT_EQ(compare_output("b", vec(DType::boolean, {1, 0}), vec(DType::boolean, {1, 0}), bref, 10.0), "");
}

TEST(AccuracyRule, DtypeAndShapeMismatchesFail) {
  auto ref = vec(DType::f64, {1.0, 2.0});
  std::string d = compare_output("y", vec(DType::f64, {1.0, 2.0}), vec(DType::f32, {1.0, 2.0}), ref, 1e-3);
  EXPECT_NE(d.find("dtype f64 differs from eager's f32"), std::string::npos) << d;
  std::string s = compare_output("y", Tensor::from_doubles(DType::f32, {2, 1}, {1.0, 2.0}), vec(DType::f32, {1.0, 2.0}), ref, 1e-3);
  EXPECT_NE(s.find("shape differs"), std::string::npos) << s;
}

TEST(AccuracyRule, DefaultTolerancePerDtype) {
  EXPECT_DOUBLE_EQ(default_tolerance(DType::f32), 1e-3);
  EXPECT_DOUBLE_EQ(default_tolerance(DType::f64), 1e-3);
  EXPECT_DOUBLE_EQ(default_tolerance(DType::f16), 1e-2);
  EXPECT_DOUBLE_EQ(default_tolerance(DType::bf16), 1e-2);
}

// An infinity where float64 and eager are finite is a mismatch whatever the tolerance or the rest of
// the tensor (an RMS over finite elements would not see it); an overflow the dtype itself makes
// (eager's own inf, or float64 past the dtype's range) is rounding.
TEST(AccuracyRule, AnInfinityWhereFloat64IsFiniteNeverPasses) {
  auto ref = vec(DType::f64, {1.6516362549940018e38, 2.718281828459045});
  auto eager = vec(DType::f32, {1.6516362549940018e38, 2.718281828459045});
  std::string why = compare_output("y", vec(DType::f32, {kInf, 2.718281828459045}), eager, ref, 1e-3);
  EXPECT_NE(why.find("element 0 is inf where float64 is"), std::string::npos) << why;
  EXPECT_NE(compare_output_to_floor("y", vec(DType::f32, {kInf, 2.718281828459045}), eager, ref, {1e-30, 1e-30, "f32", "f32", {}}), "");
  EXPECT_NE(compare_output("y", vec(DType::f32, {-kInf, 2.718281828459045}), eager, ref, 1e-3), "");
  // exp(89) overflows float32 in eager too, and float64's 4.49e38 is past float32's range.
  auto big = vec(DType::f64, {4.4896128191743455e38, 1.0});
  EXPECT_EQ(compare_output("y", vec(DType::f32, {kInf, 1.0}), vec(DType::f32, {kInf, 1.0}), big, 1e-3), "");
  EXPECT_EQ(compare_output("y", vec(DType::f32, {kInf, 1.0}), vec(DType::f32, {3.4e38, 1.0}), big, 1e-3), "");
  EXPECT_NE(compare_output("y", vec(DType::f32, {-kInf, 1.0}), vec(DType::f32, {kInf, 1.0}), big, 1e-3), "");
}

// The whole check, as REPRO_LEVEL=4 runs it: exp(88) times a planted 1e6 overflows float32 where
// neither eager nor float64 does.
TEST(CheckAccuracy, OverflowToInfinityIsAnAccuracyFailure) {
  Graph g = parse_graph("graph g(%x: f32[4]) {\n  %y = exp(%x)\n  return (%y)\n}\n");
  std::vector<Tensor> inputs = {vec(DType::f32, {88, 88, 88, 1})};
  std::vector<Tensor> compiled = {vec(DType::f32, {kInf, kInf, kInf, 2718284.5})};
  Failure f = check_accuracy(g, inputs, compiled, std::nullopt);
  EXPECT_EQ(f.kind, FailureKind::accuracy) << f.message;
  EXPECT_NE(f.message.find("is inf where float64 is"), std::string::npos) << f.message;
  EXPECT_TRUE(check_accuracy(g, inputs, compiled, 1e-3).failed());
}

// A sigmoid swept over [-20, 12]: three points below -16 half wrong (as a compiled sigmoid that
// loses its tail) are a sliver of the tensor's RMS, yet each is far outside its own noise.
TEST(CheckAccuracy, AnElementFarOutsideItsOwnNoiseFailsWhateverTheTensorsRms) {
  Graph g = parse_graph("graph g(%x: f32[66]) {\n  %y = sigmoid(%x)\n  return (%y)\n}\n");
  std::vector<double> sweep;
  for (int i = 0; i < 66; ++i) sweep.push_back(-20 + 32.0 * i / 65);
  std::vector<Tensor> inputs = {vec(DType::f32, sweep)};
  auto eager = interpret(g, inputs);
  EXPECT_FALSE(check_accuracy(g, inputs, eager, std::nullopt).failed());
  std::vector<double> tail_lost = eager[0].to_doubles();
  for (int i : {0, 3, 6}) tail_lost[static_cast<size_t>(i)] *= 1.5;  // x = -20, -18.5, -17.0
  Failure f = check_accuracy(g, inputs, {vec(DType::f32, tail_lost)}, std::nullopt);
  EXPECT_EQ(f.kind, FailureKind::accuracy) << f.message;
  EXPECT_NE(f.message.find("element 0 is"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("far outside its own noise"), std::string::npos) << f.message;
  // A few ulps on every element, as a vectorised kernel gives, stay within each element's room.
  std::vector<double> few_ulps = eager[0].to_doubles();
  for (size_t i = 0; i < few_ulps.size(); ++i) few_ulps[i] = std::nextafter(std::nextafter(static_cast<float>(few_ulps[i]), 2.0f), 2.0f);
  EXPECT_FALSE(check_accuracy(g, inputs, {vec(DType::f32, few_ulps)}, std::nullopt).failed());
}

TEST(CheckAccuracy, WholeGraphVerdictSignatureAndOverride) {
  Graph g = parse_graph(
      "graph g(%x: f32[4], %k: i64[4]) {\n"
      "  %y = exp(%x)\n"
      "  %j = add(%k, 1)\n"
      "  return (%y, %j)\n"
      "}\n");
  auto inputs = generate_inputs(g, 7);
  auto eager = interpret(g, inputs);
  EXPECT_FALSE(check_accuracy(g, inputs, eager, std::nullopt).failed());

  auto off = eager;
  off[0] = Tensor::from_doubles(DType::f32, {4}, [&] {
    auto v = eager[0].to_doubles();
    for (double& x : v) x += 0.1;
    return v;
  }());
  Failure f = check_accuracy(g, inputs, off, std::nullopt);
  EXPECT_EQ(f.kind, FailureKind::accuracy);
  EXPECT_EQ(f.signature, "accuracy");
  EXPECT_NE(f.message.find("output %y"), std::string::npos) << f.message;
  // REPRO_TOLERANCE's override: a looser tolerance accepts the same result.
  EXPECT_FALSE(check_accuracy(g, inputs, off, 0.5).failed());

  auto int_off = eager;
  auto j = eager[1].to_doubles();
  j[2] += 1;
  int_off[1] = Tensor::from_doubles(DType::i64, {4}, j);
  Failure fi = check_accuracy(g, inputs, int_off, 100.0);
  EXPECT_EQ(fi.kind, FailureKind::accuracy);
  EXPECT_EQ(fi.signature, "accuracy-integer") << fi.message;

  Failure fc = check_accuracy(g, inputs, {eager[0]}, std::nullopt);
  EXPECT_EQ(fc.kind, FailureKind::accuracy);
  EXPECT_NE(fc.message.find("compiled graph returned 1 outputs, expected 2"), std::string::npos) << fc.message;
}

// A relu whose input is within the noise of zero may go either way on any backend: an output that
// differs by that decision passes, and its verdict says why in one line; one that differs by more
// than the decision explains fails, and an output that rounding alone explains gets no such line.
TEST(CheckAccuracy, ADecisionNearAKinkThatWentTheOtherWayIsSaidToBeNoBug) {
  Graph g = parse_graph("graph g(%x: f32[4]) {\n  %r = relu(%x)\n  %y = mul(%r, 100.0)\n  return (%y)\n}\n");
  std::vector<Tensor> inputs = {vec(DType::f32, {0.5, -0.25, 0.75, 7e-6})};
  std::vector<double> flipped = interpret(g, inputs)[0].to_doubles();
  flipped[3] = 0;  // relu(7e-6) taken as relu of a value just below zero
  std::vector<OutputVerdict> verdicts;
  Failure f = check_accuracy(g, inputs, {vec(DType::f32, flipped)}, std::nullopt, verdicts);
  EXPECT_FALSE(f.failed()) << f.message;
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_NE(verdicts[0].decided_at_kink.find("output %y: its error (largest 0.0007)"), std::string::npos) << verdicts[0].decided_at_kink;
  EXPECT_NE(verdicts[0].decided_at_kink.find("went the other way"), std::string::npos) << verdicts[0].decided_at_kink;

  std::vector<double> wrong = flipped;
  wrong[0] = 51;  // one more element wrong, with no decision near it
  EXPECT_TRUE(check_accuracy(g, inputs, {vec(DType::f32, wrong)}, std::nullopt, verdicts).failed());
  EXPECT_EQ(verdicts[0].decided_at_kink, "");

  EXPECT_FALSE(check_accuracy(g, inputs, interpret(g, inputs), std::nullopt, verdicts).failed());
  EXPECT_EQ(verdicts[0].decided_at_kink, "") << "eager's own rounding needs no explanation";
}

// A bool output (a relu's mask kept for the backward) that differs from eager only where a value
// within the noise of the threshold was compared the other way passes, saying so; one that
// differs where no decision is near its threshold fails.
TEST(CheckAccuracy, ABoolDecidedNearItsThresholdTheOtherWayIsSaidToBeNoBug) {
  Graph g = parse_graph("graph g(%x: f32[4]) {\n  %b = gt(%x, 0.0)\n  return (%b)\n}\n");
  std::vector<Tensor> inputs = {vec(DType::f32, {0.5, -0.25, 0.75, 7e-6})};
  std::vector<OutputVerdict> verdicts;
  Failure f = check_accuracy(g, inputs, {Tensor::from_doubles(DType::boolean, {4}, {1, 0, 1, 0})}, std::nullopt, verdicts);
  EXPECT_FALSE(f.failed()) << f.message;
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_NE(verdicts[0].decided_at_kink.find("output %b: 1 of 4 elements differ from eager"), std::string::npos) << verdicts[0].decided_at_kink;
  f = check_accuracy(g, inputs, {Tensor::from_doubles(DType::boolean, {4}, {0, 0, 1, 1})}, std::nullopt, verdicts);
  EXPECT_TRUE(f.failed());
  EXPECT_NE(f.message.find("elements differ from eager"), std::string::npos) << f.message;
}

// An exact tie of computed values (batch norm over two values gives exactly +-1; a residual add
// cancels to exactly 0 in float64, not always in float32) is a decision rounding could take
// either way: a bool that differs from eager there passes, saying so. Two inputs that are equal
// are equal: a compiled "not equal" there is a bug.
TEST(CheckAccuracy, AnExactTieOfComputedValuesIsAKinkAndOneOfInputsIsNot) {
  Graph computed = parse_graph(
      "graph g(%x: f32[2, 2]) {\n  %m = mean(%x, dims=[0], keepdim=true)\n  %d = sub(%x, %m)\n  %e = sub(%m, %x)\n"
      "  %z = add(%d, %e)\n  %b = le(%z, 0.0)\n  return (%b)\n}\n");
  std::vector<Tensor> inputs = {Tensor::from_doubles(DType::f32, {2, 2}, {0.3, -1.7, 2.9, 0.11})};
  std::vector<OutputVerdict> verdicts;
  Failure f = check_accuracy(computed, inputs, {Tensor::from_doubles(DType::boolean, {2, 2}, {1, 0, 1, 1})}, std::nullopt, verdicts);
  EXPECT_FALSE(f.failed()) << f.message;
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_NE(verdicts[0].decided_at_kink.find("output %b: 1 of 4 elements differ from eager"), std::string::npos) << verdicts[0].decided_at_kink;

  Graph exact = parse_graph("graph g(%x: f32[4], %y: f32[4]) {\n  %b = le(%x, %y)\n  return (%b)\n}\n");
  std::vector<Tensor> same = {vec(DType::f32, {0.5, -0.25, 0.75, 3.0}), vec(DType::f32, {0.5, -0.25, 0.75, 3.0})};
  f = check_accuracy(exact, same, {Tensor::from_doubles(DType::boolean, {4}, {1, 1, 0, 1})}, std::nullopt, verdicts);
  EXPECT_TRUE(f.failed());
  EXPECT_NE(f.message.find("elements differ from eager"), std::string::npos) << f.message;
}
