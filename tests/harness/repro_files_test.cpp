// The generated repro files work as promised: the GoogleTest case builds against an installed
// reprokit (find_package) and fails while the bug is present; the PyTorch program runs under
// Debian's python3-torch on the same inputs and matches reprokit's eager outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include <sys/stat.h>

#include "cli_util.h"
#include "reprokit/harness/bundle.h"
#include "reprokit/harness/repro_file.h"
#include "reprokit/support/files.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/runtime/interpreter.h"
#include "reprokit/runtime/npy.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

fs::path failing_bundle(const std::string& name, const std::string& model, const std::string& inject) {
  auto dir = fresh_dir(name);
  reprokit_cli({"run", example(model), "--inject", inject}, dir, {{"REPRO_AFTER", "aot"}, {"REPRO_DIR", "out"}});
  auto b = bundles_in(dir / "out");
  EXPECT_EQ(b.size(), 1u);
  return b.at(0) / "original";
}

ProcessResult shell(const std::string& cmd, const fs::path& cwd) {
  ProcessSpec s;
  s.argv = {"/bin/sh", "-c", cmd};
  s.cwd = cwd.string();
  s.timeout_s = 400;
  s.env_set = {{"REPRO_CACHE_DIR", std::string(REPROKIT_BINARY_DIR) + "/test-cache"}};
  return run_process(s);
}

}  // namespace

TEST(ReproFiles, GeneratedGoogleTestBuildsAgainstTheInstallAndFails) {
  fs::path repro = failing_bundle("gtest_case", "mlp", "gelu:runtime_error");
  fs::path prefix = fresh_dir("install_prefix");
  auto install = shell("cmake --install " + std::string(REPROKIT_BINARY_DIR) + " --prefix " + prefix.string(), repro);
  ASSERT_EQ(install.exit_code, 0) << install.out << install.err;
  auto build = shell("cmake -S . -B build -DCMAKE_PREFIX_PATH=" + prefix.string() + " && cmake --build build -j2", repro);
  ASSERT_EQ(build.exit_code, 0) << build.out << build.err;
  auto test = shell("./build/repro_test", repro);
  EXPECT_NE(test.exit_code, 0) << "the generated test must fail while the bug is present:\n" << test.out;
  EXPECT_NE(test.out.find("injected runtime error"), std::string::npos) << test.out;
}

TEST(ReproFiles, PyTorchProgramMatchesEagerOutputs) {
  if (std::system("/usr/bin/python3 -c 'import torch, numpy' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3-torch is not installed: the generated PyTorch program was not run";
  for (auto model : {"mlp", "attention", "embedding_classifier"}) {
    SCOPED_TRACE(model);
    fs::path repro = failing_bundle(std::string("torch_") + model, model, "exp:runtime_error");
    auto r = shell("/usr/bin/python3 repro_torch.py", repro);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    ReproFile rf = load_repro_file((repro / "repro.rk").string());
    auto eager = interpret(rf.graph, rf.inputs);
    for (size_t k = 0; k < rf.graph.outputs.size(); ++k) {
      const std::string name = rf.graph.node(rf.graph.outputs[k]).name;
      auto theirs = read_npy((repro / "torch_outputs" / (name + ".npy")).string()).to_doubles();
      auto ours = eager[k].to_doubles();
      ASSERT_EQ(theirs.size(), ours.size()) << name;
      double scale = 1;
      for (double v : ours) scale = std::max(scale, std::fabs(v));
      for (size_t i = 0; i < ours.size(); ++i) EXPECT_NEAR(theirs[i], ours[i], 1e-4 * scale) << name << "[" << i << "]";
    }
  }
}

// repro_torch.py shows an accuracy bug on its own: the compiled outputs are saved
// beside it, and it exits 1 on the planted bug (un-minified and minified) and 0 on the twin. A
// planted wrong rewrite of pointwise-fusion always has a twin: the same graph without the pass.
TEST(ReproFiles, PyTorchProgramShowsAnAccuracyBugAndPassesOnTheTwin) {
  if (std::system("/usr/bin/python3 -c 'import torch, numpy' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3-torch is not installed: the generated PyTorch program was not run";
  auto dir = fresh_dir("torch_accuracy");
  auto run = reprokit_cli({"run", example("mlp"), "--backend", "cpp", "--inject-pass", "pointwise-fusion:1"}, dir,
                          {{"REPRO_AFTER", "aot"}, {"REPRO_LEVEL", "4"}, {"REPRO_DIR", "out"}});
  ASSERT_EQ(run.exit_code, 1) << run.err;
  auto bundles = bundles_in(dir / "out");
  ASSERT_EQ(bundles.size(), 1u);
  fs::path original = bundles[0] / "original";
  ASSERT_TRUE(fs::is_directory(original / "repro_compiled")) << "the compiled outputs of an accuracy failure are saved";
  auto r = shell("/usr/bin/python3 repro_torch.py", original);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("MISMATCH"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("PyTorch torch.float32 error"), std::string::npos) << r.out;

  auto m = reprokit_cli({"minify", bundles[0].string(), "--jobs", "2"}, dir);
  ASSERT_EQ(m.exit_code, 0) << m.out << m.err;
  r = shell("/usr/bin/python3 repro_torch.py", bundles[0]);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("MISMATCH"), std::string::npos) << r.out;
  ASSERT_TRUE(fs::exists(bundles[0] / "twin.rk")) << m.out;
  ASSERT_TRUE(fs::is_directory(bundles[0] / "twin_compiled"));
  auto t = shell("/usr/bin/python3 twin_torch.py", bundles[0]);
  EXPECT_EQ(t.exit_code, 0) << t.out << t.err;
  EXPECT_NE(t.out.find("AGREE"), std::string::npos) << t.out;
  // A failure that is not about numbers leaves nothing to compare: the script runs and exits 0.
  fs::path crash = failing_bundle("torch_no_compiled", "mlp", "exp:runtime_error");
  EXPECT_FALSE(fs::exists(crash / "repro_compiled"));
  EXPECT_EQ(shell("/usr/bin/python3 repro_torch.py", crash).exit_code, 0);
}

// The generated GoogleTest is named after the graph, but always as a test that runs: a graph named
// DISABLED_g made a disabled test that passed silently.
TEST(ReproFiles, TheGeneratedTestIsNeverDisabled) {
  auto dir = fresh_dir("repro_disabled_name");
  Graph g = parse_graph("graph DISABLED_g(%x: f32[2]) {\n  %y = neg(%x)\n  return (%y)\n}");
  ReproSpec spec;
  write_repro_files(dir.string(), g, {Tensor::from_doubles(DType::f32, {2}, {1, 2})}, spec, "test");
  std::ifstream in(dir / "repro_test.cpp");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("TEST(Repro, g_DISABLED_g)"), std::string::npos) << text;
  EXPECT_EQ(text.find("TEST(Repro, DISABLED_"), std::string::npos);
}

// Resumed runs number on after an earlier run's files; the names are untrusted.
// What a compiler's maintainer asks first: the machine, the CPU and the Python the compilers run under.
TEST(ReproFiles, TheEnvironmentNamesTheCpuAndPython) {
  const nlohmann::json env = environment_info();
  for (const char* key : {"os", "cpu", "cpu_threads", "python", "compiler"}) EXPECT_TRUE(env.contains(key)) << key << ": " << env.dump();
  EXPECT_NE(env["cpu"], "") << env.dump();
  EXPECT_GT(env["cpu_threads"].get<int>(), 0);
  const fs::path dir = fresh_dir("environment");
  const Graph g = parse_graph("graph ok(%x: f32[3]) {\n  %y = exp(%x)\n  return (%y)\n}\n");
  ReproSpec spec;
  spec.expected.kind = FailureKind::accuracy;
  write_repro_files(dir.string(), g, {Tensor::from_doubles(DType::f32, {3}, {0.5, -1, 2})}, spec, "test");
  const std::string report = read_text(dir / "BUG_REPORT.md");
  EXPECT_NE(report.find("\"cpu\": "), std::string::npos) << report;
  EXPECT_NE(report.find("\"python\": "), std::string::npos) << report;
}

TEST(NumberedFiles, NextNumberAfterIgnoresWhatIsNotANumber) {
  EXPECT_EQ(next_number_after({}, "c", ""), 1);
  EXPECT_EQ(next_number_after({"c00003", "c00010", "cx", "c", "d00099"}, "c", ""), 11);
  EXPECT_EQ(next_number_after({"c99999999999999999999", "c00002"}, "c", ""), 3) << "past int64: no number a counter reaches";
  EXPECT_EQ(next_number_after({"q00007.json", "q00008.json.tmp", "q-1.json"}, "q", ".json"), 8);
}

// A count past 9 digits goes on: c1000000000 is after c999999999, never taken for a new name.
TEST(NumberedFiles, NextNumberAfterCountsPastNineDigits) {
  EXPECT_EQ(next_number_after({"c999999999", "c1000000000"}, "c", ""), 1000000001);
  EXPECT_EQ(next_number_after({"c2147483647", "c00002"}, "c", ""), 2147483648) << "past an int";
  EXPECT_EQ(next_number_after({"c999999999999999999"}, "c", ""), 1000000000000000000) << "18 digits";
}

// A bundle stores each weight once: the un-minified repro's inputs are hard links to the bundle's
// inputs/ (read-only, so writing one in place fails instead of changing the record), and so are
// the minified repro's inputs that kept their values.
TEST(ReproFiles, ABundleStoresEachWeightOnce) {
  const fs::path original = failing_bundle("weights_once", "mlp", "tanh:runtime_error");
  const fs::path bundle = original.parent_path();
  auto same_file = [](const fs::path& a, const fs::path& b) {
    struct stat sa {
    }, sb{};
    return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev;
  };
  for (const char* w : {"w1.npy", "b1.npy", "w2.npy", "x.npy"}) {
    ASSERT_TRUE(fs::exists(bundle / "inputs" / w)) << w;
    EXPECT_TRUE(same_file(bundle / "inputs" / w, original / "repro_inputs" / w)) << w;
    EXPECT_EQ(fs::status(bundle / "inputs" / w).permissions() & fs::perms::owner_write, fs::perms::none) << w;
  }
  // The repro still reruns from its own directory, and rewriting it replaces its files.
  auto r = reprokit_cli({"repro", (original / "repro.rk").string()}, bundle);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  r = reprokit_cli({"minify", bundle.string(), "--jobs", "1"}, bundle);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const auto& e : fs::directory_iterator(bundle / "repro_inputs")) {
    const fs::path in_bundle = bundle / "inputs" / e.path().filename();
    if (fs::exists(in_bundle) && read_text(in_bundle) == read_text(e.path())) { EXPECT_TRUE(same_file(in_bundle, e.path())) << e.path(); }
  }
  EXPECT_TRUE(same_file(bundle / "inputs" / "w1.npy", original / "repro_inputs" / "w1.npy")) << "the minifier left original/ as it was";
}

// Dir::link_if_same links only a regular file with exactly the bytes asked for.
TEST(ReproFiles, LinkIfSameLinksOnlyIdenticalRegularFiles) {
  auto dir = fresh_dir("link_if_same");
  write_text(dir / "store" / "a.npy", "abc");
  fs::create_directories(dir / "out");
  fs::create_symlink(dir / "store" / "a.npy", dir / "store" / "link.npy");
  Dir store = Dir::open((dir / "store").string()), out = Dir::open((dir / "out").string());
  EXPECT_FALSE(out.link_if_same("x.npy", "abd", store, "a.npy"));
  EXPECT_FALSE(out.link_if_same("x.npy", "abcd", store, "a.npy"));
  EXPECT_FALSE(out.link_if_same("x.npy", "abc", store, "missing.npy"));
  EXPECT_FALSE(out.link_if_same("x.npy", "abc", store, "link.npy")) << "a symlink is never followed";
  EXPECT_FALSE(fs::exists(dir / "out" / "x.npy"));
  EXPECT_TRUE(out.link_if_same("x.npy", "abc", store, "a.npy"));
  EXPECT_EQ(read_text(dir / "out" / "x.npy"), "abc");
  EXPECT_EQ(fs::hard_link_count(dir / "store" / "a.npy"), 2u);
}
