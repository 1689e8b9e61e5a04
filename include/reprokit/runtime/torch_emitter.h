// The graph as a PyTorch program: the independent numerics oracle of the tests, and the body of
// the generated repro_torch.py.
#pragma once
#include <map>
#include <string>

#include "reprokit/ir/graph.h"

namespace reprokit {

// `def run_<graph name>(<inputs>):` with one line per node using torch calls of the same semantics,
// returning a tuple of the outputs. Values are distinct variables "v_<name>" ('.' as '_', numbered
// where that repeats one), so no name a graph holds breaks or shadows the code around it.
std::string emit_torch_function(const Graph& g);
// The name of that function, for a program that imports the script and calls it.
std::string torch_function_name(const Graph& g);

// The ATen op Inductor is handed for node `n` once AOTAutograd has traced the emitted call
// ("aten.relu", "aten.convolution", "aten.addmm"): how Inductor's own messages and lowerings name it.
std::string aten_op_name(const Graph& g, const Node& n);

// A standalone script: `python3 script.py INPUT_DIR OUTPUT_DIR [--f64]` loads INPUT_DIR/<input>.npy
// (bf16 from uint16 bits), runs the function (with --f64, every floating tensor in float64), saves
// OUTPUT_DIR/<output value name>.npy (bf16 as uint16 bits) and prints each output's shape and sum.
// `stem` names the files beside it: <stem>_inputs/ (default inputs), <stem>_compiled/ (the
// compiled graph's outputs: when present the script compares them against float64 and exits 1 on a
// mismatch), and where the outputs go (torch_outputs/ for "repro", else <stem>_torch_outputs/).
//
// With `inductor` (a graph whose failure is Inductor's), the script also compiles the function as the
// program did, torch.compile(backend="inductor") with these torch._inductor.config options (KEY ->
// JSON value) and Inductor's planted relu fault (KIND or ""), and exits 1 printing REPRODUCED when
// compiling or running raises, or when its outputs are far from float64.
struct InductorCall {
  std::map<std::string, std::string> options;
  std::string relu_bug;
  std::string backend = "inductor";  // torch.compile's backend (a stage below inductor, as bisect tries it)
  std::string device = "cpu";        // where it compiles and runs: "cpu" or "cuda"
};
// `inputs_dir` names the default input directory beside the script when it is not <stem>_inputs/
// (a `reduce` output keeps its inputs in inputs/, where its check reads them).
std::string emit_torch_program(const Graph& g, const std::string& stem = "repro", const InductorCall* inductor = nullptr,
                               const std::string& inputs_dir = "");

}  // namespace reprokit
