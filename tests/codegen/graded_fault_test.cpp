// Graded fault injection (--inject OP:accuracy=REL, OP:accuracy_one=K): parsing and its errors,
// the spec's round trip through a bundle's JSON, and what the cpp backend really computes with
// each (a relative error of exactly REL; about one element in K changed).
#include <gtest/gtest.h>

#include <cmath>

#include "reprokit/codegen/compile_options.h"
#include "reprokit/codegen/compiler.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/runtime/input_gen.h"
#include "reprokit/runtime/interpreter.h"

using namespace reprokit;

namespace {

std::string parse_error(const std::string& spec) {
  try {
    parse_fault_injection(spec);
  } catch (const UserError& e) { return e.what(); }
  return "";
}

std::vector<Tensor> run_cpp(const Graph& g, const std::vector<Tensor>& in, const std::string& inject) {
  CompileOptions o;
  o.backend = "cpp";
  o.injections = {parse_fault_injection(inject)};
  return compile_graph(g, o)->run(in);
}

}  // namespace

TEST(GradedFault, ParsesAndPrintsTheSize) {
  FaultInjection rel = parse_fault_injection("exp:accuracy=1e-4");
  EXPECT_EQ(rel.kind, FaultKind::accuracy);
  EXPECT_DOUBLE_EQ(rel.amount, 1e-4);
  EXPECT_EQ(parse_fault_injection(rel.str()), rel);
  FaultInjection one = parse_fault_injection("matmul:accuracy_one=1000");
  EXPECT_EQ(one.kind, FaultKind::accuracy_one);
  EXPECT_EQ(one.str(), "matmul:accuracy_one=1000");
  // The classic kinds are unchanged.
  EXPECT_EQ(parse_fault_injection("exp:accuracy").amount, 0);
  EXPECT_EQ(parse_fault_injection("exp:accuracy").str(), "exp:accuracy");
}

TEST(GradedFault, BadSizesNameTheSpec) {
  EXPECT_NE(parse_error("exp:accuracy_one").find("accuracy_one needs =K"), std::string::npos);
  EXPECT_NE(parse_error("exp:accuracy_one=0").find("integer K in [1"), std::string::npos);
  EXPECT_NE(parse_error("exp:accuracy_one=2.5").find("integer K"), std::string::npos);
  EXPECT_NE(parse_error("exp:accuracy=-1").find("relative error REL in (0, 1e6]"), std::string::npos);
  EXPECT_NE(parse_error("exp:accuracy=nan").find("'exp:accuracy=nan'"), std::string::npos);
  EXPECT_NE(parse_error("exp:accuracy=").find("accuracy=REL"), std::string::npos);
  EXPECT_NE(parse_error("exp:hang=3").find("hang takes no =AMOUNT"), std::string::npos);
  EXPECT_NE(parse_error("exp:accurate=3").find("unknown kind 'accurate=3'"), std::string::npos);
}

TEST(GradedFault, RelativeErrorIsExactlyRel) {
  Graph g = parse_graph("graph rel(%x: f64[64]) {\n  %y = exp(%x)\n  return (%y)\n}\n");
  auto in = generate_inputs(g, 4);
  auto ref = interpret(g, in)[0].to_doubles();
  auto got = run_cpp(g, in, "exp:accuracy=1e-4")[0].to_doubles();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i] / ref[i] - 1, 1e-4, 1e-12) << i;
}

TEST(GradedFault, OneElementInK) {
  Graph g = parse_graph("graph one(%x: f32[20000]) {\n  %y = exp(%x)\n  return (%y)\n}\n");
  auto in = generate_inputs(g, 5);
  auto ref = interpret(g, in)[0].to_doubles();
  for (int k : {10, 100}) {
    auto got = run_cpp(g, in, "exp:accuracy_one=" + std::to_string(k))[0].to_doubles();
    int changed = 0;
    for (size_t i = 0; i < got.size(); ++i) changed += std::fabs(got[i] - ref[i]) > 1e-3 * std::fabs(ref[i]);
    // Chosen by a hash of each value: about 20000 / k of them, within a generous band.
    EXPECT_GT(changed, 20000 / k / 2) << k;
    EXPECT_LT(changed, 20000 / k * 2) << k;
  }
}
