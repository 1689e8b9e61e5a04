// The command line as a user meets it: help, bad usage, bad input files (exit 2 with a message
// naming the file, line and column), print and passes.
#include <gtest/gtest.h>

#include <sstream>

#include "cli_util.h"
#include "reprokit/runtime/npy.h"

using namespace reprokit;
using namespace reprokit::testing;

TEST(Cli, HelpListsEveryCommand) {
  auto dir = fresh_dir("cli_help");
  auto r = reprokit_cli({"--help"}, dir);
  EXPECT_EQ(r.exit_code, 0);
  for (auto c : {"run", "minify", "repro", "analyze", "bisect", "print", "passes"})
    EXPECT_NE(r.out.find(std::string("  ") + c), std::string::npos) << c;
  auto run_help = reprokit_cli({"run", "--help"}, dir);
  EXPECT_NE(run_help.out.find("REPRO_TIMEOUT"), std::string::npos);
  EXPECT_NE(run_help.out.find("REPRO_KERNELS_LIBRARY"), std::string::npos) << "the cpp backend's variables are listed too";
}

// Every name --only and --skip take is listed, the first guesses first (they run first).
TEST(Cli, ListStrategiesNamesWhatOnlyAndSkipTake) {
  auto dir = fresh_dir("cli_strategies");
  auto r = reprokit_cli({"minify", "--list-strategies"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("named-in-failure ", 0), 0u) << r.out;
  for (const char* name : {"truncate", "cut-front", "bypass", "simplify-all"})
    EXPECT_NE(r.out.find(std::string("\n") + name + " "), std::string::npos) << name;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    const std::string name = line.substr(0, line.find(' '));
    auto skip = reprokit_cli({"minify", "no-such-bundle", "--skip", name}, dir);
    EXPECT_EQ(skip.err.find("unknown strategy"), std::string::npos) << name << ": " << skip.err;
  }
}

TEST(Cli, BadUsageExitsTwo) {
  auto dir = fresh_dir("cli_usage");
  auto r = reprokit_cli({"frobnicate"}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown command 'frobnicate'"), std::string::npos);
  r = reprokit_cli({"run"}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("expected exactly one MODEL.rk"), std::string::npos) << r.err;
  r = reprokit_cli({"run", example("mlp"), "--seed", "many"}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--seed expects an integer, got 'many'"), std::string::npos) << r.err;
  r = reprokit_cli({"run", example("mlp"), "--backend", "tpu"}, dir);
  EXPECT_EQ(r.exit_code, 2);
  r = reprokit_cli({"minify", "x", "--only", "shuffle"}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown strategy 'shuffle'"), std::string::npos) << r.err;
}

TEST(Cli, BadModelFilesNameFileLineAndColumn) {
  auto dir = fresh_dir("cli_badfile");
  std::ofstream(dir / "bad.rk") << "graph g(%x: f32[2]) {\n  %y = nope(%x)\n  return (%y)\n}\n";
  auto r = reprokit_cli({"run", "bad.rk"}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.rk:2:8: error: unknown op 'nope'"), std::string::npos) << r.err;
  r = reprokit_cli({"print", "missing.rk"}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cannot read 'missing.rk'"), std::string::npos) << r.err;
  std::ofstream(dir / "bad.json") << "{ nope";
  r = reprokit_cli({"print", "bad.json"}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.json: invalid JSON"), std::string::npos) << r.err;
}

TEST(Cli, RunInputsAndOutputsAsNpy) {
  auto dir = fresh_dir("cli_npy");
  auto r = reprokit_cli({"run", example("mlp"), "--backend", "eager", "--save-outputs", "out"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir / "out" / "t.npy"));
  EXPECT_TRUE(fs::exists(dir / "out" / "h.npy"));
  fs::create_directories(dir / "in");
  fs::copy_file(dir / "out" / "h.npy", dir / "in" / "x.npy");  // wrong shape for %x
  r = reprokit_cli({"run", example("mlp"), "--inputs", "in"}, dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("input %x is declared f32[8, 16]"), std::string::npos) << r.err;
}

// --iters times warm runs of the compiled stack after the checked run: the figure comes with the
// number of runs it is the median of, forward-only and with --train; a count out of range is bad usage.
TEST(Cli, RunItersTimesWarmRuns) {
  auto dir = fresh_dir("cli_iters");
  auto r = reprokit_cli({"run", example("mlp"), "--iters", "7"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("%t: f32[8, 4]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("time: median "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" over 7 warm runs (cpp backend; compile "), std::string::npos) << r.out;
  r = reprokit_cli({"run", example("mlp"), "--iters", "2", "--train", "--backend", "eager"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("%grad_w1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" over 2 warm runs (eager backend, forward and backward;"), std::string::npos) << r.out;
  for (const char* bad : {"0", "-3", "100001"}) {
    r = reprokit_cli({"run", example("mlp"), "--iters", bad}, dir);
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find("option --iters expects a number of timed runs"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("%t:"), std::string::npos) << "refused before the run: " << r.out;
  }
}

// --profile times each kernel over the --iters runs and lists the longest with the nodes and ops
// they compute (forward and backward parts apart with --train); without --iters, or on a backend
// that does not time its kernels, it is refused before the run.
TEST(Cli, RunProfileTimesEachKernel) {
  auto dir = fresh_dir("cli_profile");
  auto r = reprokit_cli({"run", example("mlp"), "--iters", "3", "--profile"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" over 3 warm runs (cpp backend; compile "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" kernels, each the median of 3 runs: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("share   median us  kernel  [ops]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("h.matmul  [matmul]  f32[8, 32]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("s.amax  [amax]  f32[8, 1]"), std::string::npos) << r.out;  // the softmax, decomposed
  r = reprokit_cli({"run", example("mlp"), "--iters", "2", "--profile", "--train"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("forward: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("backward: "), std::string::npos) << r.out;
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"run", example("mlp"), "--profile"},
                                              std::vector<std::string>{"run", example("mlp"), "--iters", "2", "--profile", "--backend", "eager"}}) {
    r = reprokit_cli(bad, dir);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("option --profile"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("%t:"), std::string::npos) << "refused before the run: " << r.out;
  }
}

// --save-outputs never overwrites, and an output named like a gradient's file
// is refused rather than written over by the gradient; both before the run.
TEST(Cli, SaveOutputsNeverOverwrites) {
  auto dir = fresh_dir("cli_save_no_overwrite");
  ASSERT_EQ(reprokit_cli({"run", example("mlp"), "--backend", "eager", "--save-outputs", "out"}, dir).exit_code, 0);
  { std::ofstream(dir / "out" / "t.npy") << "mine"; }
  auto again = reprokit_cli({"run", example("mlp"), "--backend", "eager", "--save-outputs", "out"}, dir);
  EXPECT_EQ(again.exit_code, 2) << again.out << again.err;
  EXPECT_NE(again.err.find("out/t.npy' already exists"), std::string::npos) << again.err;
  std::ifstream in(dir / "out" / "t.npy");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "mine");

  std::ofstream(dir / "g.rk") << "graph g(%x: f32[2] grad) {\n  %grad_x = mul(%x, 3.0)\n  return (%grad_x)\n}\n";
  auto clash = reprokit_cli({"run", "g.rk", "--train", "--backend", "eager", "--save-outputs", "o"}, dir);
  EXPECT_EQ(clash.exit_code, 2) << clash.out << clash.err;
  EXPECT_NE(clash.err.find("output %grad_x and the gradient of input %x would both be 'o/grad_x.npy'"), std::string::npos) << clash.err;
  EXPECT_FALSE(fs::exists(dir / "o"));
  // Without --train there is no gradient file: the output is saved.
  EXPECT_EQ(reprokit_cli({"run", "g.rk", "--backend", "eager", "--save-outputs", "o"}, dir).exit_code, 0);
  EXPECT_TRUE(fs::exists(dir / "o" / "grad_x.npy"));
}

TEST(Cli, PrintAndPasses) {
  auto dir = fresh_dir("cli_print");
  auto r = reprokit_cli({"print", example("mlp")}, dir);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("%a = gelu(%h, approximate=\"tanh\")"), std::string::npos) << r.out;
  auto p = reprokit_cli({"passes"}, dir);
  for (auto pass : {"dce", "cse", "constant-folding", "algebraic-simplification", "pointwise-fusion", "reduction-fusion"})
    EXPECT_NE(p.out.find(pass), std::string::npos) << pass;
}

// compare says in one line when an output passes only because a relu decision within the noise of
// zero went the other way: the difference a user sees between two backends is then no bug.
TEST(Cli, CompareSaysWhenADecisionNearAKinkExplainsTheDifference) {
  auto dir = fresh_dir("cli_compare_kink");
  write_text(dir / "m.rk", "graph g(%x: f32[4]) {\n  %r = relu(%x)\n  %y = mul(%r, 100.0)\n  return (%y)\n}\n");
  write_text(dir / "in" / "x.npy", encode_npy(Tensor::from_doubles(DType::f32, {4}, {0.5, -0.25, 0.75, 7e-6})));
  write_text(dir / "out" / "y.npy", encode_npy(Tensor::from_doubles(DType::f32, {4}, {50, 0, 75, 0})));
  auto r = reprokit_cli({"compare", "m.rk", "--inputs", "in", "--outputs", "out"}, dir);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("reprokit compare: note: output %y: its error (largest 0.0007) is more than rounding moves it"), std::string::npos) << r.out;
  write_text(dir / "out" / "y.npy", encode_npy(Tensor::from_doubles(DType::f32, {4}, {50, 0, 75, 7e-4})));
  r = reprokit_cli({"compare", "m.rk", "--inputs", "in", "--outputs", "out"}, dir);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("note:"), std::string::npos) << r.out;
}

// A reprokit binary under another name (an installed reprokit-1.4, a copy kept beside a rebuild)
// starts its children as itself, never a "reprokit" looked up in PATH: its minifier's workers run
// with neither REPROKIT_EXE set nor reprokit on PATH.
TEST(Cli, ARenamedBinaryStartsItsChildrenAsItself) {
  auto dir = fresh_dir("cli_renamed");
  fs::copy_file(REPROKIT_EXE, dir / "reprokit-renamed");
  auto renamed = [&](const std::vector<std::string>& args, std::map<std::string, std::string> env) {
    ProcessSpec s;
    s.argv = {(dir / "reprokit-renamed").string()};
    s.argv.insert(s.argv.end(), args.begin(), args.end());
    s.cwd = dir.string();
    env.emplace("PATH", "/usr/bin:/bin");
    env.emplace("REPRO_CACHE_DIR", std::string(REPROKIT_BINARY_DIR) + "/test-cache");
    s.env_set = env;
    s.env_unset = {"REPROKIT_EXE", "REPRO_AFTER", "REPRO_LEVEL", "REPRO_DIR", "REPRO_INJECT"};
    s.timeout_s = 300;
    return run_process(s);
  };
  auto r = renamed({"run", example("mlp"), "--inject", "tanh:runtime_error"}, {{"REPRO_AFTER", "dynamo"}, {"REPRO_DIR", "out"}});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  auto b = bundles_in(dir / "out");
  ASSERT_EQ(b.size(), 1u);
  r = renamed({"minify", b[0].string(), "--jobs", "1"}, {});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.err.find("not found in PATH"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("verified: REPRODUCED"), std::string::npos) << r.out << r.err;
}
