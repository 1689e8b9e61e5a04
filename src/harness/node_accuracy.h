// Per-node accuracy of one compiled graph against the float64 reference, shared by
// `reprokit analyze` (one backend) and `reprokit analyze --triangulate` (cpp and cuda side by side).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "reprokit/codegen/compile_options.h"
#include "reprokit/harness/bundle.h"
#include "reprokit/harness/noise_floor.h"
#include "reprokit/runtime/tensor.h"

namespace reprokit {

struct Errors {
  double rmse = 0, max_abs = 0, max_rel = 0, max_ulp = 0;
};
// got against ref (finite elements only); ULPs of dtype.
Errors errors(const Tensor& got, const Tensor& ref, DType dtype);

// Whether the bundle's graph runs at all on `backend` with the bundle's own settings, asked of a
// child (bisect's step), since analysis runs it in this process and a crash or hang there must
// not take this process down. "" when it runs (a run-time error or a wrong number counts as
// running), else "kind: the first line of its message" for a crash, hang or compile error.
// `what` names the graph in the child's messages.
std::string does_not_run(const Bundle& b, const std::string& backend, const std::string& what);

// The nodes whose values are compared: the kernel boundaries of the lowered graph (what the compiled
// code materialises anyway, so fusion is undisturbed) or, with per_node, every node.
std::vector<int> captured_nodes(const Graph& g, const CompileOptions& options, bool per_node);

// What every backend is judged against: float64 and eager values of every node, and the rule (a
// fixed tolerance recorded in the bundle, else the noise floor of each captured node).
struct Reference {
  std::vector<Tensor> f64, eager;  // indexed by node id
  std::optional<double> tolerance;
  NoiseFloor floor;  // one entry per captured node when tolerance is unset
};
Reference reference_for(const Bundle& b, const std::vector<int>& captured);

// The captured values of one compiled graph, run twice on the bundle's inputs (throws
// CompileFailure when it does not compile or run).
struct CapturedRun {
  std::vector<Tensor> values;  // one per captured node, in order
  bool deterministic = true;   // the two runs agree bit for bit
};
CapturedRun run_captured(const Bundle& b, const CompileOptions& options, const std::vector<int>& captured);

// One captured node's verdict: its errors, why it diverges ("" when it passes) and, when it does,
// whether the error is its own (the node alone, fed the reference values of its operands, through
// the same compiler, diverges too) or inherited from its operands.
struct NodeVerdict {
  int id = -1;
  Errors errors, eager_errors;
  std::string why;
  std::string origin;  // "own", "inherited", or "" when it passes
  // For a node that passes only because a decision near a kink may go the other way: the line
  // saying so (decided_at_kink in accuracy.h), else "".
  std::string decided_at_kink;
  bool passes() const { return why.empty(); }
};
std::vector<NodeVerdict> judge_nodes(const Bundle& b, const CompileOptions& options, const std::vector<int>& captured, const CapturedRun& run,
                                     const Reference& ref);

}  // namespace reprokit
