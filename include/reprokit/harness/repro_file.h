// Repro files: the minimal, self-contained artifacts of a failure. repro.rk holds the graph in
// the text format with the ReproSpec as a `#! spec` directive and its inputs in repro_inputs/;
// next to it go repro.onnx, repro_test.cpp (+ CMakeLists.txt), repro_torch.py and BUG_REPORT.md.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reprokit/harness/repro_spec.h"

namespace reprokit {

struct ReproFile {
  std::string path;
  Graph graph;
  ReproSpec spec;
  std::vector<Tensor> inputs;
};

// The nearest variant of a repro that passes, and the one-line difference ("fails with pass X
// on, passes without").
struct PassingTwin {
  Graph graph;
  std::vector<Tensor> inputs;
  ReproSpec spec;
  std::string difference;
  std::optional<std::vector<Tensor>> compiled;  // its compiled outputs (twin_compiled/), see below
};

// Writes repro.rk, repro_inputs/, repro.onnx (when ONNX can hold the graph), repro_test.cpp,
// CMakeLists.txt, repro_torch.py and BUG_REPORT.md into dir (replacing earlier repro files
// there, never the bundle's own files), and with a twin also twin.rk and twin_inputs/ (else it
// removes an old twin). `summary` is a line or two for the bug report (how it was minified).
// With `compiled` (the compiled graph's outputs on these inputs, for an accuracy failure) also
// repro_compiled/<output>.npy, which repro_torch.py compares against float64 to show the bug.
// For a compiler that is not reprokit's and declares its switches (onnxruntime), also its own
// reproducer (repro_onnxruntime.py, repro_expected/) and a report in its terms; `compiler_bisection`
// is the search of its switches (bisect_compiler_switches), when one ran.
void write_repro_files(const std::string& dir, const Graph& g, const std::vector<Tensor>& inputs, const ReproSpec& spec, const std::string& summary,
                       const PassingTwin* twin = nullptr, const std::vector<Tensor>* compiled = nullptr,
                       const nlohmann::json* compiler_bisection = nullptr);

// The search of a foreign compiler's own optimisation switches on the repro file at repro_path
// (as `reprokit bisect` searches a bundle: each try a `reprokit bisect-step` child, limited as a
// rerun of the repro is); nullopt for a backend without switches or a repro that records no
// failure. Prints the search as `reprokit bisect` does.
std::optional<nlohmann::json> bisect_compiler_switches(const std::string& repro_path);

// The outputs the spec's stage computes on (g, inputs), run in this process, for a repro whose
// failure is an accuracy one (the compiled code ran to the end); nullopt for other failures, or
// when the stage fails to run here.
std::optional<std::vector<Tensor>> compiled_outputs(const ReproSpec& spec, const Graph& g, const std::vector<Tensor>& inputs);

// Loads repro.rk and its inputs; UserError naming the file for a missing or bad directive, a
// missing input file or a graph that does not parse.
ReproFile load_repro_file(const std::string& path);

}  // namespace reprokit
