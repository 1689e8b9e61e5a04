// The independent oracle for gradients: PyTorch autograd (/usr/bin/python3 with torch) on the
// graph emitted by the runtime's torch emitter, loss = sum of the float outputs, in float64,
// against reprokit's joint graph run by the reference interpreter in float64 mode. Covers every
// differentiable op's test graph and the four example models. Skips when torch is absent.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "grad_check.h"
#include "op_graphs.h"
#include "reprokit/aot/autodiff.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/runtime/input_gen.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/runtime/torch_emitter.h"
#include "../scratch_dir.h"

using namespace reprokit;
using namespace reprokit::testing;
namespace fs = std::filesystem;

namespace {

bool have_torch() {
  static int ok = std::system("/usr/bin/python3 -c 'import torch, numpy' >/dev/null 2>&1") == 0 ? 1 : 0;
  return ok;
}

// Loads the emitted program as a module (its main() does not run), differentiates its function.
const char* kDriver = R"PY(
import os, sys, importlib.util
in_dir, out_dir, fn_name = sys.argv[1], sys.argv[2], sys.argv[3]
grad_names = sys.argv[4].split(',') if len(sys.argv) > 4 and sys.argv[4] else []
sys.argv = ['prog', in_dir, out_dir, '--f64']
spec = importlib.util.spec_from_file_location('prog', os.path.join(os.path.dirname(os.path.abspath(__file__)), 'prog.py'))
prog = importlib.util.module_from_spec(spec)
spec.loader.exec_module(prog)
import torch
args, wrt, wrt_names = [], [], []
for name, dtype, shape, strides in prog.INPUTS:
    t = prog.load(os.path.join(in_dir, name + '.npy'), dtype)
    if t.is_floating_point():
        t = t.double()
    if name in grad_names:
        t.requires_grad_(True)
        wrt.append(t)
        wrt_names.append(name)
    args.append(t)
outs = getattr(prog, fn_name)(*args)
loss = sum(o.sum() for o in outs if o.is_floating_point())
grads = torch.autograd.grad(loss, wrt, allow_unused=True)
os.makedirs(out_dir, exist_ok=True)
for name, a, g in zip(wrt_names, wrt, grads):
    prog.save(os.path.join(out_dir, 'grad_' + name + '.npy'), g if g is not None else torch.zeros_like(a))
)PY";

// Returns "" when torch's gradients equal the joint graph's (f64), else the first difference.
std::string compare_gradients_with_torch(const Graph& g, const fs::path& dir) {
  fs::create_directories(dir / "in");
  auto inputs = generate_inputs(g, 77);
  for (int i = 0; i < g.num_inputs(); ++i) write_npy((dir / "in" / (g.node(i).name + ".npy")).string(), inputs[static_cast<size_t>(i)]);
  std::string fn = emit_torch_function(g);
  fn = fn.substr(4, fn.find('(') - 4);  // "def NAME(" -> NAME
  std::ofstream(dir / "prog.py") << emit_torch_program(g);
  std::ofstream(dir / "grad.py") << kDriver;
  JointGraph j = build_joint_graph(g);
  std::string names;
  for (int k : j.grad_inputs) names += (names.empty() ? "" : ",") + g.node(k).name;
  std::string cmd = "/usr/bin/python3 " + (dir / "grad.py").string() + " " + (dir / "in").string() + " " + (dir / "out").string() + " " + fn + " '" +
                    names + "' > " + (dir / "log.txt").string() + " 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream log(dir / "log.txt");
    return "torch autograd failed: " + std::string(std::istreambuf_iterator<char>(log), {});
  }
  auto ours = run_joint(j, inputs, true);
  for (size_t k = 0; k < j.grad_inputs.size(); ++k) {
    const std::string name = g.node(j.grad_inputs[k]).name;
    Tensor theirs = read_npy((dir / "out" / ("grad_" + name + ".npy")).string());
    auto a = ours[static_cast<size_t>(j.num_forward_outputs) + k].to_doubles(), b = theirs.to_doubles();
    if (a.size() != b.size()) return "grad of %" + name + ": size differs";
    for (size_t i = 0; i < a.size(); ++i)
      if (!(std::fabs(a[i] - b[i]) <= 1e-9 * (1 + std::fabs(b[i]))))
        return "grad of %" + name + " element " + std::to_string(i) + ": reprokit " + std::to_string(a[i]) + " torch " + std::to_string(b[i]);
  }
  return "";
}

fs::path work_dir(const std::string& name) { return reprokit::testing::scratch_root("rk_aot_torch_") / name; }

}  // namespace

TEST(TorchAutograd, EveryDifferentiableOpMatchesTorch) {
  if (!have_torch()) GTEST_SKIP() << "python3 with torch is not installed: the autograd oracle test did not run";
  int k = 0;
  for (auto& src : differentiable_op_graphs()) {
    SCOPED_TRACE(src);
    EXPECT_EQ(compare_gradients_with_torch(parse_graph(src), work_dir("op" + std::to_string(k++))), "");
  }
  fs::remove_all(work_dir(""));
}

TEST(TorchAutograd, ExampleModelsMatchTorch) {
  if (!have_torch()) GTEST_SKIP() << "python3 with torch is not installed: the autograd oracle test did not run";
  for (auto name : {"mlp", "attention", "embedding_classifier", "mixed_precision"}) {
    SCOPED_TRACE(name);
    Graph g = load_module_file(std::string(REPROKIT_SOURCE_DIR) + "/examples/" + name + ".rk").entry();
    EXPECT_EQ(compare_gradients_with_torch(g, work_dir(name)), "");
  }
  fs::remove_all(work_dir(""));
}
