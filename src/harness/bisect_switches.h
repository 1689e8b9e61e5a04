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
// A try that cannot be judged (it ran out of time where the failure is not a hang) throws
// UnjudgedTry: it never counts as the failure going away.
using BisectTry = std::function<bool(const BisectStep& step, const std::string& what)>;
struct UnjudgedTry {
  std::string what;
};
// Whether `got` answers nothing about `expected`: a timeout, unless the failure is a hang.
bool unjudged(const Failure& expected, const Failure& got);

// Prints the search as it goes. `base` is the step of the backend's stage as the bundle ran it.
// The answer: {"compiler", "level" (the lowest failing level), "optimizer" (null when no single
// optimiser is the cause, or the failure needs none), "rule" (within a group), "finding" (one
// sentence)}. A try that cannot be judged ends the search with no answer (finding says which).
nlohmann::json bisect_switches(const BackendSwitches& switches, const Graph& g, const BisectStep& base, const BisectTry& fails);

}  // namespace reprokit
