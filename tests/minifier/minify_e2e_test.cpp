// The minifier end to end through the real `reprokit` binary: every injected failure kind at both
// levels reduces to the culprit op alone and reproduces; signature matching; a bundle that does
// not fail; interruption and --resume.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "../codegen/backend_test_util.h"
#include "../harness/cli_util.h"
#include "reprokit/harness/repro_file.h"
#include "reprokit/minifier/subprocess_oracle.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

// Runs the model with an injection until the harness writes a bundle (flaky ones need retries).
fs::path bundle_for(const std::string& name, const std::string& inject, const std::string& after, int level, const std::string& backend = "cpp") {
  auto dir = fresh_dir(name);
  // The watchdog only where a hang is planted: a 1 s limit on the other kinds turned a compile
  // slowed by a loaded machine into a timeout bundle, not the planted failure.
  std::map<std::string, std::string> env{{"REPRO_AFTER", after}, {"REPRO_LEVEL", std::to_string(level)}, {"REPRO_DIR", "out"}};
  if (inject.find(":hang") != std::string::npos) env["REPRO_TIMEOUT"] = "1";
  for (int attempt = 0; attempt < 12 && bundles_in(dir / "out").empty(); ++attempt)
    reprokit_cli({"run", example("mlp"), "--backend", backend, "--inject", inject}, dir, env);
  auto b = bundles_in(dir / "out");
  EXPECT_EQ(b.size(), 1u);
  return b.at(0);
}

struct MinCase {
  const char* kind;
  const char* after;
  int level;
};
// How ctest lists a case (else gtest prints the struct's bytes).
void PrintTo(const MinCase& c, std::ostream* os) { *os << c.kind << " at level " << c.level << ", REPRO_AFTER=" << c.after; }

class MinifyKinds : public ::testing::TestWithParam<MinCase> {};
class MinifyKindsOnTheGpu : public ::testing::TestWithParam<MinCase> {};

// Minifies the bundle of the planted failure and checks the repro is the culprit alone.
void expect_minified_to_the_culprit(const MinCase& c, const fs::path& b) {
  std::vector<std::string> args = {"minify", b.string()};
  if (std::string(c.kind) == "hang") args.insert(args.end(), {"--timeout", "2"});
  auto r = reprokit_cli(args, b);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  ReproFile repro = load_repro_file((b / "repro.rk").string());
  EXPECT_EQ(repro.graph.num_ops(), 1) << r.out;
  const Node& culprit = repro.graph.node(repro.graph.outputs.at(0));
  EXPECT_EQ(culprit.name, "a");  // gelu's node keeps its name through decomposition
  EXPECT_EQ(culprit.op, std::string(c.after) == "aot" ? Op::mul : Op::gelu);
  EXPECT_NE(r.out.find("verified: REPRODUCED"), std::string::npos) << r.out << r.err;
  auto report = read_json(b / "report.json");
  EXPECT_EQ(report["final_ops"], 1);
  EXPECT_TRUE(report["verified"].get<bool>());
  // An error at run time names its node ("injected runtime error in node %a (gelu)"): the node alone
  // is the first query after the probe, and it is the repro.
  if (std::string(c.kind) == "runtime_error") {
    EXPECT_EQ(report["per_strategy"]["named-in-failure"]["queries"], 1) << report["per_strategy"];
    EXPECT_EQ(report["per_strategy"]["named-in-failure"]["successes"], 1) << report["per_strategy"];
    EXPECT_NE(r.err.find("[minify] the failure names %a ("), std::string::npos) << r.err;
  }
}

}  // namespace

TEST_P(MinifyKinds, ReducesToTheCulpritAndReproduces) {
  const MinCase& c = GetParam();
  expect_minified_to_the_culprit(c, bundle_for(std::string("min_") + c.kind + "_" + c.after, std::string("gelu:") + c.kind, c.after, c.level));
}

// The same through the cuda backend, on a GPU only: the bundle records the backend, and every
// check the minifier runs launches the candidate's kernel (a crash is a CUDA error there, a hang a
// kernel that never returns, killed by the timeout).
TEST_P(MinifyKindsOnTheGpu, ReducesToTheCulpritAndReproduces) {
  REQUIRE_GPU();
  const MinCase& c = GetParam();
  fs::path b = bundle_for(std::string("gpu_min_") + c.kind + "_" + c.after, std::string("gelu:") + c.kind, c.after, c.level, "cuda");
  EXPECT_EQ(read_json(b / "manifest.json")["spec"]["backend"], "cuda");
  expect_minified_to_the_culprit(c, b);
}

INSTANTIATE_TEST_SUITE_P(Kinds, MinifyKinds,
                         ::testing::Values(MinCase{"compile_error", "dynamo", 2}, MinCase{"compile_error", "aot", 2},
                                           MinCase{"runtime_error", "dynamo", 2}, MinCase{"runtime_error", "aot", 2}, MinCase{"crash", "dynamo", 3},
                                           MinCase{"crash", "aot", 3}, MinCase{"hang", "dynamo", 2}, MinCase{"hang", "aot", 2},
                                           MinCase{"accuracy", "dynamo", 4}, MinCase{"accuracy", "aot", 4}, MinCase{"flaky", "dynamo", 2},
                                           MinCase{"flaky", "aot", 2}),
                         [](const auto& info) { return std::string(info.param.kind) + "_" + info.param.after; });
INSTANTIATE_TEST_SUITE_P(Kinds, MinifyKindsOnTheGpu,
                         ::testing::Values(MinCase{"compile_error", "dynamo", 2}, MinCase{"runtime_error", "aot", 2}, MinCase{"crash", "dynamo", 3},
                                           MinCase{"crash", "aot", 3}, MinCase{"hang", "dynamo", 2}, MinCase{"accuracy", "dynamo", 4},
                                           MinCase{"accuracy", "aot", 4}),
                         [](const auto& info) { return std::string(info.param.kind) + "_" + info.param.after; });

// A graph name with '.' (valid, and what ONNX exporters write) is valid all the way: the bundle,
// the minified repro.rk, `reprokit repro` of it and its GoogleTest and torch files (the
// parser once refused the name, so such repros did not parse).
TEST(Minify, AGraphNamedWithADotMinifiesAndReproduces) {
  auto dir = fresh_dir("min_dotted_name");
  std::ofstream(dir / "model.rk") << "graph my.graph(%x: f32[4, 3]) {\n  %h = sin(%x)\n  %a = gelu(%h)\n  %y = mul(%a, 2.0)\n  return (%y)\n}\n";
  auto run = reprokit_cli({"run", "model.rk", "--inject", "gelu:runtime_error"}, dir, {{"REPRO_AFTER", "dynamo"}, {"REPRO_DIR", "out"}});
  ASSERT_EQ(run.exit_code, 1) << run.out << run.err;
  auto b = bundles_in(dir / "out");
  ASSERT_EQ(b.size(), 1u);
  auto m = reprokit_cli({"minify", b[0].string()}, dir);
  ASSERT_EQ(m.exit_code, 0) << m.out << m.err;
  EXPECT_NE(m.out.find("verified: REPRODUCED"), std::string::npos) << m.out;
  EXPECT_EQ(load_repro_file((b[0] / "repro.rk").string()).graph.name, "my.graph");
  auto rep = reprokit_cli({"repro", (b[0] / "repro.rk").string()}, dir);
  EXPECT_EQ(rep.exit_code, 1) << rep.out << rep.err;
  EXPECT_NE(rep.out.find("REPRODUCED: runtime_error"), std::string::npos) << rep.out << rep.err;
}

// BUG_REPORT.md quotes the minified repro's own failure (its output, its error figures), as
// `reprokit repro` prints it, not the original graph's; the original's stays in original/.
TEST(Minify, TheBugReportQuotesTheReprosOwnFailure) {
  const fs::path b = bundle_for("min_own_failure", "gelu:accuracy", "dynamo", 4);
  const std::string original = read_text(b / "original" / "BUG_REPORT.md");
  EXPECT_NE(original.find("output %t: error against float64"), std::string::npos) << original;
  auto m = reprokit_cli({"minify", b.string()}, b);
  ASSERT_EQ(m.exit_code, 0) << m.out << m.err;
  auto rep = reprokit_cli({"repro", (b / "repro.rk").string()}, b);
  ASSERT_EQ(rep.exit_code, 1) << rep.out << rep.err;
  const std::string prefix = "REPRODUCED: accuracy: ";
  const size_t at = rep.out.find(prefix);
  ASSERT_NE(at, std::string::npos) << rep.out;
  const std::string own = rep.out.substr(at + prefix.size(), rep.out.find('\n', at) - at - prefix.size());
  EXPECT_NE(own.find("output %a: error against float64"), std::string::npos) << own;
  const std::string report = read_text(b / "BUG_REPORT.md");
  EXPECT_NE(report.find("```\n" + own + "\n```"), std::string::npos) << report;
  EXPECT_EQ(report.find("output %t:"), std::string::npos) << report;
}

// A composite op keeps its name through the minifier: a bug planted in group_norm (decomposed
// before codegen) is minified to the group_norm node, not to the arithmetic it decomposes into.
TEST(Minify, ABugInGroupNormMinifiesToGroupNorm) {
  auto dir = fresh_dir("min_group_norm");
  std::ofstream(dir / "model.rk") << "graph g(%x: f32[2, 4, 3, 3], %w: f32[4], %b: f32[4]) {\n  %h = relu(%x)\n"
                                     "  %n = group_norm(%h, %w, %b, num_groups=2)\n  %y = tanh(%n)\n  return (%y)\n}\n";
  auto run = reprokit_cli({"run", "model.rk", "--inject", "group_norm:accuracy"}, dir,
                          {{"REPRO_AFTER", "dynamo"}, {"REPRO_LEVEL", "4"}, {"REPRO_DIR", "out"}});
  ASSERT_EQ(run.exit_code, 1) << run.out << run.err;
  auto b = bundles_in(dir / "out");
  ASSERT_EQ(b.size(), 1u);
  auto m = reprokit_cli({"minify", b[0].string()}, dir);
  ASSERT_EQ(m.exit_code, 0) << m.out << m.err;
  EXPECT_NE(m.out.find("verified: REPRODUCED"), std::string::npos) << m.out;
  ReproFile repro = load_repro_file((b[0] / "repro.rk").string());
  ASSERT_EQ(repro.graph.num_ops(), 1) << m.out;
  EXPECT_EQ(repro.graph.node(repro.graph.outputs.at(0)).op, Op::group_norm) << m.out;
}

TEST(MinifySignatures, ADifferentFailureIsNotTheSameBug) {
  Failure rt{FailureKind::runtime_error, "x", "generated code for graph g failed: injected runtime error in node %<v> (erf)", 0};
  Failure other{FailureKind::runtime_error, "y", "generated code for graph g failed: node %<v> = embedding: index <n> is out of range", 0};
  Failure ce{FailureKind::compile_error, "z", rt.signature, 0};
  EXPECT_TRUE(minifier_interesting(rt, rt, false));
  EXPECT_FALSE(minifier_interesting(rt, other, false));
  EXPECT_FALSE(minifier_interesting(rt, ce, false));
  Failure acc{FailureKind::accuracy, "", "accuracy", 0}, acc_int{FailureKind::accuracy, "", "accuracy-integer", 0};
  EXPECT_FALSE(minifier_interesting(acc, acc_int, false));
  EXPECT_TRUE(minifier_interesting(acc, acc_int, true));
  Failure segv{FailureKind::crash, "", "Segmentation fault", 11}, abrt{FailureKind::crash, "", "Aborted", 6};
  EXPECT_FALSE(minifier_interesting(segv, abrt, false));
}

TEST(Minify, ABundleThatDoesNotFailSaysSoAndExitsOne) {
  fs::path b = bundle_for("nofail", "gelu:runtime_error", "dynamo", 2);
  auto m = read_json(b / "manifest.json");
  m["spec"]["inject"] = nlohmann::json::array();  // the bug is "fixed"
  std::ofstream(b / "manifest.json") << m.dump(2);
  auto r = reprokit_cli({"minify", b.string()}, b);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("the original graph does not fail in 10 runs: nothing to minify"), std::string::npos) << r.err;
}

TEST(Minify, InterruptedRunLeavesARunnableReproAndResumes) {
  auto dir = fresh_dir("resume");
  std::string cache = (dir / "cold-cache").string();  // cold: every candidate compiles, so the run takes a while
  reprokit_cli({"run", example("attention"), "--inject", "erf:runtime_error"}, dir,
               {{"REPRO_AFTER", "aot"}, {"REPRO_DIR", "out"}, {"REPRO_CACHE_DIR", cache}});
  auto b = bundles_in(dir / "out").at(0);
  int original = load_repro_file((b / "original" / "repro.rk").string()).graph.num_ops();
  {
    ProcessSpec s;
    s.argv = {REPROKIT_EXE, "minify", b.string()};
    s.env_set = {{"REPRO_CACHE_DIR", cache}};
    LineChild child(s);
    // Kill the whole run as soon as its first success is on disk.
    bool killed = false;
    for (int i = 0; i < 600 && !killed; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (!fs::exists(b / "minify_work" / "state.json")) continue;
      auto state = read_json(b / "minify_work" / "state.json");
      int ops = 0;
      for (auto& n : state["best"]["graph"]["nodes"]) (void)n, ++ops;
      if (ops < original) {
        child.kill();
        killed = true;
      }
    }
    ASSERT_TRUE(killed) << "the minifier made no progress to interrupt";
    EXPECT_FALSE(fs::exists(b / "report.json")) << "it finished before it was killed";
  }
  auto rerun = reprokit_cli({"repro", (b / "repro.rk").string()}, b, {{"REPRO_CACHE_DIR", cache}});
  EXPECT_EQ(rerun.exit_code, 1) << "the best-so-far repro must reproduce: " << rerun.out << rerun.err;
  auto resumed = reprokit_cli({"minify", b.string(), "--resume"}, b, {{"REPRO_CACHE_DIR", cache}});
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("resuming from"), std::string::npos) << resumed.err;
  EXPECT_EQ(load_repro_file((b / "repro.rk").string()).graph.num_ops(), 1);
}

TEST(Minify, JobsDoNotChangeTheResult) {
  auto dir = fresh_dir("jobs");
  reprokit_cli({"run", example("attention"), "--inject", "exp:runtime_error"}, dir, {{"REPRO_AFTER", "aot"}, {"REPRO_DIR", "out"}});
  auto b = bundles_in(dir / "out").at(0);
  auto one = reprokit_cli({"minify", b.string(), "--jobs", "1", "--no-verify"}, b);
  std::string g1 = load_repro_file((b / "repro.rk").string()).graph.nodes.back().name;
  auto two = reprokit_cli({"minify", b.string(), "--jobs", "2", "--no-verify"}, b);
  std::string g2 = load_repro_file((b / "repro.rk").string()).graph.nodes.back().name;
  EXPECT_EQ(one.exit_code, 0);
  EXPECT_EQ(two.exit_code, 0);
  EXPECT_EQ(g1, g2);
}

TEST(Minify, WorkerPrefixLaunchesEveryWorkerAndWorkDirHoldsTheQueries) {
  auto dir = fresh_dir("minify_prefix");
  fs::path b = bundle_for("minify_prefix_bundle", "gelu:crash", "dynamo", 3);
  // A local stand-in for `srun` / `ssh HOST`: records each launch, then runs the command in place.
  std::ofstream(dir / "launch.sh") << "#!/bin/sh\necho \"$*\" >> " << (dir / "calls.log").string() << "\nexec \"$@\"\n";
  fs::permissions(dir / "launch.sh", fs::perms::owner_all);
  auto r = reprokit_cli(
      {"minify", b.string(), "--worker-prefix", (dir / "launch.sh").string(), "--work-dir", (dir / "shared").string(), "--jobs", "2"}, b);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(load_repro_file((b / "repro.rk").string()).graph.num_ops(), 1);
  std::ifstream log(dir / "calls.log");
  std::string line;
  int launches = 0;
  while (std::getline(log, line)) {
    ++launches;
    EXPECT_NE(line.find(" minify-worker " + b.string()), std::string::npos) << line;
  }
  // A crash takes its worker with it, so crashing candidates need new launches: more than the two jobs.
  EXPECT_GT(launches, 2);
  EXPECT_FALSE(fs::is_empty(dir / "shared" / "queries"));
  EXPECT_FALSE(fs::exists(b / "minify_work" / "queries"));
}
