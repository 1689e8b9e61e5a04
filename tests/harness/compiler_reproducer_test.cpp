// The reproducers in a compiler's own Python API that a repro of the openvino, tvm and iree
// backends carries: each runs as written with only that compiler and numpy, says NOT REPRODUCED
// for a graph the compiler gets right and REPRODUCED for one whose float64 values it misses, and
// runs the model set as the failing run set it. Skipped where the Python side lacks the compiler.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "../../src/codegen/python_worker.h"
#include "cli_util.h"
#include "reprokit/harness/repro_file.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/support/errors.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

struct Compiler {
  const char* backend;
  const char* imports;  // what the reproducer imports
};
constexpr Compiler kCompilers[] = {
    {"openvino", "openvino, numpy"}, {"tvm", "tvm, onnx, numpy"}, {"iree", "iree.compiler, iree.runtime, onnx, numpy"}};

bool python_has(const char* imports) {
  ProcessSpec probe;
  probe.argv = {python_interpreter(), "-c", std::string("import ") + imports};
  probe.timeout_s = 120;
  try {
    return run_process(probe).exit_code == 0;
  } catch (const std::exception&) { return false; }
}

ProcessResult run_reproducer(const fs::path& script) {
  ProcessSpec run;
  run.argv = {python_interpreter(), script.string()};
  run.timeout_s = 300;
  return run_process(run);
}

}  // namespace

TEST(CompilerReproducer, RunsAsWrittenAndJudgesAgainstFloat64) {
  const Graph g = parse_graph("graph ok(%x: f32[3]) {\n  %y = exp(%x)\n  return (%y)\n}\n");
  int tried = 0;
  for (const Compiler& c : kCompilers) {
    if (!python_has(c.imports)) continue;
    ++tried;
    const fs::path dir = fresh_dir(std::string("reproducer_") + c.backend);
    ReproSpec spec;
    spec.options.compile.backend = c.backend;
    spec.expected.kind = FailureKind::accuracy;
    write_repro_files(dir.string(), g, {Tensor::from_doubles(DType::f32, {3}, {0.5, -1, 2})}, spec, "test");
    const fs::path script = dir / fmt::format("repro_{}.py", c.backend);
    ASSERT_TRUE(fs::exists(script)) << c.backend;
    for (const char* other : {"repro_onnxruntime.py", "repro_openvino.py", "repro_tvm.py", "repro_iree.py"})
      EXPECT_TRUE(script.filename() == other || !fs::exists(dir / other)) << other << " beside " << script;
    const std::string report = read_text(dir / "BUG_REPORT.md");
    EXPECT_NE(report.find("`python3 " + script.filename().string() + "` reproduces it"), std::string::npos) << report;
    ProcessResult ok = run_reproducer(script);
    EXPECT_EQ(ok.exit_code, 0) << c.backend << ": " << ok.out << ok.err;
    EXPECT_NE(ok.out.find("NOT REPRODUCED"), std::string::npos) << ok.out;
    // The same reproducer against wrong float64 values: one element far off.
    write_npy((dir / "repro_expected" / "y.npy").string(),
              Tensor::from_doubles(DType::f64, {3}, {std::exp(0.5), std::exp(-1.0) * 1.5, std::exp(2.0)}));
    ProcessResult bad = run_reproducer(script);
    EXPECT_EQ(bad.exit_code, 1) << c.backend << ": " << bad.out << bad.err;
    EXPECT_NE(bad.out.find("1 element(s) far off"), std::string::npos) << bad.out;
    EXPECT_NE(bad.out.find("[1]: expected"), std::string::npos) << bad.out;
  }
  if (!tried) GTEST_SKIP() << python_interpreter() << " has none of openvino, tvm, iree (scripts/install_deps.sh makes .venv with them)";
}

// TVM's PassContext as the failing run set it: the reproducer builds with those switches (an
// unknown pass name never gets that far: it is refused before anything is written).
TEST(CompilerReproducer, TvmRunsWithTheFailingRunsPassContext) {
  if (!python_has("tvm, onnx, numpy")) GTEST_SKIP() << python_interpreter() << " cannot import tvm and onnx (pip install apache-tvm onnx)";
  const fs::path dir = fresh_dir("reproducer_tvm_options");
  const Graph g = parse_graph("graph ok(%x: f32[3]) {\n  %y = exp(%x)\n  return (%y)\n}\n");
  ReproSpec spec;
  spec.options.compile.backend = "tvm";
  spec.options.compile.backend_options["opt_level"] = nlohmann::json("1").dump();
  spec.options.compile.backend_options["disabled_pass"] = nlohmann::json("relax.FoldConstant").dump();
  spec.expected.kind = FailureKind::accuracy;
  write_repro_files(dir.string(), g, {Tensor::from_doubles(DType::f32, {3}, {0.5, -1, 2})}, spec, "test");
  const std::string report = read_text(dir / "BUG_REPORT.md");
  EXPECT_NE(report.find("- Options: disabled_pass=[\"relax.FoldConstant\"], opt_level=1"), std::string::npos) << report;
  ProcessResult ok = run_reproducer(dir / "repro_tvm.py");
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("opt_level 1, disabled passes ['relax.FoldConstant']"), std::string::npos) << ok.out;

  const fs::path bad_dir = fresh_dir("reproducer_tvm_bad_option");
  spec.options.compile.backend_options["disabled_pass"] = nlohmann::json("x'); import os #").dump();
  EXPECT_THROW(write_repro_files(bad_dir.string(), g, {Tensor::from_doubles(DType::f32, {3}, {0.5, -1, 2})}, spec, "test"), UserError);
  EXPECT_FALSE(fs::exists(bad_dir / "repro_tvm.py"));
}
