// The independent oracle: every op and every example model, run by PyTorch (Debian's
// python3-torch) on the same .npy inputs, must agree with the reference interpreter, in the
// graph's own precision and in float64 mode. Skips when torch is not installed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "../ir/all_ops.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/runtime/input_gen.h"
#include "reprokit/runtime/interpreter.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/runtime/torch_emitter.h"
#include "../scratch_dir.h"

using namespace reprokit;
namespace fs = std::filesystem;

namespace {

bool have_torch() {
  static int ok = std::system("/usr/bin/python3 -c 'import torch, numpy' >/dev/null 2>&1") == 0 ? 1 : 0;
  return ok;
}

// Per-op tolerances; whole models accumulate rounding differences (reprokit's reference
// accumulates in double, PyTorch in float), so they get `slack` times more.
double tolerance(DType t, bool f64, double slack) {
  if (f64 || t == DType::f64) return 1e-9;
  if (t == DType::f32) return 2e-5 * slack;
  if (t == DType::f16) return 2e-3;
  if (t == DType::bf16) return 1.6e-2;
  return 2e-5;
}

// Runs g through torch and the interpreter; returns a description of the first mismatch or "".
std::string compare_with_torch(const Graph& g, const fs::path& dir, bool f64, double slack = 1) {
  fs::create_directories(dir / "in");
  auto inputs = generate_inputs(g, 1234);
  for (int i = 0; i < g.num_inputs(); ++i) write_npy((dir / "in" / (g.node(i).name + ".npy")).string(), inputs[static_cast<size_t>(i)]);
  std::ofstream(dir / "prog.py") << emit_torch_program(g);
  std::string cmd = "/usr/bin/python3 " + (dir / "prog.py").string() + " " + (dir / "in").string() + " " + (dir / "out").string() +
                    (f64 ? " --f64" : "") + " > " + (dir / "log.txt").string() + " 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream log(dir / "log.txt");
    return "torch program failed: " + std::string(std::istreambuf_iterator<char>(log), {});
  }
  InterpretOptions opts;
  opts.cast_to_f64 = f64;
  auto ours = interpret(g, inputs, opts);
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    const Node& out = g.node(g.outputs[k]);
    if (!fs::exists(dir / "out" / (out.name + ".npy"))) return "the torch program wrote no %" + out.name;
    Tensor theirs = read_npy((dir / "out" / (out.name + ".npy")).string());
    if (theirs.shape() != ours[k].shape()) return "%" + out.name + ": shape differs";
    if (theirs.dtype() != ours[k].dtype())
      return "%" + out.name + ": torch's dtype is " + std::string(dtype_name(theirs.dtype())) + ", the graph's " +
             std::string(dtype_name(ours[k].dtype()));
    auto a = ours[k].to_doubles(), b = theirs.to_doubles();
    // The tolerance of the least precise dtype on the way: an f32 output of bf16 math is bf16-accurate.
    DType worst = out.type.dtype;
    for (auto& n : g.nodes)
      if (is_floating(n.type.dtype) && tolerance(n.type.dtype, f64, 1) > tolerance(worst, f64, 1)) worst = n.type.dtype;
    double tol = tolerance(worst, f64, slack) * (worst == DType::f32 ? 1 : slack / 5);
    // Scaled by the output's largest magnitude: low-precision cancellation (h - max(h)) keeps the
    // absolute error of its operands.
    double scale = 0;
    for (double v : b)
      if (std::isfinite(v)) scale = std::max(scale, std::fabs(v));
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::isnan(a[i]) && std::isnan(b[i])) continue;
      if (std::isinf(a[i]) && a[i] == b[i]) continue;
      if (!(std::fabs(a[i] - b[i]) <= tol * (1 + (slack > 1 ? scale : std::fabs(b[i])))))
        return "%" + out.name + " (" + std::string(op_name(out.op)) + ") element " + std::to_string(i) + ": reprokit " + std::to_string(a[i]) +
               " torch " + std::to_string(b[i]);
    }
  }
  return "";
}

fs::path work_dir(const std::string& name) { return reprokit::testing::scratch_root("rk_oracle_") / name; }

}  // namespace

TEST(TorchOracle, EveryOpFloat32AndFloat64) {
  if (!have_torch()) GTEST_SKIP() << "python3-torch is not installed: the PyTorch oracle test did not run";
  Graph g = parse_graph(kAllOpsGraph);
  EXPECT_EQ(compare_with_torch(g, work_dir("ops32"), false), "");
  EXPECT_EQ(compare_with_torch(g, work_dir("ops64"), true), "");
}

// i8, u8 and i16: wrapping arithmetic, promotion and float casts as PyTorch's CPU kernels do.
TEST(TorchOracle, SmallIntegerTypes) {
  if (!have_torch()) GTEST_SKIP() << "python3-torch is not installed: the PyTorch oracle test did not run";
  EXPECT_EQ(compare_with_torch(parse_graph(kSmallIntsGraph), work_dir("small_ints"), false), "");
}

TEST(TorchOracle, ExampleModelsFloat32AndFloat64) {
  if (!have_torch()) GTEST_SKIP() << "python3-torch is not installed: the PyTorch oracle test did not run";
  for (auto name : {"mlp", "attention", "embedding_classifier", "mixed_precision"}) {
    SCOPED_TRACE(name);
    Graph g = load_module_file(std::string(REPROKIT_SOURCE_DIR) + "/examples/" + name + ".rk").entry();
    EXPECT_EQ(compare_with_torch(g, work_dir(std::string(name) + "32"), false, 10), "");
    EXPECT_EQ(compare_with_torch(g, work_dir(std::string(name) + "64"), true), "");
  }
}

// Names in the script are injective and never Python's or the script's own:
// '.' -> '_' made %a.b and %a_b one variable (torch printed 4x where reprokit computes 3x + 1),
// and graphs named class, main, torch or __name__ gave a SyntaxError, a script that shadowed its
// own main or the torch module, or one that silently did nothing.
TEST(TorchOracle, NamesThatCollideOrArePythonsOwn) {
  if (!have_torch()) GTEST_SKIP() << "python3-torch is not installed: the PyTorch oracle test did not run";
  for (std::string name : {"g", "class", "main", "torch", "__name__", "F", "np", "my.graph", "v_a_b"}) {
    SCOPED_TRACE(name);
    Graph g = parse_graph("graph " + name + R"((%x: f32[3], %a_b_1: f32[3]) {
  %a.b = add(%x, 1.0)
  %a_b = mul(%x, 2.0)
  %c = add(%a.b, %a_b)
  %d = sub(%c, %a_b_1)
  return (%d, %a_b)
})");
    EXPECT_EQ(compare_with_torch(g, work_dir("names_" + name), false), "");
  }
}

// A scalar operand of maximum, minimum and pow becomes a tensor of the result's dtype: of the
// other operand's, maximum(bool, -1.0) was a bool in PyTorch where the graph (and torch.maximum
// with a Python number's promotion) says f32.
TEST(TorchOracle, AScalarOperandPromotesAsAPythonNumber) {
  if (!have_torch()) GTEST_SKIP() << "python3-torch is not installed: the PyTorch oracle test did not run";
  Graph g = parse_graph(R"(graph scalars(%b: bool[3], %i: i32[3], %h: f16[3]) {
  %m = maximum(%b, -1.0)
  %n = minimum(%i, 2.5)
  %p = pow(2.0, %i)
  %q = maximum(%h, 0.5)
  %r = minimum(7, %i)
  return (%m, %n, %p, %q, %r)
})");
  EXPECT_EQ(compare_with_torch(g, work_dir("scalars"), false), "");
}

// gelu and silu of an integer or bool tensor: PyTorch refuses them in eager mode (and Inductor
// computed them in the integer type); the graph computes them in f32. A clamp with no bounds is the
// identity, which torch.clamp refuses.
TEST(TorchOracle, FloatOnlyOpsOfIntegersComputeInTheirFloatResultType) {
  if (!have_torch()) GTEST_SKIP() << "python3-torch is not installed: the PyTorch oracle test did not run";
  Graph g = parse_graph(R"(graph ints(%i: i64[2, 3], %j: i32[2, 3], %b: bool[2, 3]) {
  %g = gelu(%i, approximate="none")
  %s = silu(%j)
  %h = gelu(%b, approximate="tanh")
  %c = clamp(%j)
  return (%g, %s, %h, %c)
})");
  EXPECT_EQ(compare_with_torch(g, work_dir("float_only_ops"), false), "");
}

// A 0-d tensor operand promotes as torch.result_type says (the reference and PyTorch agree on the
// dtype and the values).
TEST(TorchOracle, ZeroDimTensorOperandsPromoteAsPyTorch) {
  if (!have_torch()) GTEST_SKIP() << "python3-torch is not installed: the PyTorch oracle test did not run";
  Graph g = parse_graph(R"(graph zd(%f: f32[2, 3], %i: i32[2, 3], %d: f64[], %l: i64[]) {
  %a = maximum(%f, %d)
  %b = add(%i, %d)
  %c = mul(%i, %l)
  %e = lt(%f, %d)
  return (%a, %b, %c, %e)
})");
  EXPECT_EQ(compare_with_torch(g, work_dir("zero_dim"), false), "");
}
