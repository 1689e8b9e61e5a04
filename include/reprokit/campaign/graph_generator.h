// The fuzzer's graph generator: random, valid, typed DAGs drawn from the op table (ops.def), with
// input values searched so that the float64 reference and the graph's own precision stay finite
// and away from the kinks of the ops that have one (NNSmith's idea: search the values, reject what
// cannot be fixed). Everything it knows about ops comes from the schemas (op_registry.h): a new
// op in ops.def is fuzzed with no change here.
#pragma once
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "reprokit/ir/graph.h"
#include "reprokit/runtime/tensor.h"

namespace reprokit {

struct GeneratorOptions {
  int max_nodes = 8;            // ops per graph: 1 .. max_nodes
  std::set<Op> ops;             // the ops drawn from; empty: every op of the table
  bool train = false;           // floating inputs are marked `grad` (the graph must reach one)
  int64_t max_elements = 4096;  // no value larger than this (small shapes: fast, minifiable)
};

struct GeneratedCase {
  Graph graph;
  std::vector<Tensor> inputs;  // one per graph input
  int value_tries = 0;         // value distributions tried before one kept everything finite
};

// Why a seed gave no case (each counted in a campaign's report).
enum class GenerateOutcome { ok, no_graph, no_values };

// Deterministic in (seed, options). nullopt with `outcome` set when no graph could be built from
// the allowed ops or no input values keep every value finite and off the kinks.
std::optional<GeneratedCase> generate_case(uint64_t seed, const GeneratorOptions& options, GenerateOutcome* outcome = nullptr);

// The ops a campaign draws from by default: every op of the table.
std::set<Op> all_fuzzable_ops();

}  // namespace reprokit
