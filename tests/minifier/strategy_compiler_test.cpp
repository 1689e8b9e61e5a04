// disable-passes and limit-rewrites: the fewest passes, then the fewest rewrites, recorded in the
// candidate (and so in the repro's spec).
#include <gtest/gtest.h>

#include "fake_oracle.h"
#include "reprokit/support/errors.h"
#include "reprokit/codegen/compiler.h"
#include "reprokit/codegen/passes/pass_manager.h"
#include "reprokit/minifier/compiler_decisions.h"
#include "reprokit/minifier/twin.h"
#include "reprokit/minifier/reducer.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

// Rewrites pass `pass` applies to the candidate's graph under its decisions.
int64_t applied(const Candidate& c, const std::string& pass) {
  CompileOptions o;
  o.disabled_passes = c.disabled_passes;
  o.pass_limits = c.pass_limits;
  std::vector<PassRecord> records;
  lower_for_codegen(c.graph, o, &records);
  for (auto& r : records)
    if (r.name == pass) return r.rewrites;
  return 0;
}

Candidate pointwise_chain() {
  Candidate c;
  c.graph = parse_graph("graph g(%x: f32[8]) {\n  %a = neg(%x)\n  %b = exp(%a)\n  %c = mul(%b, 2.0)\n  %d = add(%c, 1.0)\n  return (%d)\n}");
  return c;
}

}  // namespace

TEST(CompilerStrategies, FewestPassesThenFewestRewrites) {
  Candidate c = pointwise_chain();
  const int64_t total = applied(c, "pointwise-fusion");
  ASSERT_GE(total, 3);
  // "Fails" while pointwise-fusion applies at least 2 rewrites.
  FakeOracle o([](const Candidate& k) { return applied(k, "pointwise-fusion") >= 2; });
  auto r = reduce(c, {strategy("disable-passes"), strategy("limit-rewrites")}, o, {});
  EXPECT_EQ(r.best.disabled_passes.size(), pass_table().size() - 1);
  EXPECT_FALSE(r.best.disabled_passes.count("pointwise-fusion"));
  EXPECT_EQ(r.best.pass_limits.at("pointwise-fusion"), 2);
  ASSERT_TRUE(r.twin);
  std::string diff = describe_difference(r.best, *r.twin);
  EXPECT_TRUE(diff == "fails with pass pointwise-fusion on, passes without it" ||
              diff == "fails with the first 2 rewrites of pointwise-fusion, passes with 1")
      << diff;
  // The spec the repro gets runs exactly that configuration.
  ReproSpec spec = candidate_spec(ReproSpec{}, r.best);
  EXPECT_EQ(spec.options.compile.disabled_passes, r.best.disabled_passes);
  EXPECT_EQ(spec.options.compile.pass_limits.at("pointwise-fusion"), 2);
}

TEST(CompilerStrategies, CandidateJsonRoundTripsAndRejectsUnknownPasses) {
  Candidate c = pointwise_chain();
  c.disabled_passes = {"cse"};
  c.pass_limits = {{"pointwise-fusion", 1}};
  c.edits["x"] = {InputFill::integers, {}, {2, 5}};
  Candidate back = Candidate::from_json(c.to_json(), reprokit_passes());
  EXPECT_EQ(back.key(), c.key());
  EXPECT_EQ(back.edit("x"), c.edit("x"));
  auto j = c.to_json();
  j["disabled_passes"] = {"no-such-pass"};
  EXPECT_THROW(Candidate::from_json(j, reprokit_passes()), UserError);
  j = c.to_json();
  j["pass_limits"] = {{"cse", -1}};
  EXPECT_THROW(Candidate::from_json(j, reprokit_passes()), UserError);
}

// A minifier state's rewrite limit of 2^64 (a double to the JSON reader) is out of range, with
// its value; 2^63 (unsigned to it) too: neither wraps into a negative limit.
TEST(CompilerStrategies, ARewriteLimitPastInt64IsOutOfRangeNotNegative) {
  nlohmann::json j = pointwise_chain().to_json();
  for (const char* value : {"18446744073709551616", "9223372036854775808"}) {
    j["pass_limits"] = nlohmann::json::parse(std::string("{\"cse\": ") + value + "}");
    try {
      Candidate::from_json(j, reprokit_passes());
      FAIL() << value << " was taken";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("the rewrite limit of cse is ") + value + ", out of range"), std::string::npos) << e.what();
    }
  }
  j["pass_limits"] = {{"cse", 9223372036854775807}};
  EXPECT_EQ(Candidate::from_json(j, reprokit_passes()).pass_limits.at("cse"), 9223372036854775807);
}
