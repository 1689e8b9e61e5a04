// `reprokit compare` (outputs computed elsewhere, judged against float64) and examples/ort_check
// (ONNX Runtime as the compiler under a `reduce`/`fuzz` check). The ORT cases need node and
// onnxruntime-node (scripts/install_deps.sh installs it) and skip without them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "../codegen/backend_test_util.h"
#include "../harness/cli_util.h"
#include "reprokit/harness/repro_file.h"
#include "reprokit/support/errors.h"
#include "../onnx/onnx_test_util.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/minifier/check_oracle.h"
#include "reprokit/runtime/input_gen.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/support/files.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

const char* kModel =
    "graph m(%x: f32[4, 3], %y: f32[3]) {\n"
    "  %a = mul(%x, %y)\n"
    "  %s = sin(%a)\n"
    "  %r = sum(%s, dims=[1])\n"
    "  %i = argmax(%a, dim=1)\n"
    "  return (%s, %r, %i)\n"
    "}\n";

// `graph`'s inputs (seeded) as dir/<input>.npy.
void write_inputs(const Graph& g, const fs::path& dir, uint64_t seed) {
  fs::create_directories(dir);
  std::vector<Tensor> in = generate_inputs(g, seed);
  for (int i = 0; i < g.num_inputs(); ++i) write_npy((dir / (g.node(i).name + ".npy")).string(), in[static_cast<size_t>(i)]);
}

void copy_dir(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
}

std::vector<std::string> compare_args(const fs::path& model, const fs::path& in, const fs::path& out) {
  return {"compare", model.string(), "--inputs", in.string(), "--outputs", out.string()};
}

std::string find_in_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    fs::path p = fs::path(dirs.substr(start, end - start)) / program;
    if (!p.parent_path().empty() && ::access(p.c_str(), X_OK) == 0) return p.string();
    start = end + 1;
  }
  return "";
}

const fs::path kCheck = fs::path(REPROKIT_SOURCE_DIR) / "examples" / "ort_check" / "check.mjs";

// node and onnxruntime-node, or "" with why they are missing in `why`.
std::string node_with_ort(std::string& why) {
  std::string node = find_in_path("node");
  if (node.empty()) why = "node is not on PATH";
  else if (!fs::exists(fs::path(REPROKIT_SOURCE_DIR) / "examples/ort_check/node_modules/onnxruntime-node"))
    why = "onnxruntime-node is not installed (scripts/install_deps.sh, or: cd examples/ort_check && npm install --ignore-scripts)";
  return why.empty() ? node : "";
}

#define REQUIRE_NODE_WITH_ORT(node)                       \
  std::string node##_missing;                             \
  const std::string node = node_with_ort(node##_missing); \
  if (node.empty()) GTEST_SKIP() << node##_missing

ProcessResult run_check(const std::string& node, const fs::path& model, std::map<std::string, std::string> env = {}) {
  ProcessSpec s;
  s.argv = {node, kCheck.string(), model.string()};
  s.cwd = model.parent_path().string();
  env.emplace("REPROKIT_EXE", REPROKIT_EXE);
  env.emplace("REPRO_CACHE_DIR", std::string(REPROKIT_BINARY_DIR) + "/test-cache");
  s.env_set = env;
  s.env_unset = {"REPRO_TOLERANCE", "ORT_CHECK_OPT_LEVEL"};
  s.timeout_s = 300;
  return run_process(s);
}

// dir/model.onnx and dir/inputs/, as `reprokit reduce --format onnx` writes a candidate.
fs::path onnx_candidate(const fs::path& dir, const std::string& text, uint64_t seed = 7) {
  Graph g = parse_graph(text);
  fs::create_directories(dir);
  return write_model_files(Dir::open(dir.string()), g, generate_inputs(g, seed), ModelFormat::onnx, {});
}

// An ONNX model whose names are not reprokit names: input "onnx::x" (mapped to onnx__x), a weight
// "w", outputs "out:sin" and "a/b" (which no file can be named: mapped to a_b).
std::string foreign_names_model() {
  ModelBuilder b;
  b.input("onnx::x", F32, {2, 3}).init("w", f32({3}, {0.5, -1.25, 2})).output("out:sin", F32).output("a/b", F32);
  b.node("Mul", {"onnx::x", "w"}, {"m"});
  b.node("Sin", {"m"}, {"out:sin"});
  b.node("Exp", {"m"}, {"a/b"});
  return b.bytes();
}

}  // namespace

TEST(Compare, PassesOnRunOutputsAndFailsOnAPerturbedOne) {
  const fs::path root = fresh_dir("compare");
  write_text(root / "m.rk", kModel);
  write_inputs(parse_graph(kModel), root / "in", 3);
  auto run = reprokit_cli({"run", "m.rk", "--inputs", "in", "--save-outputs", "out"}, root);
  ASSERT_EQ(run.exit_code, 0) << run.err;

  auto ok = reprokit_cli(compare_args("m.rk", "in", "out"), root);
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("reprokit compare: PASS: 3 outputs"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("%s  out/s.npy  f32[4, 3]  error vs float64"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("%i  out/i.npy  i64[4]  exact  ok"), std::string::npos) << ok.out;

  // One element of %s off by 0.5: far outside float32's noise, under either rule.
  copy_dir(root / "out", root / "bad");
  std::vector<double> s = read_npy((root / "out/s.npy").string()).to_doubles();
  s[5] += 0.5;
  write_npy((root / "bad/s.npy").string(), Tensor::from_doubles(DType::f32, {4, 3}, s));
  for (std::vector<std::string> extra : {std::vector<std::string>{}, {"--tolerance", "1e-3"}}) {
    auto args = compare_args("m.rk", "in", "bad");
    args.insert(args.end(), extra.begin(), extra.end());
    auto bad = reprokit_cli(args, root);
    EXPECT_EQ(bad.exit_code, 1) << bad.out << bad.err;
    EXPECT_NE(bad.out.find("%s  bad/s.npy  f32[4, 3]"), std::string::npos) << bad.out;
    EXPECT_NE(bad.out.find("FAIL\n"), std::string::npos) << bad.out;
    EXPECT_NE(bad.out.find("reprokit compare: MISMATCH"), std::string::npos) << bad.out;
    EXPECT_NE(bad.out.find("): output %s: "), std::string::npos) << bad.out;
  }
  // An integer output must match exactly.
  copy_dir(root / "out", root / "bad_i");
  std::vector<int64_t> i = read_npy((root / "out/i.npy").string()).to_int64s();
  i[0] = (i[0] + 1) % 3;
  write_npy((root / "bad_i/i.npy").string(), Tensor::from_int64s(DType::i64, {4}, i));
  auto bad_i = reprokit_cli(compare_args("m.rk", "in", "bad_i"), root);
  EXPECT_EQ(bad_i.exit_code, 1) << bad_i.out << bad_i.err;
  EXPECT_NE(bad_i.out.find("output %i (i64): 1 of 4 elements differ"), std::string::npos) << bad_i.out;
}

TEST(Compare, RefusesMissingAndIllShapedFiles) {
  const fs::path root = fresh_dir("compare_bad");
  write_text(root / "m.rk", kModel);
  write_inputs(parse_graph(kModel), root / "in", 3);
  auto run = reprokit_cli({"run", "m.rk", "--inputs", "in", "--save-outputs", "out"}, root);
  ASSERT_EQ(run.exit_code, 0) << run.err;

  copy_dir(root / "out", root / "missing");
  fs::remove(root / "missing/r.npy");
  copy_dir(root / "out", root / "shape");
  write_npy((root / "shape/r.npy").string(), Tensor::zeros(DType::f32, {3}));
  copy_dir(root / "out", root / "dtype");
  write_npy((root / "dtype/r.npy").string(), Tensor::zeros(DType::f64, {4}));
  copy_dir(root / "out", root / "garbage");
  write_text(root / "garbage/r.npy", "not a npy file");
  copy_dir(root / "in", root / "in_missing");
  fs::remove(root / "in_missing/y.npy");
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {compare_args("m.rk", "in", "missing"), "output %r: 'missing/r.npy' is missing"},
           {compare_args("m.rk", "in", "shape"), "shape/r.npy: holds f32[3], output %r is f32[4]"},
           {compare_args("m.rk", "in", "dtype"), "dtype/r.npy: holds f64[4], output %r is f32[4]"},
           {compare_args("m.rk", "in", "garbage"), "garbage/r.npy"},
           {compare_args("m.rk", "in_missing", "out"), "input %y: 'in_missing/y.npy' is missing"},
           {{"compare", "m.rk", "--outputs", "out"}, "input %x has no value in the model: give --inputs DIR"},
           {compare_args("m.rk", "in", "nowhere"), "nowhere"},
           {{"compare", "m.rk", "--inputs", "in"}, "--outputs DIR is required"},
           {{"compare", "m.rk", "--inputs", "in", "--outputs", "out", "--tolerance", "x"}, "--tolerance expects auto or a number"},
           {{"compare", "m.rk", "--inputs", "in", "--outputs", "out", "--frobnicate"}, "--frobnicate"},
       }) {
    auto r = reprokit_cli(c.args, root);
    EXPECT_EQ(r.exit_code, 2) << c.message << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
  auto help = reprokit_cli({"compare", "--help"}, root);
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--tolerance T|auto"), std::string::npos) << help.out;
}

// An ONNX model's files are named after its ONNX names (what ONNX Runtime calls the values), or,
// as `reprokit run --save-outputs` writes them, after reprokit's mapped names.
TEST(Compare, OnnxFilesAreNamedAfterTheOnnxNames) {
  const fs::path root = fresh_dir("compare_onnx_names");
  write_text(root / "f.onnx", foreign_names_model());
  // reprokit's names for them: run reads and writes those.
  fs::create_directories(root / "in_rk");
  write_npy((root / "in_rk/onnx__x.npy").string(), f32({2, 3}, {0.1, -0.7, 1.3, 2.2, -1.9, 0.4}));
  auto run = reprokit_cli({"run", "f.onnx", "--inputs", "in_rk", "--save-outputs", "out_rk"}, root);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_TRUE(fs::exists(root / "out_rk/out_sin.npy") && fs::exists(root / "out_rk/a_b.npy"));
  auto rk_named = reprokit_cli(compare_args("f.onnx", "in_rk", "out_rk"), root);
  EXPECT_EQ(rk_named.exit_code, 0) << rk_named.out << rk_named.err;

  // ONNX's names: onnx::x.npy, out:sin.npy; "a/b" cannot name a file, so a_b.npy.
  fs::create_directories(root / "in_onnx");
  fs::create_directories(root / "out_onnx");
  fs::copy_file(root / "in_rk/onnx__x.npy", root / "in_onnx/onnx::x.npy");
  fs::copy_file(root / "out_rk/out_sin.npy", root / "out_onnx/out:sin.npy");
  fs::copy_file(root / "out_rk/a_b.npy", root / "out_onnx/a_b.npy");
  auto onnx_named = reprokit_cli(compare_args("f.onnx", "in_onnx", "out_onnx"), root);
  EXPECT_EQ(onnx_named.exit_code, 0) << onnx_named.out << onnx_named.err;
  EXPECT_NE(onnx_named.out.find("out_onnx/out:sin.npy"), std::string::npos) << onnx_named.out;

  fs::remove(root / "out_onnx/out:sin.npy");
  auto missing = reprokit_cli(compare_args("f.onnx", "in_onnx", "out_onnx"), root);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("output %out_sin: 'out_onnx/out:sin.npy' or 'out_onnx/out_sin.npy' is missing"), std::string::npos) << missing.err;
}

TEST(OrtCheck, PassesOnAnExportedModel) {
  REQUIRE_NODE_WITH_ORT(node);
  const fs::path root = fresh_dir("ort_pass");
  const fs::path model = onnx_candidate(root / "c", kModel);
  auto r = run_check(node, model);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("ort_check: PASS: 3 output(s) of model.onnx"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("reprokit compare: PASS"), std::string::npos) << r.out;
}

// --time (bench_models' ONNX Runtime column): the median run in microseconds, then the kB the
// session and its runs added to the process's peak resident set; a bad count is refused. The
// parent here holds 512 MiB, as bench_models holds its models: the peak is the child's own (the
// kernel's maxRSS carries the parent's across exec, and gave 572 MB for every model).
TEST(OrtCheck, TimePrintsTheMedianRunAndThePeakMemory) {
  REQUIRE_NODE_WITH_ORT(node);
  const fs::path root = fresh_dir("ort_time");
  const fs::path model = onnx_candidate(root / "c", kModel);
  std::vector<char> held(size_t{512} << 20);
  std::memset(held.data(), 1, held.size());
  ProcessSpec s;
  s.argv = {node, kCheck.string(), "--time", model.string(), (model.parent_path() / "inputs").string(), "5", "1"};
  s.timeout_s = 300;
  ProcessResult r = run_process(s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::istringstream line(r.out);
  double us = -1, kb = -1;
  line >> us >> kb;
  ASSERT_FALSE(line.fail()) << r.out;
  EXPECT_GT(us, 0) << r.out;
  // Loading a model and running it takes memory; a whole machine's worth would be a wrong baseline.
  EXPECT_GT(kb, 0) << r.out;
  EXPECT_LT(kb, 256 << 10) << r.out;  // a three-op model: far below what the parent holds
  EXPECT_EQ(held[held.size() / 2], 1);

  s.argv[5] = "0";
  ProcessResult bad = run_process(s);
  EXPECT_EQ(bad.exit_code, 3) << bad.out << bad.err;
  EXPECT_NE((bad.out + bad.err).find("ITERS and THREADS must be positive integers"), std::string::npos) << bad.out << bad.err;
}

// ONNX Runtime writes an empty mat-debug-<pid>.log into $TMPDIR on every run; the check gives it a
// directory of its own and removes it, so thousands of runs (a reduce, a fuzz campaign) leave
// nothing behind.
TEST(OrtCheck, LeavesNothingInTheTemporaryDirectory) {
  REQUIRE_NODE_WITH_ORT(node);
  const fs::path root = fresh_dir("ort_tmp");
  const fs::path model = onnx_candidate(root / "c", kModel), tmp = root / "tmp";
  fs::create_directories(tmp);
  auto r = run_check(node, model, {{"TMPDIR", tmp.string()}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string left;
  for (auto& e : fs::directory_iterator(tmp)) left += " " + e.path().filename().string();
  EXPECT_EQ(left, "") << "left in TMPDIR";
}

TEST(OrtCheck, NamesOutputFilesAfterTheOnnxOutputs) {
  REQUIRE_NODE_WITH_ORT(node);
  const fs::path root = fresh_dir("ort_names");
  write_text(root / "f.onnx", foreign_names_model());
  fs::create_directories(root / "inputs");
  write_npy((root / "inputs/onnx::x.npy").string(), f32({2, 3}, {0.1, -0.7, 1.3, 2.2, -1.9, 0.4}));
  auto r = run_check(node, root / "f.onnx");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("/out:sin.npy"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/a_b.npy"), std::string::npos) << r.out;
}

// A dynamic dimension: the check tells compare its size (--shape), taken from the input's file.
TEST(OrtCheck, DynamicDimensionsTakeTheInputFilesSizes) {
  REQUIRE_NODE_WITH_ORT(node);
  const fs::path root = fresh_dir("ort_dynamic");
  ModelBuilder b;
  b.dynamic_input("x", F32, {2, 3}, 0, "batch").output("y", F32);
  b.node("Tanh", {"x"}, {"y"});
  write_text(root / "d.onnx", b.bytes());
  fs::create_directories(root / "inputs");
  write_npy((root / "inputs/x.npy").string(), f32({4, 3}, {0.1, -0.7, 1.3, 2.2, -1.9, 0.4, 3, -3, 0, 0.25, 0.5, -0.125}));
  auto r = run_check(node, root / "d.onnx");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("f32[4, 3]"), std::string::npos) << r.out;
}

// ORT's outputs made wrong on their way to `reprokit compare` (a REPROKIT_EXE that replaces one
// before running the real compare): the check reports the mismatch, exit 1.
TEST(OrtCheck, AWrongOutputIsAMismatch) {
  REQUIRE_NODE_WITH_ORT(node);
  const fs::path root = fresh_dir("ort_mismatch");
  const fs::path model = onnx_candidate(root / "c", kModel);
  write_npy((root / "wrong_r.npy").string(), Tensor::zeros(DType::f32, {4}));
  const fs::path wrapper = root / "tamper.sh";
  write_text(wrapper, "#!/bin/sh\n# argv: compare MODEL --outputs DIR --inputs DIR\ncp '" + (root / "wrong_r.npy").string() +
                          "' \"$4/r.npy\"\nexec '" + std::string(REPROKIT_EXE) + "' \"$@\"\n");
  fs::permissions(wrapper, fs::perms::owner_all);
  auto r = run_check(node, model, {{"REPROKIT_EXE", wrapper.string()}});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("reprokit compare: MISMATCH"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("ort_check: MISMATCH"), std::string::npos) << r.err;
}

// ORT failing at run time (indices out of range, which ORT checks) is a failure, exit 1.
TEST(OrtCheck, AnOrtRunErrorIsAFailure) {
  REQUIRE_NODE_WITH_ORT(node);
  const fs::path root = fresh_dir("ort_run_error");
  const fs::path model = onnx_candidate(root / "c", "graph g(%x: f32[2, 3], %i: i64[2, 3]) {\n  %y = gather(%x, %i, dim=1)\n  return (%y)\n}\n");
  write_npy((root / "c/inputs/i.npy").string(), Tensor::from_int64s(DType::i64, {2, 3}, {0, 1, 2, 7, 0, 1}));
  auto r = run_check(node, model);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("ort_check: FAILED: ONNX Runtime run: "), std::string::npos) << r.err;
}

// ORT has no float64 Erf on the CPU, onnxruntime-node no bfloat16: limitations, not bugs (exit 0, said so).
TEST(OrtCheck, AnOpOrtLacksIsUnsupported) {
  REQUIRE_NODE_WITH_ORT(node);
  const fs::path root = fresh_dir("ort_unsupported");
  const fs::path model = onnx_candidate(root / "c", "graph h(%x: f64[5]) {\n  %y = erf(%x)\n  return (%y)\n}\n");
  auto r = run_check(node, model);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("ort_check: unsupported: session creation: "), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("Could not find an implementation for Erf"), std::string::npos) << r.out;

  // onnxruntime-node has no bfloat16 tensors.
  const fs::path bf16 = onnx_candidate(root / "b", "graph b(%x: bf16[3]) {\n  %y = clone(%x)\n  return (%y)\n}\n");
  auto b = run_check(node, bf16);
  EXPECT_EQ(b.exit_code, 0) << b.out << b.err;
  EXPECT_NE(b.out.find("ort_check: unsupported: "), std::string::npos) << b.out << b.err;
  EXPECT_NE(b.out.find("bfloat16"), std::string::npos) << b.out << b.err;

  // ScatterElements' kernel refuses float16 with reduction 'add' when it runs.
  const fs::path f16 =
      onnx_candidate(root / "s", "graph s(%x: f16[1, 2], %i: i64[1, 1], %u: f16[1, 1]) {\n  %y = scatter_add(%x, %i, %u, dim=1)\n  return (%y)\n}\n");
  write_npy((root / "s/inputs/i.npy").string(), Tensor::from_int64s(DType::i64, {1, 1}, {1}));
  auto s = run_check(node, f16);
  EXPECT_EQ(s.exit_code, 0) << s.out << s.err;
  EXPECT_NE(s.out.find("ort_check: unsupported: run: "), std::string::npos) << s.out << s.err;
  EXPECT_NE(s.out.find("data type is not supported with ScatterElements"), std::string::npos) << s.out << s.err;
}

// The same limitations through `--backend onnxruntime`: unsupported (exit 2, said on its own
// line), never a compile error a fuzz campaign would file as a finding.
TEST(OrtCheck, AnOpOrtLacksIsUnsupportedByTheBackend) {
  REQUIRE_NODE_WITH_ORT(node);
  const fs::path root = fresh_dir("ort_backend_unsupported");
  std::ofstream(root / "erf.rk") << "graph h(%x: f64[5]) {\n  %y = erf(%x)\n  return (%y)\n}\n";
  std::ofstream(root / "bf.rk") << "graph b(%x: bf16[3]) {\n  %y = relu(%x)\n  return (%y)\n}\n";
  for (const char* model : {"erf.rk", "bf.rk"}) {
    SCOPED_TRACE(model);
    auto r =
        reprokit_cli({"run", model, "--backend", "onnxruntime"}, root, {{"REPRO_AFTER", "dynamo"}, {"REPRO_LEVEL", "4"}, {"REPRO_DIR", "bundles"}});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("reprokit run: unsupported: ONNX Runtime cannot take graph "), std::string::npos) << r.err;
    EXPECT_TRUE(!fs::exists(root / "bundles") || fs::is_empty(root / "bundles")) << "a limitation is no bundle";
  }
}

// Inputs that do not fit the model, a missing one, and a bad invocation: the check cannot judge
// (exit 3), and says why.
TEST(OrtCheck, BadInputsAndInvocationsAreNotJudged) {
  REQUIRE_NODE_WITH_ORT(node);
  const fs::path root = fresh_dir("ort_bad");
  const fs::path model = onnx_candidate(root / "c", kModel);
  write_npy((root / "c/inputs/y.npy").string(), Tensor::zeros(DType::f32, {4}));
  auto shape = run_check(node, model);
  EXPECT_EQ(shape.exit_code, 3) << shape.out << shape.err;
  EXPECT_NE(shape.err.find("y.npy: holds float32[4], the model's input 'y' is float32[3]"), std::string::npos) << shape.err;

  fs::remove(root / "c/inputs/y.npy");
  auto missing = run_check(node, model);
  EXPECT_EQ(missing.exit_code, 3) << missing.out << missing.err;
  EXPECT_NE(missing.err.find("input 'y': "), std::string::npos) << missing.err;

  write_text(root / "c/inputs/y.npy", "\x93NUMPY\x01");
  auto garbage = run_check(node, model);
  EXPECT_EQ(garbage.exit_code, 3) << garbage.out << garbage.err;
  EXPECT_NE(garbage.err.find("y.npy: not a .npy file this check reads"), std::string::npos) << garbage.err;

  auto no_model = run_check(node, root / "c" / "nothing.onnx");
  EXPECT_EQ(no_model.exit_code, 3);
  EXPECT_NE(no_model.err.find("nothing.onnx: no such file"), std::string::npos) << no_model.err;
}

// ---- the onnxruntime backend (src/codegen/onnxruntime_backend.cpp): ORT behind compile_graph ----

namespace {

CompileOptions ort_options() {
  CompileOptions o;
  o.backend = "onnxruntime";
  return o;
}

// x * sigmoid(x) in float64: ORT's QuickGeluFusion makes a contrib op with only a float32 kernel,
// and the session cannot be created (docs/FOUND_BUGS.md, ort_quickgelu_f64).
const char* kF64Block = R"(graph block(%x: f64[4, 16], %w: f64[16, 16], %b: f64[16]) {
  %h = matmul(%x, %w)
  %hb = add(%h, %b)
  %s = silu(%hb)
  %n = layer_norm(%s, [16])
  %t = tanh(%n)
  %o = add(%t, %x)
  return %o
}
)";

}  // namespace

TEST(OnnxruntimeBackend, RunsTheExamplesAndMatchesTheReference) {
  REQUIRE_NODE_WITH_ORT(node);
  for (const char* name : {"mlp", "attention"}) {
    SCOPED_TRACE(name);
    EXPECT_LT(max_error_vs_f64(load_module_file(example(name)).entry(), ort_options()), 1e-5);
  }
}

TEST(OnnxruntimeBackend, ASessionOrtCannotCreateIsACompileError) {
  REQUIRE_NODE_WITH_ORT(node);
  const Graph g = parse_module(kF64Block).entry();
  try {
    compile_graph(g, ort_options())->run(generate_inputs(g, 1));
    FAIL() << "ONNX Runtime ran the float64 silu";
  } catch (const CompileFailure& e) {
    EXPECT_EQ(e.kind, FailureKind::compile_error);
    EXPECT_NE(std::string(e.what()).find("QuickGelu"), std::string::npos) << e.what();
  }
}

TEST(OnnxruntimeBackend, InjectionsAreRefused) {
  CompileOptions o = ort_options();
  o.injections.push_back(parse_fault_injection("gelu:crash"));
  EXPECT_THROW(compile_graph(load_module_file(example("mlp")).entry(), o), UserError);
}

// The harness records ORT's failure and the minifier shrinks it like one of reprokit's own: the
// repro is the one op ORT mis-compiles, on one element.
TEST(OnnxruntimeBackend, TheMinifierShrinksARealOrtBugToOneOp) {
  REQUIRE_NODE_WITH_ORT(node);
  auto dir = fresh_dir("ort_backend_minify");
  write_text(dir / "block.rk", kF64Block);
  auto run = reprokit_cli({"run", "block.rk", "--backend", "onnxruntime"}, dir, {{"REPRO_AFTER", "dynamo"}, {"REPRO_DIR", "out"}});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_NE(run.err.find("compile_error in stage dynamo of graph block (onnxruntime backend)"), std::string::npos) << run.err;
  auto bundles = bundles_in(dir / "out");
  ASSERT_EQ(bundles.size(), 1u);
  auto minify = reprokit_cli({"minify", bundles[0].string()}, dir);
  ASSERT_EQ(minify.exit_code, 0) << minify.err;
  const Graph repro = load_repro_file((bundles[0] / "repro.rk").string()).graph;
  ASSERT_EQ(repro.num_ops(), 1) << print_graph(repro);
  EXPECT_EQ(repro.node(repro.outputs[0]).op, Op::silu);
  EXPECT_EQ(repro.node(0).type.numel(), 1);
}

// ---- ONNX Runtime's own optimisers: bisect names them, minify's report speaks ORT's terms ------

namespace {

// A bundle of `graph` failing on the onnxruntime backend, written by the harness at level 3.
fs::path ort_bundle(const fs::path& dir, const std::string& graph) {
  write_text(dir / "m.rk", graph);
  ProcessResult r = reprokit_cli({"run", "m.rk", "--backend", "onnxruntime"}, dir, {{"REPRO_AFTER", "dynamo"}, {"REPRO_LEVEL", "3"}});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto bundles = bundles_in(dir / "reprokit_out");
  EXPECT_EQ(bundles.size(), 1u);
  return bundles.empty() ? fs::path() : bundles.front();
}

const char* kPadPool =
    "graph pad_pool(%x: f32[1, 1, 4, 4]) {\n"
    "  %p = pad(%x, pads=[2, 3])\n"
    "  %a = avg_pool2d(%p, kernel=[1, 2])\n"
    "  return (%a)\n"
    "}\n";
const char* kPadMaxPool =
    "graph pad_max(%x: f32[1, 2, 3, 3]) {\n"
    "  %e = exp(%x)\n"
    "  %p = pad(%e, pads=[2, 3])\n"
    "  %a = max_pool2d(%p, kernel=[1, 2])\n"
    "  return (%a)\n"
    "}\n";
const char* kSiluF64 =
    "graph silu64(%x: f64[4, 8], %w: f64[8, 8]) {\n"
    "  %h = matmul(%x, %w)\n"
    "  %s = silu(%h)\n"
    "  return (%s)\n"
    "}\n";

// The checkout's Python running `args`, with `tmp` as its TMPDIR: ONNX Runtime's Python package
// leaves an empty mat-debug-<pid>.log there each time it is imported.
ProcessSpec venv_python(std::vector<std::string> args, const fs::path& tmp) {
  ProcessSpec s;
  s.argv = {(fs::path(REPROKIT_SOURCE_DIR) / ".venv" / "bin" / "python").string()};
  s.argv.insert(s.argv.end(), args.begin(), args.end());
  s.env_set["TMPDIR"] = tmp.string();
  return s;
}

bool venv_has_onnxruntime(const fs::path& tmp) {
  return fs::exists(fs::path(REPROKIT_SOURCE_DIR) / ".venv" / "bin" / "python") &&
         run_process(venv_python({"-c", "import onnxruntime, numpy"}, tmp)).exit_code == 0;
}

}  // namespace

TEST(OrtOptimisers, BisectNamesTheRewriteRuleAndTheFusion) {
  REQUIRE_NODE_WITH_ORT(node);
  const fs::path dir = fresh_dir("ort_bisect");
  for (auto [graph, culprit] : {std::pair{kPadPool, "Pad_Fusion"}, std::pair{kSiluF64, "QuickGeluFusion"}}) {
    const fs::path case_dir = dir / culprit;
    fs::create_directories(case_dir);
    const fs::path bundle = ort_bundle(case_dir, graph);
    ProcessResult r = reprokit_cli({"bisect", bundle.string()}, case_dir);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find(std::string(culprit) + " "), std::string::npos) << r.out;
    const nlohmann::json result = read_json(bundle / "bisect.json");
    const nlohmann::json& sw = result.at("compiler_switches");
    EXPECT_EQ(sw.value("rule", nlohmann::json()).is_string() ? sw["rule"] : sw["optimizer"], culprit) << sw.dump();
    EXPECT_EQ(sw["level"], std::string(culprit) == "Pad_Fusion" ? "basic" : "extended");
  }
}

TEST(OrtOptimisers, MinifiedReportSpeaksOnnxRuntimesTermsAndTriageGroupsByTheRule) {
  REQUIRE_NODE_WITH_ORT(node);
  const fs::path dir = fresh_dir("ort_report");
  std::vector<fs::path> bundles;
  for (auto [name, graph] : {std::pair{"avg", kPadPool}, std::pair{"max", kPadMaxPool}}) {
    fs::create_directories(dir / name);
    bundles.push_back(ort_bundle(dir / name, graph));
    ProcessResult m = reprokit_cli({"minify", bundles.back().string()}, dir / name);
    ASSERT_EQ(m.exit_code, 0) << m.out << m.err;
  }
  const std::string report = read_text(bundles[0] / "BUG_REPORT.md");
  EXPECT_EQ(report.rfind("# ONNX Runtime: session creation fails on pad -> avg_pool2d (rewrite rule Pad_Fusion)", 0), 0u) << report;
  EXPECT_NE(report.find("Pad should be smaller than kernel"), std::string::npos);  // the compiler's whole message
  EXPECT_NE(report.find("graph_optimization_level=all"), std::string::npos);
  EXPECT_NE(report.find("onnxruntime-node 1."), std::string::npos);  // the compiler's version
  EXPECT_EQ(read_json(bundles[0] / "report.json")["compiler_switches"]["rule"], "Pad_Fusion");
  EXPECT_TRUE(fs::exists(bundles[0] / "repro_onnxruntime.py"));
  EXPECT_TRUE(fs::exists(bundles[0] / "repro_expected" / "a.npy"));

  // One rule, two ops it breaks: one bug.
  ProcessResult t = reprokit_cli({"triage", dir.string(), "--json"}, dir);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  const nlohmann::json groups = nlohmann::json::parse(t.out);
  ASSERT_EQ(groups.size(), 1u) << t.out;
  EXPECT_EQ(groups[0]["count"], 2);
  EXPECT_EQ(groups[0]["cause"], "rule Pad_Fusion");
  EXPECT_EQ(groups[0]["location"], "pool_attributes.h:88");

  // The reproducer runs as written where Python has onnxruntime and numpy.
  if (!venv_has_onnxruntime(dir)) GTEST_SKIP() << "no Python with onnxruntime in .venv (scripts/install_deps.sh)";
  ProcessResult py = run_process(venv_python({(bundles[0] / "repro_onnxruntime.py").string()}, dir));
  EXPECT_EQ(py.exit_code, 1) << py.out << py.err;
  EXPECT_NE(py.out.find("REPRODUCED: ONNX Runtime cannot create the session"), std::string::npos) << py.out;
}

TEST(OrtOptimisers, TheReproducerJudgesOutputsAgainstFloat64) {
  REQUIRE_NODE_WITH_ORT(node);
  const fs::path dir = fresh_dir("ort_reproducer");
  if (!venv_has_onnxruntime(dir)) GTEST_SKIP() << "no Python with onnxruntime in .venv (scripts/install_deps.sh)";
  // A graph ORT runs correctly: its reproducer says so.
  const Graph g = parse_graph("graph ok(%x: f32[3]) {\n  %y = exp(%x)\n  return (%y)\n}\n");
  ReproSpec spec;
  spec.options.compile.backend = "onnxruntime";
  spec.expected.kind = FailureKind::accuracy;
  write_repro_files(dir.string(), g, {Tensor::from_doubles(DType::f32, {3}, {0.5, -1, 2})}, spec, "test");
  const ProcessSpec run = venv_python({(dir / "repro_onnxruntime.py").string()}, dir);
  ProcessResult ok = run_process(run);
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("NOT REPRODUCED"), std::string::npos) << ok.out;
  // The same reproducer against wrong float64 values: one element far off.
  write_npy((dir / "repro_expected" / "y.npy").string(), Tensor::from_doubles(DType::f64, {3}, {std::exp(0.5), std::exp(-1.0) * 1.5, std::exp(2.0)}));
  ProcessResult bad = run_process(run);
  EXPECT_EQ(bad.exit_code, 1) << bad.out;
  EXPECT_NE(bad.out.find("1 element(s) far off"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("[1]: expected"), std::string::npos) << bad.out;
}

TEST(OrtOptimisers, BackendOptionsOnnxRuntimeDoesNotTakeAreRefusedNamingThem) {
  // Checked before ONNX Runtime is asked, so this needs neither node nor onnxruntime-node.
  const fs::path dir = fresh_dir("ort_options");
  write_text(dir / "m.rk", kPadPool);
  const std::pair<std::string, std::string> cases[] = {
      {"fast_math=1", "the onnxruntime backend takes the backend options graph_optimization_level and disabled_optimizers, not 'fast_math'"},
      {"graph_optimization_level=fast", "backend option graph_optimization_level: 'fast' is not one of disabled, basic, extended, layout, all"},
      {"graph_optimization_level=2", "backend option graph_optimization_level: expected a string, got 2"},
      {"disabled_optimizers=Pad_Fusion;rm", "backend option disabled_optimizers: 'Pad_Fusion;rm' is not a comma-separated list of optimiser names"},
  };
  for (const auto& [option, message] : cases) {
    ProcessResult r = reprokit_cli({"run", "m.rk", "--backend", "onnxruntime", "--backend-option", option}, dir);
    EXPECT_EQ(r.exit_code, 2) << option << r.out << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << option << ": " << r.err;
  }
}

TEST(OrtOptimisers, AReportRefusesALevelThatIsNotOnnxRuntimes) {
  // A bundle is untrusted: its level goes into the generated Python script only as one of ORT's names.
  const fs::path dir = fresh_dir("ort_report_level");
  const Graph g = parse_graph("graph ok(%x: f32[3]) {\n  %y = exp(%x)\n  return (%y)\n}\n");
  ReproSpec spec;
  spec.options.compile.backend = "onnxruntime";
  spec.options.compile.backend_options["graph_optimization_level"] = nlohmann::json("all'\nimport os #").dump();
  spec.expected.kind = FailureKind::accuracy;
  try {
    write_repro_files(dir.string(), g, {Tensor::from_doubles(DType::f32, {3}, {0.5, -1, 2})}, spec, "test");
    FAIL() << "written";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("is not one of disabled, basic, extended, layout, all"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "repro_onnxruntime.py"));
}
