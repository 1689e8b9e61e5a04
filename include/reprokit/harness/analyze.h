// Accuracy analysis of a bundle: per-node error of the compiled graph and of eager against the
// float64 reference, the first node that diverges, and whether a node's error is its own (it
// diverges even when fed reference inputs) or inherited from its inputs.
#pragma once
#include <string>

namespace reprokit {

struct AnalyzeOptions {
  std::string bundle_dir;
  bool per_node = false;  // capture every node (disturbs fusion) instead of kernel boundaries
};

// Prints the table, writes analyze.json and analyze.svg (analyze-2.json, ... never overwriting).
// Returns 0 when the compiled graph passes everywhere, 1 when a node diverges.
int analyze_bundle(const AnalyzeOptions& options);

}  // namespace reprokit
