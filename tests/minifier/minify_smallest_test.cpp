// Smallest repros end to end: on every example model with an injected bug (where the op exists)
// at both REPRO_AFTER levels, the minified repro has every input dimension at the smallest size
// that still fails (halving any one of them makes it pass), runs with one command and verifies in
// a fresh process. And a pass bug: the repro's spec switches on only the guilty pass, with a
// passing twin that differs by that pass.
#include <gtest/gtest.h>

#include <fstream>
#include <optional>

#include "../harness/cli_util.h"
#include "reprokit/harness/repro_file.h"
#include "reprokit/ir/verifier.h"
#include "reprokit/codegen/passes/pass_manager.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/minifier/strategies.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

struct SmallCase {
  std::string model, inject, after;
};

std::vector<SmallCase> cases() {
  std::vector<SmallCase> out;
  for (auto model : {"mlp", "attention", "embedding_classifier", "mixed_precision"})
    for (auto inject : {"exp:accuracy", "relu:runtime_error", "matmul:crash", "softmax:accuracy"})
      for (auto after : {"dynamo", "aot"}) out.push_back({model, inject, after});
  return out;
}

// The leading window of t with shape `shape`.
Tensor leading_window(const Tensor& t, const Shape& shape) {
  Shape in = contiguous_strides(t.shape()), os = contiguous_strides(shape);
  Tensor c = t.contiguous(), out = Tensor::zeros(t.dtype(), shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t src = 0;
    for (size_t d = 0; d < shape.size(); ++d) src += ((i / os[d]) % shape[d]) * in[d];
    if (is_floating(t.dtype())) out.set(i, c.get(src));
    else out.set_int(i, c.get_int(src));
  }
  return out;
}

// Whether `reprokit repro` still reproduces with input `input`'s dim `dim` halved (or, when that
// alone leaves no valid graph, every dim of that size): nullopt when neither is a valid graph.
std::optional<bool> reproduces_halved(const ReproFile& r, int input, size_t dim, const fs::path& where) {
  const int64_t size = r.graph.node(input).type.shape[dim], half = (size + 1) / 2;
  std::optional<Graph> g;
  for (int attempt = 0; attempt < 2 && !g; ++attempt) {
    try {
      g = attempt == 0 ? resize_inputs(r.graph, {{{input, dim}, half}}, {}) : resize_inputs(r.graph, {}, {{size, half}});
      verify(*g);
    } catch (const UserError&) { g.reset(); }
  }
  if (!g) return std::nullopt;
  std::vector<Tensor> inputs;
  for (int i = 0; i < g->num_inputs(); ++i) inputs.push_back(leading_window(r.inputs[static_cast<size_t>(i)], g->node(i).type.shape));
  fs::remove_all(where);
  fs::create_directories(where);
  write_repro_files(where.string(), *g, inputs, r.spec, "halved");
  auto p = reprokit_cli({"repro", "repro.rk"}, where);
  return p.exit_code == 1 && p.out.find("REPRODUCED") != std::string::npos && p.out.find("NOT REPRODUCED") == std::string::npos;
}

}  // namespace

TEST(MinifySmallest, EveryDimensionAtTheSmallestSizeThatStillFails) {
  int minified = 0;
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.model + " " + c.inject + " " + c.after);
    auto dir = fresh_dir("small_" + c.model + "_" + c.inject.substr(0, c.inject.find(':')) + "_" + c.after);
    auto run =
        reprokit_cli({"run", example(c.model), "--inject", c.inject}, dir, {{"REPRO_AFTER", c.after}, {"REPRO_LEVEL", "4"}, {"REPRO_DIR", "out"}});
    if (run.exit_code == 2) continue;  // the op is not in this model
    ASSERT_NE(run.exit_code, 0) << "the injected bug did not show";
    auto bundles = bundles_in(dir / "out");
    ASSERT_EQ(bundles.size(), 1u);
    auto m = reprokit_cli({"minify", bundles[0].string()}, dir);
    ASSERT_EQ(m.exit_code, 0) << m.out << m.err;
    EXPECT_NE(m.out.find("verified: REPRODUCED in a fresh process"), std::string::npos) << m.out;
    ++minified;
    ReproFile r = load_repro_file((bundles[0] / "repro.rk").string());
    for (int i = 0; i < r.graph.num_inputs(); ++i)
      for (size_t d = 0; d < r.graph.node(i).type.shape.size(); ++d) {
        if (r.graph.node(i).type.shape[d] < 2) continue;
        auto still = reproduces_halved(r, i, d, dir / "halved");
        if (!still) continue;  // no valid graph at half the size
        EXPECT_FALSE(*still) << "halving dim " << d << " of %" << r.graph.node(i).name << " still fails:\n" << print_graph(r.graph);
      }
  }
  EXPECT_GE(minified, 16);  // the cases whose op exists in the model
}

// A bug in one rewrite of one pass: the repro switches on only that pass, and its passing twin is
// the same repro without it.
TEST(MinifySmallest, APassBugKeepsOnlyThatPassAndShowsItsTwin) {
  auto dir = fresh_dir("small_pass");
  auto run = reprokit_cli({"run", example("attention"), "--inject-pass", "pointwise-fusion:2"}, dir,
                          {{"REPRO_AFTER", "aot"}, {"REPRO_LEVEL", "4"}, {"REPRO_DIR", "out"}});
  ASSERT_EQ(run.exit_code, 1) << run.err;
  auto b = bundles_in(dir / "out").at(0);
  auto m = reprokit_cli({"minify", b.string()}, dir);
  ASSERT_EQ(m.exit_code, 0) << m.out << m.err;
  ReproFile r = load_repro_file((b / "repro.rk").string());
  const CompileOptions& o = r.spec.options.compile;
  for (auto& p : pass_table()) EXPECT_EQ(o.disabled_passes.count(p.name), p.name == "pointwise-fusion" ? 0u : 1u) << p.name;
  ReproFile twin = load_repro_file((b / "twin.rk").string());
  EXPECT_TRUE(twin.spec.options.compile.disabled_passes.count("pointwise-fusion"));
  auto t = reprokit_cli({"repro", (b / "twin.rk").string()}, dir);
  EXPECT_EQ(t.exit_code, 0) << t.out << t.err;
  EXPECT_NE(t.out.find("NOT REPRODUCED"), std::string::npos) << t.out;
  std::ifstream in(b / "BUG_REPORT.md");
  std::string report((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(report.find("fails with pass pointwise-fusion on, passes without it"), std::string::npos) << report;
  EXPECT_NE(report.find("Compiler passes: only pointwise-fusion"), std::string::npos) << report;
  auto j = read_json(b / "report.json");
  EXPECT_EQ(j["final_passes"], 1);
  EXPECT_EQ(j["twin"]["strategy"], "disable-passes");
}
