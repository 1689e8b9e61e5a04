// The reproducers in a compiler's own Python API that a repro of the openvino, tvm and iree
// backends carries: each runs as written with only that compiler and numpy, says NOT REPRODUCED
// for a graph the compiler gets right and REPRODUCED for one whose float64 values it misses, and
// runs the model set as the failing run set it. Skipped where the Python side lacks the compiler.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>

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

// numpy has no bfloat16: a bf16 input travels as its bits and reaches the compiler as bfloat16,
// and a bf16 output is judged in bf16's ulps. (OpenVINO's Python binding takes no bfloat16: its
// backend calls a bf16 graph unsupported and writes no reproducer.)
TEST(CompilerReproducer, PassesAndJudgesBfloat16) {
  const Graph g = parse_graph("graph b(%x: bf16[3]) {\n  %y = neg(%x)\n  return (%y)\n}\n");
  int tried = 0;
  for (const Compiler& c : kCompilers) {
    if (std::string_view(c.backend) == "openvino" || !python_has(c.imports) || !python_has("ml_dtypes")) continue;
    ++tried;
    const fs::path dir = fresh_dir(std::string("reproducer_bf16_") + c.backend);
    ReproSpec spec;
    spec.options.compile.backend = c.backend;
    spec.expected.kind = FailureKind::accuracy;
    write_repro_files(dir.string(), g, {Tensor::from_doubles(DType::bf16, {3}, {0.5, -1, 2})}, spec, "test");
    ProcessResult ok = run_reproducer(dir / fmt::format("repro_{}.py", c.backend));
    EXPECT_EQ(ok.exit_code, 0) << c.backend << ": " << ok.out << ok.err;
    EXPECT_NE(ok.out.find("NOT REPRODUCED"), std::string::npos) << c.backend << ": " << ok.out;
  }
  if (!tried) GTEST_SKIP() << python_interpreter() << " has neither tvm nor iree with ml_dtypes";
}

// Each compiler set as the failing run set it: the report lists the options, and the reproducer
// builds with them (a bad option never gets that far: it is refused before anything is written).
TEST(CompilerReproducer, RunsWithTheFailingRunsOptions) {
  struct Case {
    Compiler compiler;
    std::map<std::string, nlohmann::json> options;
    const char* listed;  // in BUG_REPORT.md
    const char* said;    // in the reproducer's first line
    std::pair<const char*, nlohmann::json> bad;
  };
  const Case cases[] = {
      {kCompilers[1],
       {{"opt_level", "1"}, {"disabled_pass", "relax.FoldConstant"}},
       "- Options: disabled_pass=[\"relax.FoldConstant\"], opt_level=1",
       "opt_level 1, disabled passes ['relax.FoldConstant']",
       {"disabled_pass", "x'); import os #"}},
      {kCompilers[0],
       {{"EXECUTION_MODE_HINT", "ACCURACY"}, {"disabled_properties", "SNIPPETS_MODE"}},
       "- Options: EXECUTION_MODE_HINT=\"ACCURACY\", disabled_properties=[\"SNIPPETS_MODE\"]",
       "'EXECUTION_MODE_HINT': 'ACCURACY', 'SNIPPETS_MODE': 'DISABLE'",
       {"SNIPPETS_MODE", "OFF'}; import os #"}},
      {kCompilers[2],
       {{"opt_level", "O2"}, {"disabled_flags", "iree-opt-const-eval"}},
       "- Options: disabled_flags=[\"iree-opt-const-eval\"], opt_level=\"O2\"",
       "'--iree-opt-level=O2', '--iree-opt-const-eval=false'",
       {"disabled_flags", "iree-opt-const-eval=true --iree-x"}},
  };
  const Graph g = parse_graph("graph ok(%x: f32[3]) {\n  %y = exp(%x)\n  return (%y)\n}\n");
  int tried = 0;
  for (const Case& c : cases) {
    if (!python_has(c.compiler.imports)) continue;
    ++tried;
    const fs::path dir = fresh_dir(std::string("reproducer_options_") + c.compiler.backend);
    ReproSpec spec;
    spec.options.compile.backend = c.compiler.backend;
    for (const auto& [key, value] : c.options) spec.options.compile.backend_options[key] = value.dump();
    spec.expected.kind = FailureKind::accuracy;
    write_repro_files(dir.string(), g, {Tensor::from_doubles(DType::f32, {3}, {0.5, -1, 2})}, spec, "test");
    const std::string report = read_text(dir / "BUG_REPORT.md");
    EXPECT_NE(report.find(c.listed), std::string::npos) << report;
    const fs::path script = dir / fmt::format("repro_{}.py", c.compiler.backend);
    ProcessResult ok = run_reproducer(script);
    EXPECT_EQ(ok.exit_code, 0) << c.compiler.backend << ": " << ok.out << ok.err;
    EXPECT_NE(ok.out.find(c.said), std::string::npos) << ok.out;

    const fs::path bad_dir = fresh_dir(std::string("reproducer_bad_option_") + c.compiler.backend);
    spec.options.compile.backend_options[c.bad.first] = c.bad.second.dump();
    EXPECT_THROW(write_repro_files(bad_dir.string(), g, {Tensor::from_doubles(DType::f32, {3}, {0.5, -1, 2})}, spec, "test"), UserError)
        << c.compiler.backend;
    EXPECT_FALSE(fs::exists(bad_dir / script.filename()));
  }
  if (!tried) GTEST_SKIP() << python_interpreter() << " has none of openvino, tvm, iree (scripts/install_deps.sh makes .venv with them)";
}
