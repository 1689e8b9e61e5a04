// Value simplification stays in every op's domain: an input edit that makes a
// value NaN or infinite where the unedited values keep it finite (1/0, log 0) is invalid, so no
// repro or twin rests on degenerate math.
#include <gtest/gtest.h>

#include <cmath>

#include "../harness/cli_util.h"
#include "reprokit/harness/bundle.h"
#include "reprokit/harness/repro_file.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/minifier/candidate_values.h"
#include "reprokit/runtime/interpreter.h"

using namespace reprokit;
using namespace reprokit::testing;

TEST(ValueDomain, EditsThatCreateNonFiniteValuesAreRefused) {
  auto dir = fresh_dir("value_domain_unit");
  Graph g = parse_graph("graph g(%x: f32[4], %y: f32[4]) {\n  %r = reciprocal(%x)\n  %l = log(%y)\n  %s = add(%r, %l)\n  return (%s)\n}");
  std::vector<Tensor> inputs = {Tensor::from_doubles(DType::f32, {4}, {0.5, 2, -3, 4}), Tensor::from_doubles(DType::f32, {4}, {1.5, 2, 3, 0.25})};
  Bundle b = load_bundle(write_bundle((dir / "out").string(), g, inputs, ReproSpec{}, 2, 1));
  KnownValues known(b);
  Candidate c;
  c.graph = b.graph;
  EXPECT_FALSE(value_edit_leaves_domain(c, b, known)) << "no edit";
  c.edits["x"].fill = InputFill::ones;
  EXPECT_FALSE(value_edit_leaves_domain(c, b, known)) << "1/1 is fine";
  c.edits["x"].fill = InputFill::zeros;
  auto why = value_edit_leaves_domain(c, b, known);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("%r"), std::string::npos) << *why;
  c.edits.clear();
  c.edits["y"].zeroed = {2};  // log(0) = -inf
  why = value_edit_leaves_domain(c, b, known);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("%l"), std::string::npos) << *why;
  EXPECT_NE(why->find("element 2"), std::string::npos) << *why;
  // Where the original is already non-finite, an edit that keeps it so is allowed.
  std::vector<Tensor> inf_inputs = {Tensor::from_doubles(DType::f32, {4}, {0, 2, -3, 4}), inputs[1]};
  Bundle b2 = load_bundle(write_bundle((dir / "out2").string(), g, inf_inputs, ReproSpec{}, 2, 1));
  KnownValues known2(b2);
  Candidate c2;
  c2.graph = b2.graph;
  c2.edits["x"].zeroed = {0};
  EXPECT_FALSE(value_edit_leaves_domain(c2, b2, known2));
}

// End to end: a crash planted on a composite op that decomposes into a reciprocal used to minify
// to reciprocal(0) (repro_torch.py printed sum=inf); the repro now computes finite values only.
TEST(ValueDomain, MinifiedCrashReproStaysFinite) {
  auto dir = fresh_dir("value_domain_e2e");
  write_text(dir / "g.rk", "graph g(%x: f32[8], %w: f32[8]) {\n  %h = mul(%x, %w)\n  %s = sigmoid(%h)\n  %t = mul(%s, 2.0)\n  return (%t)\n}\n");
  auto run = reprokit_cli({"run", "g.rk", "--backend", "cpp", "--inject", "sigmoid:crash"}, dir,
                          {{"REPRO_AFTER", "aot"}, {"REPRO_LEVEL", "3"}, {"REPRO_DIR", "out"}});
  ASSERT_NE(run.signal, 0) << run.err;
  auto bundles = bundles_in(dir / "out");
  ASSERT_EQ(bundles.size(), 1u) << run.err;
  auto m = reprokit_cli({"minify", bundles[0].string(), "--jobs", "2"}, dir);
  ASSERT_EQ(m.exit_code, 0) << m.out << m.err;
  ReproFile r = load_repro_file((bundles[0] / "repro.rk").string());
  // The repro names the op asked about, or the report says which primitive of it carries the fault
  // (the report said "sigmoid:crash" above a graph with no sigmoid).
  std::string report = read_text(bundles[0] / "BUG_REPORT.md");
  bool names_sigmoid = print_graph(r.graph).find("sigmoid(") != std::string::npos;
  EXPECT_TRUE(names_sigmoid || report.find("the fault sits on %s = reciprocal(") != std::string::npos) << report;
  InterpretOptions f64;
  f64.cast_to_f64 = true;
  auto all = interpret_all(r.graph, r.inputs, f64);
  for (int id = 0; id < r.graph.size(); ++id)
    for (int64_t k = 0; k < all[static_cast<size_t>(id)].numel(); ++k)
      EXPECT_TRUE(std::isfinite(all[static_cast<size_t>(id)].get(k))) << "%" << r.graph.node(id).name << "[" << k << "]\n" << print_graph(r.graph);
}
