// What the inductor backend and Inductor's optimisation switches (inductor_switches.cpp) ask the
// inductor worker (python/reprokit/inductor_worker.py), which compiles a graph with torch.compile.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "reprokit/codegen/compile_options.h"
#include "reprokit/codegen/inductor_options.h"
#include "reprokit/ir/graph.h"
#include "reprokit/runtime/tensor.h"

namespace reprokit {

// Compiles `g` under `options` in the worker and runs it on `inputs`. Returns the worker's reply
// ("applied" too when `record`); with `outputs`, a successful run's outputs are read into it and a
// failure throws CompileFailure of its kind.
nlohmann::json run_in_inductor_worker(const Graph& g, const CompileOptions& options, const std::vector<Tensor>& inputs, bool record,
                                      std::vector<Tensor>* outputs);

// "torch <version>" as the worker's torch reports it.
std::string inductor_torch_version();

}  // namespace reprokit
