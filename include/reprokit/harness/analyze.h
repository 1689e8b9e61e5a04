// Accuracy analysis of a bundle: per-node error of the compiled graph and of eager against the
// float64 reference, the first node that diverges, and whether a node's error is its own (it
// diverges even when fed reference inputs) or inherited from its inputs. Triangulation does the
// same for the cpp and cuda backends side by side, and says which of them is wrong where.
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

// cpp and cuda against float64 on the bundle's inputs (the cuda side needs a GPU): per captured
// node and per output, each backend's error and verdict, how far apart the two are, and which is
// wrong (cpp, cuda or both). A fault planted with --inject stays in the bundle's own backend; the
// other runs without it. Prints the table, writes triangulate.json (triangulate-2.json, ... never
// overwriting). Returns 0 when both backends pass everywhere, 1 otherwise.
int triangulate_bundle(const AnalyzeOptions& options);

}  // namespace reprokit
