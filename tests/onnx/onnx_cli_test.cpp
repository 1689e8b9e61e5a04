// The CLI on ONNX models: `reprokit import`, `reprokit export`, `reprokit run MODEL.onnx`; and a
// real model, nn.TransformerEncoder exported by PyTorch, through eager and cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "../harness/cli_util.h"
#include "onnx_test_util.h"
#include "reprokit/codegen/compiler.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/onnx/onnx_export.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/support/files.h"

namespace reprokit::testing {
namespace {

namespace fs = std::filesystem;

// A small model with weights, a foreign-named graph and a shape computation.
std::string small_model() {
  ModelBuilder b(13, "torch-jit-export");
  b.input("input.1", F32, {2, 4}).output("/out/Relu_output_0", F32, std::vector<int64_t>{2, 3});
  b.init("onnx::Gemm_5", f32({3, 4}, {0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.7, 0.8, -0.9, 1.0, 1.1, 1.2}));
  b.init("fc.bias", f32({3}, {0.5, -0.5, 0.25}));
  attr(b.node("Gemm", {"input.1", "onnx::Gemm_5", "fc.bias"}, {"/fc/Gemm_output_0"}), "transB", 1);
  b.node("Shape", {"/fc/Gemm_output_0"}, {"shape"});
  b.node("Reshape", {"/fc/Gemm_output_0", "shape"}, {"r"});
  b.node("Relu", {"r"}, {"/out/Relu_output_0"});
  return b.bytes();
}

TEST(OnnxCli, ImportThenRunMatchesRunningTheOnnxModel) {
  fs::path d = fresh_dir("onnx_import");
  { std::ofstream(d / "m.onnx", std::ios::binary) << small_model(); }
  auto a = reprokit_cli({"run", "m.onnx", "--backend", "eager", "--save-outputs", "direct"}, d);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  auto imp = reprokit_cli({"import", "m.onnx", "-o", "imported"}, d);
  ASSERT_EQ(imp.exit_code, 0) << imp.err;
  EXPECT_TRUE(fs::exists(d / "imported" / "torch_jit_export.rk"));
  EXPECT_TRUE(fs::exists(d / "imported" / "inputs" / "onnx__Gemm_5.npy"));
  EXPECT_TRUE(fs::exists(d / "imported" / "inputs" / "fc.bias.npy"));
  auto b = reprokit_cli({"run", "imported/torch_jit_export.rk", "--inputs", "imported/inputs", "--backend", "eager", "--save-outputs", "via_rk"}, d);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  Tensor x = read_npy((d / "direct" / "_out_Relu_output_0.npy").string());
  Tensor y = read_npy((d / "via_rk" / "_out_Relu_output_0.npy").string());
  EXPECT_EQ(x.to_doubles(), y.to_doubles());
  // The cpp backend agrees.
  auto c = reprokit_cli({"run", "m.onnx", "--save-outputs", "cpp"}, d);
  ASSERT_EQ(c.exit_code, 0) << c.err;
  Tensor z = read_npy((d / "cpp" / "_out_Relu_output_0.npy").string());
  auto xv = x.to_doubles(), zv = z.to_doubles();
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_NEAR(xv[i], zv[i], 1e-5);
}

// --inputs files named after the ONNX inputs are used (inputs '0' and '1', mapped to
// %v_0 and %v_1, were silently replaced by random values), a dynamic dimension takes its size from
// the file, a file that fits no input is refused, and mismatches name both shapes in full.
TEST(OnnxCli, InputsByTheirOnnxNamesAndDynamicSizesFromTheirValues) {
  fs::path d = fresh_dir("onnx_inputs_by_name");
  ModelBuilder b(17);
  b.dynamic_input("0", F32, {0, 4}, 0, "n").dynamic_input("1", F32, {0, 4}, 0, "n").output("2", F32);
  b.node("Add", {"0", "1"}, {"2"});
  { std::ofstream(d / "m.onnx", std::ios::binary) << b.bytes(); }
  fs::create_directories(d / "in");
  write_npy((d / "in" / "0.npy").string(), Tensor::from_doubles(DType::f32, {3, 4}, std::vector<double>(12, 1.0)));
  write_npy((d / "in" / "1.npy").string(), Tensor::from_doubles(DType::f32, {3, 4}, std::vector<double>(12, 2.0)));
  auto r = reprokit_cli({"run", "m.onnx", "--inputs", "in", "--backend", "eager", "--save-outputs", "out"}, d);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.err, "--inputs in: 2 inputs from files (%v_0 <- in/0.npy, %v_1 <- in/1.npy)");
  EXPECT_EQ(read_npy((d / "out" / "v_2.npy").string()).to_doubles(), std::vector<double>(12, 3.0));
  // No values and no --shape: the message says both ways to give the size.
  r = reprokit_cli({"run", "m.onnx", "--backend", "eager"}, d);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_HAS(r.err, "give its size with --shape v_0:[d0,d1,...], or its values as v_0.npy in --inputs DIR");
  // A file whose shape the model cannot take: both shapes in full.
  fs::create_directories(d / "wide");
  write_npy((d / "wide" / "0.npy").string(), Tensor::zeros(DType::f32, {3, 5}));
  write_npy((d / "wide" / "1.npy").string(), Tensor::zeros(DType::f32, {3, 4}));
  r = reprokit_cli({"run", "m.onnx", "--inputs", "wide", "--backend", "eager"}, d);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_HAS(r.err, "wide/0.npy: input '0' is [n, 4] in the model, not [3, 5] (dimension 1 differs)");
  // A file that fits no input (an expected output kept beside the inputs) is not read, and run says so.
  write_npy((d / "in" / "x.npy").string(), Tensor::zeros(DType::f32, {3, 4}));
  r = reprokit_cli({"run", "m.onnx", "--inputs", "in", "--backend", "eager"}, d);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.err, "note: --inputs in: x.npy matches no input of graph");
  EXPECT_HAS(r.err, "and is not read (the files read are: 0.npy or v_0.npy, 1.npy or v_1.npy)");
}

// ONNX inputs "1x" and "v_1x": reprokit calls the first %v_1x (a name cannot start with a digit),
// so v_1x.npy is named after both. A file named after an ONNX input holds that input's values only
// (ONNX Runtime computes 1 - 10 = -9 from these files); an input without a file of its own ONNX
// name that another input's file could be meant for is refused, naming both and the file.
TEST(OnnxCli, AFileNamedAfterAnOnnxInputBindsThatInputOnly) {
  fs::path d = fresh_dir("onnx_inputs_collide");
  ModelBuilder b(17);
  b.input("1x", F32, {1}).input("v_1x", F32, {1}).output("y", F32);
  b.node("Sub", {"1x", "v_1x"}, {"y"});
  { std::ofstream(d / "m.onnx", std::ios::binary) << b.bytes(); }
  fs::create_directories(d / "in");
  write_npy((d / "in" / "1x.npy").string(), Tensor::from_doubles(DType::f32, {1}, {1.0}));
  write_npy((d / "in" / "v_1x.npy").string(), Tensor::from_doubles(DType::f32, {1}, {10.0}));
  auto r = reprokit_cli({"run", "m.onnx", "--inputs", "in", "--backend", "eager", "--save-outputs", "out"}, d);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_npy((d / "out" / "y.npy").string()).to_doubles(), std::vector<double>{-9.0});
  EXPECT_HAS(r.err, "2 inputs from files (%v_1x <- in/1x.npy, %v_1x_1 <- in/v_1x.npy)");
  EXPECT_EQ(r.err.find("not read"), std::string::npos) << r.err;

  // `reduce` binds the files the same way: with them, the original gives -9 and is interesting.
  const std::string check = std::string(REPROKIT_EXE) + " run {} --inputs inputs --backend eager";
  auto red = reprokit_cli({"reduce", "m.onnx", "--inputs", "in", "--check", check, "--fail-regex", "min=-9 max=-9", "-o", "red", "--no-verify"}, d);
  EXPECT_EQ(red.exit_code, 0) << red.out << red.err;

  // Without 1x.npy, v_1x.npy could be meant for either input: refused, for run and reduce alike.
  fs::remove(d / "in" / "1x.npy");
  r = reprokit_cli({"run", "m.onnx", "--inputs", "in", "--backend", "eager"}, d);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_HAS(r.err, "in/v_1x.npy could hold ONNX input 'v_1x' (its name) or ONNX input '1x' (which reprokit calls %v_1x)");
  EXPECT_HAS(r.err, "give '1x' its own file, 1x.npy");
  red = reprokit_cli({"reduce", "m.onnx", "--inputs", "in", "--check", check, "-o", "red2"}, d);
  EXPECT_EQ(red.exit_code, 2) << red.out << red.err;
  EXPECT_HAS(red.err, "in/v_1x.npy could hold ONNX input 'v_1x'");
}

// An ONNX input's name is the model's to choose: what `run` prints of it (the file read for it, a
// refusal quoting that file) holds nothing a terminal acts on, and forges no line of output.
TEST(OnnxCli, RunPrintsNoControlCharactersFromOnnxNames) {
  fs::path d = fresh_dir("onnx_name_controls");
  const std::string forged = "reprokit run: all clear";
  const std::string name = "x\x1b]0;pwned\x07\n" + forged;
  ModelBuilder b(17);
  b.input(name, F32, {2}).output("y", F32);
  b.node("Neg", {name}, {"y"}, "neg\x1b[2J");
  { std::ofstream(d / "m.onnx", std::ios::binary) << b.bytes(); }
  fs::create_directories(d / "in");
  write_npy((d / "in" / (name + ".npy")).string(), Tensor::from_doubles(DType::f32, {2}, {1.0, 2.0}));
  auto r = reprokit_cli({"run", "m.onnx", "--inputs", "in", "--backend", "eager"}, d);
  ASSERT_EQ(r.exit_code, 0) << escape_controls_keep_newlines(r.err);
  expect_inert_output(r.out, forged);
  expect_inert_output(r.err, forged);
  EXPECT_HAS(r.err, "<- in/x\\e]0;pwned\\x07\\nreprokit run: all clear.npy");
  // A file that is no .npy: the refusal quotes its path escaped.
  write_text(d / "bad" / (name + ".npy"), "junk");
  r = reprokit_cli({"run", "m.onnx", "--inputs", "bad", "--backend", "eager"}, d);
  EXPECT_EQ(r.exit_code, 2) << escape_controls_keep_newlines(r.err);
  expect_inert_output(r.err, forged);
  EXPECT_HAS(r.err, "bad/x\\e]0;pwned");
}

// A shape given as a graph input is specialised from the value the user gives (a Reshape
// whose target is an input was refused), and without a value the error says how to give one.
TEST(OnnxCli, ShapeInputsAreSpecialisedFromTheirFiles) {
  fs::path d = fresh_dir("onnx_shape_input");
  ModelBuilder b(17);
  b.input("x", F32, {3, 4}).input("shape", I64, {2}).output("y", F32, std::vector<int64_t>{4, 3});
  b.node("Reshape", {"x", "shape"}, {"y"});
  { std::ofstream(d / "m.onnx", std::ios::binary) << b.bytes(); }
  fs::create_directories(d / "in");
  std::vector<double> xs(12);
  for (int i = 0; i < 12; ++i) xs[static_cast<size_t>(i)] = i;
  write_npy((d / "in" / "x.npy").string(), Tensor::from_doubles(DType::f32, {3, 4}, xs));
  auto r = reprokit_cli({"run", "m.onnx", "--backend", "eager"}, d);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_HAS(r.err, "is the model input 'shape': its value is needed at import time; give it as shape.npy in --inputs DIR");
  write_npy((d / "in" / "shape.npy").string(), Tensor::from_int64s(DType::i64, {2}, {4, 3}));
  r = reprokit_cli({"run", "m.onnx", "--inputs", "in", "--backend", "cpp", "--save-outputs", "out"}, d);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.err, "specialised into the graph (shapes, axes): in/shape.npy");
  Tensor y = read_npy((d / "out" / "y.npy").string());
  EXPECT_EQ(y.shape(), (Shape{4, 3}));
  EXPECT_EQ(y.to_doubles(), xs);
  // A value of the wrong type names the file and the declaration.
  write_npy((d / "in" / "shape.npy").string(), Tensor::from_int64s(DType::i32, {2}, {4, 3}));
  r = reprokit_cli({"run", "m.onnx", "--inputs", "in", "--backend", "eager"}, d);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_HAS(r.err, "in/shape.npy: holds i32[2], the model declares input 'shape' i64[2]");
}

// An ONNX graph named with a '.' (a valid name) imports to a .rk that parses and runs (the
// parser once refused the graph name it was given).
TEST(OnnxCli, AGraphNameWithADotImportsToARkThatRuns) {
  fs::path d = fresh_dir("onnx_dotted");
  ModelBuilder b(13, "my.graph");
  b.input("x", F32, {2}).output("y", F32);
  b.node("Relu", {"x"}, {"y"});
  { std::ofstream(d / "m.onnx", std::ios::binary) << b.bytes(); }
  auto imp = reprokit_cli({"import", "m.onnx", "-o", "imp"}, d);
  ASSERT_EQ(imp.exit_code, 0) << imp.err;
  auto run = reprokit_cli({"run", "imp/my.graph.rk", "--backend", "eager"}, d);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
}

// "Nothing already written is overwritten": the model's graph name picks the
// file import writes, and export's -o names one; an existing file is refused (exit 2, naming it)
// before anything is written.
TEST(OnnxCli, ImportAndExportNeverOverwrite) {
  fs::path d = fresh_dir("onnx_no_overwrite");
  { std::ofstream(d / "m.onnx", std::ios::binary) << small_model(); }
  ASSERT_EQ(reprokit_cli({"import", "m.onnx", "-o", "imported"}, d).exit_code, 0);
  { std::ofstream(d / "imported" / "torch_jit_export.rk") << "mine"; }
  auto again = reprokit_cli({"import", "m.onnx", "-o", "imported"}, d);
  EXPECT_EQ(again.exit_code, 2) << again.out << again.err;
  EXPECT_HAS(again.err, "imported/torch_jit_export.rk' already exists");
  EXPECT_EQ(read_text(d / "imported" / "torch_jit_export.rk"), "mine");
  // A weight's file already there: refused before the .rk is written.
  fs::create_directories(d / "data" / "inputs");
  { std::ofstream(d / "data" / "inputs" / "fc.bias.npy") << "my data"; }
  auto weights = reprokit_cli({"import", "m.onnx", "-o", "data"}, d);
  EXPECT_EQ(weights.exit_code, 2) << weights.out << weights.err;
  EXPECT_HAS(weights.err, "data/inputs/fc.bias.npy' already exists");
  EXPECT_EQ(read_text(d / "data" / "inputs" / "fc.bias.npy"), "my data");
  EXPECT_FALSE(fs::exists(d / "data" / "torch_jit_export.rk"));
  // export -o onto an existing file.
  { std::ofstream(d / "out.onnx") << "mine"; }
  auto exp = reprokit_cli({"export", example("mlp"), "-o", "out.onnx"}, d);
  EXPECT_EQ(exp.exit_code, 2) << exp.out << exp.err;
  EXPECT_HAS(exp.err, "out.onnx' already exists");
  EXPECT_EQ(read_text(d / "out.onnx"), "mine");
  EXPECT_EQ(reprokit_cli({"export", example("mlp"), "-o", "new.onnx"}, d).exit_code, 0);
}

TEST(OnnxCli, ExportThenImport) {
  fs::path d = fresh_dir("onnx_export");
  auto e = reprokit_cli({"export", example("mlp"), "-o", "mlp.onnx"}, d);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  ImportedModel m = import_onnx((d / "mlp.onnx").string());
  Graph g = parse_graph(read_file(example("mlp"), kMaxTextFileBytes));
  EXPECT_EQ(m.graph.name, g.name);
  auto r = reprokit_cli({"run", "mlp.onnx", "--backend", "eager"}, d);
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(OnnxCli, HelpAndBadInput) {
  fs::path d = fresh_dir("onnx_bad");
  for (const char* cmd : {"import", "export"}) {
    auto h = reprokit_cli({cmd, "--help"}, d);
    EXPECT_EQ(h.exit_code, 0);
    EXPECT_HAS(h.out, "usage: reprokit " + std::string(cmd));
  }
  EXPECT_EQ(reprokit_cli({"import", "m.onnx"}, d).exit_code, 2);  // no -o
  { std::ofstream(d / "junk.onnx") << "not a model"; }
  auto j = reprokit_cli({"import", "junk.onnx", "-o", "out"}, d);
  EXPECT_EQ(j.exit_code, 2);
  EXPECT_HAS(j.err, "junk.onnx");
  auto r = reprokit_cli({"run", "junk.onnx"}, d);
  EXPECT_EQ(r.exit_code, 2);
  // A dynamic input: a clear error, then --shape.
  ModelBuilder b(13);
  b.dynamic_input("x", F32, {0, 3}, 0, "N").output("y", F32);
  b.node("Relu", {"x"}, {"y"});
  { std::ofstream(d / "dyn.onnx", std::ios::binary) << b.bytes(); }
  auto dy = reprokit_cli({"run", "dyn.onnx", "--backend", "eager"}, d);
  EXPECT_EQ(dy.exit_code, 2);
  EXPECT_HAS(dy.err, "--shape x:");
  auto ok = reprokit_cli({"run", "dyn.onnx", "--backend", "eager", "--shape", "x:[5,3]"}, d);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_HAS(ok.out, "f32[5, 3]");
  EXPECT_EQ(reprokit_cli({"run", example("mlp"), "--shape", "x:[1]"}, d).exit_code, 2);
  // An unsupported op: exit 2 naming the node.
  ModelBuilder u(13);
  u.input("x", F32, {1, 1, 2, 2}).output("y", F32);
  attr_ints(u.node("LpPool", {"x"}, {"y"}, "pool"), "kernel_shape", {2, 2});
  { std::ofstream(d / "pool.onnx", std::ios::binary) << u.bytes(); }
  auto p = reprokit_cli({"import", "pool.onnx", "-o", "o"}, d);
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_HAS(p.err, "node 0 'pool' (LpPool)");
}

// nn.TransformerEncoder (2 layers, d_model 32) exported by tests/models/export_models.py.
TEST(OnnxRealModel, TransformerEncoderMatchesPyTorch) {
  const char* python = "/usr/bin/python3";
  ProcessSpec probe;
  probe.argv = {python, "-c", "import torch, torchvision, onnx"};
  probe.timeout_s = 120;
  ProcessResult pr;
  try {
    pr = run_process(probe);
  } catch (const std::exception& e) { GTEST_SKIP() << "no " << python << ": " << e.what(); }
  if (pr.exit_code != 0) GTEST_SKIP() << python << " cannot import torch, torchvision and onnx (WITH_TORCH=1 scripts/install_deps.sh installs them)";
  fs::path d = fresh_dir("onnx_transformer");
  ProcessSpec exp;
  exp.argv = {python, std::string(REPROKIT_SOURCE_DIR) + "/tests/models/export_models.py", d.string(), "--only", "transformer_encoder"};
  exp.timeout_s = 300;
  ProcessResult er = run_process(exp);
  ASSERT_EQ(er.exit_code, 0) << er.err;
  fs::path md = d / "transformer_encoder";
  ImportedModel m = import_onnx((md / "model.onnx").string());
  Tensor x = read_npy((md / "input.npy").string());
  Tensor expected = read_npy((md / "expected.npy").string());
  std::vector<Tensor> inputs;
  for (int i = 0; i < m.graph.num_inputs(); ++i) {
    auto v = m.values.find(m.graph.node(i).name);
    inputs.push_back(v != m.values.end() ? v->second : x);
  }
  auto check = [&](const char* backend, const Tensor& got) {
    SCOPED_TRACE(backend);
    ASSERT_EQ(got.shape(), expected.shape());
    auto a = got.to_doubles(), b = expected.to_doubles();
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_LE(std::fabs(a[i] - b[i]), 1e-5 + 1e-3 * std::fabs(b[i])) << "at " << i;
      worst = std::max(worst, std::fabs(a[i] - b[i]));
    }
    std::printf("%s: max abs error vs PyTorch %.3g\n", backend, worst);
  };
  check("eager", interpret(m.graph, inputs).at(0));
  CompileOptions co;
  co.backend = "cpp";
  co.cache_dir = std::string(REPROKIT_BINARY_DIR) + "/test-cache";
  check("cpp", compile_graph(m.graph, co)->run(inputs).at(0));

  // Under the harness at the aot level with the accuracy check: no false failure; with a planted
  // matmul accuracy bug, a bundle that minifies to one op whose repro.onnx ONNX's checker accepts.
  fs::path model = md / "model.onnx";
  auto clean =
      reprokit_cli({"run", model.string(), "--inputs", md.string()}, d, {{"REPRO_AFTER", "aot"}, {"REPRO_LEVEL", "4"}, {"REPRO_DIR", "clean_out"}});
  EXPECT_EQ(clean.exit_code, 0) << clean.out << clean.err;
  EXPECT_TRUE(bundles_in(d / "clean_out").empty()) << "a false failure: " << clean.err;
  auto bad = reprokit_cli({"run", model.string(), "--inputs", md.string(), "--inject", "matmul:accuracy"}, d,
                          {{"REPRO_AFTER", "aot"}, {"REPRO_LEVEL", "4"}, {"REPRO_DIR", "bad_out"}});
  EXPECT_EQ(bad.exit_code, 1) << bad.out << bad.err;
  auto bundles = bundles_in(d / "bad_out");
  ASSERT_FALSE(bundles.empty()) << bad.err;
  auto minify = reprokit_cli({"minify", bundles[0].string()}, bundles[0]);
  ASSERT_EQ(minify.exit_code, 0) << minify.out << minify.err;
  EXPECT_EQ(read_json(bundles[0] / "report.json")["final_ops"], 1);
  ProcessSpec checker;
  checker.argv = {python, "-c", "import onnx, sys; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)",
                  (bundles[0] / "repro.onnx").string()};
  checker.timeout_s = 120;
  auto cr = run_process(checker);
  EXPECT_EQ(cr.exit_code, 0) << cr.err;
}

}  // namespace
}  // namespace reprokit::testing
