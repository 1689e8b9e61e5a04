// The second half of `reprokit bisect` for a compiler that is not reprokit's: its own optimisation
// switches (backend_switches.h) walked as reprokit's passes are for the cpp backend. The lowest
// optimisation level that fails, then the optimiser (and for a group of rewrite rules, the rule)
// whose turning off makes the failure go.
#pragma once
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "reprokit/codegen/backend_switches.h"
#include "reprokit/harness/bisect.h"
#include "reprokit/ir/graph.h"

namespace reprokit {

// Runs one try; true when it fails the bundle's way. `what` says in a few words what it tries.
using BisectTry = std::function<bool(const BisectStep& step, const std::string& what)>;

// Prints the search as it goes. `base` is the step of the backend's stage as the bundle ran it.
// The answer: {"compiler", "level" (the lowest failing level), "optimizer" (null when no single
// optimiser is the cause, or the failure needs none), "rule" (within a group), "finding" (one
// sentence)}.
nlohmann::json bisect_switches(const BackendSwitches& switches, const Graph& g, const BisectStep& base, const BisectTry& fails);

}  // namespace reprokit
