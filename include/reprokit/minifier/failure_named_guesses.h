// First guesses from the failure's own words. A compiler that refuses a model often names the node
// it fails on ("Could not find an implementation for Conv(11) node with name '/features/0/Conv'");
// a reduction that tries that node alone first, then with the nodes that feed it (for a fusion
// that needs its pattern), can end in one or two checks where a search over the model's N nodes
// takes about log2(N). A guess that is not interesting costs one check, and the search goes on
// from the model as it was.
#pragma once
#include <string>
#include <vector>

#include "reprokit/minifier/candidate.h"
#include "reprokit/onnx/onnx_original_nodes.h"

namespace reprokit {

// The strategy name the guesses are counted under (--only / --skip take it).
inline constexpr const char* kNamedInFailure = "named-in-failure";

struct NamedNodeGuess {
  Candidate candidate;
  std::string what;  // "node 12 '/features/0/Conv' (Conv) alone", "... with the nodes that feed it"
};

// For each of the first `max_nodes` nodes of `model` that `message` names and `start` still holds:
// the node alone, its inputs cut (graph inputs holding their original values); then the node with
// the nodes that feed it, their inputs cut. Only candidates that can be written as the model's own
// nodes and are smaller than `start`, in that order.
std::vector<NamedNodeGuess> failure_named_guesses(const Candidate& start, const OriginalOnnxModel& model, const std::string& message,
                                                  size_t max_nodes = 2);

}  // namespace reprokit
