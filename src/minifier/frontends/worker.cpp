// The oracle worker: runs candidates of one bundle in this process (see worker.h).
#include <fmt/core.h>

#include <iostream>

#include "reprokit/codegen/backend.h"
#include "reprokit/harness/child_run.h"
#include "reprokit/harness/compiled_graphs.h"
#include "reprokit/support/errors.h"
#include "reprokit/support/files.h"
#include "reprokit/minifier/candidate_values.h"
#include "reprokit/minifier/compiler_decisions.h"
#include "reprokit/minifier/worker.h"
#include "reprokit/minifier/worker_protocol.h"
#include "reprokit/runtime/interpreter.h"
#include "reprokit/runtime/node_memo.h"

namespace reprokit {

namespace {
constexpr size_t kNodeMemoBytes = size_t{1} << 30;  // a worker's remembered node results, at most

// Whether c's inputs hold other values than the original run's: an edit, or a smaller shape.
bool departs_from_original_values(const Candidate& c, const Graph& original) {
  for (const auto& [name, e] : c.edits)
    if (!e.is_identity()) return true;
  for (int i = 0; i < c.graph.num_inputs(); ++i) {
    const int was = original.find(c.graph.node(i).name);
    if (was >= 0 && original.node(was).type.shape != c.graph.node(i).type.shape) return true;
  }
  return false;
}
}  // namespace

int run_minify_worker(const std::string& bundle_dir, const std::string& query_file) {
  Bundle b = load_bundle(bundle_dir);
  KnownValues values(b);
  // Candidates are parts of one model on its values: the float64 references and noise-floor
  // variants of the nodes they share are computed once.
  enable_node_memo(kNodeMemoBytes);
  // The same candidate asked again (the probe runs the original several times) runs what was
  // compiled for it the first time.
  CompiledGraphs compiled;
  auto answer = [&](const std::string& line) {
    Candidate c = Candidate::from_json(nlohmann::json::parse(line), reprokit_passes());
    // A value edit that drives an op out of its domain (1/0, log 0) proves nothing either way:
    // neither a repro nor a twin may rest on it.
    if (auto why = value_edit_leaves_domain(c, b, values)) return Failure{FailureKind::invalid_candidate, *why, "invalid", 0};
    std::vector<Tensor> inputs = candidate_inputs(c, b, values);
    ReproSpec spec = candidate_spec(b.spec, c);
    compiled.ask(line);
    spec.options.compiled = &compiled;
    Failure f = run_and_classify(spec, c.graph, inputs);
    // A failure the reference never ran for (a compile error, a crash) must still rest on values
    // the graph accepts: smaller shapes or edited values may leave an index past its dimension, and
    // the repro's expected values could not be computed. The original's values are accepted.
    if (f.failed() && f.kind != FailureKind::accuracy && f.kind != FailureKind::invalid_candidate && departs_from_original_values(c, b.graph)) try {
        interpret_all(c.graph, inputs);
      } catch (const UserError& e) {
        return Failure{FailureKind::invalid_candidate, fmt::format("the candidate's values do not fit its graph: {}", e.what()), "invalid", 0};
      }
    return f;
  };
  if (!query_file.empty()) {
    std::string text = read_file(query_file, kMaxTextFileBytes);
    std::string line = text.substr(0, text.find('\n'));
    Failure f = answer(line);
    fmt::print("{}\n", f.failed() ? fmt::format("FAILS: {}: {}", f.kind_name(), f.message) : "PASSES");
    return f.failed() ? 1 : 0;
  }
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    fmt::print("{}\n", kBeginLine);
    std::fflush(stdout);
    Failure f;
    try {
      f = answer(line);
    } catch (const UserError& e) { f = Failure{FailureKind::invalid_candidate, e.what(), "invalid", 0}; }
    fmt::print("{}\n", verdict_line(f));
    std::fflush(stdout);
    // The GPU is lost to this process (a CUDA kernel fault): end, so that the next candidate runs
    // in a fresh worker instead of failing on the corrupt context.
    if (device_lost_in_this_process()) return 0;
  }
  return 0;
}

}  // namespace reprokit
