// First guesses from the failure's own words. A compiler that refuses a model often names the node
// it fails on ("Could not find an implementation for Conv(11) node with name '/features/0/Conv'";
// reprokit's generated code: "injected runtime error in node %x (clamp)"); a reduction that tries
// that node alone first, then with the nodes that feed it (for a fusion that needs its pattern),
// can end in one or two queries where a search over the graph's N nodes takes about log2(N). A
// guess that is not interesting costs one query, and the search goes on from the graph as it was.
#pragma once
#include <string>
#include <vector>

#include "reprokit/minifier/candidate.h"
#include "reprokit/onnx/onnx_original_nodes.h"

namespace reprokit {

// The strategy name the guesses are counted under (--only / --skip take it).
inline constexpr const char* kNamedInFailure = "named-in-failure";
inline constexpr const char* kNamedInFailureDescription =
    "the nodes a compile error, run-time error or crash names, each alone then with its feeders (before the search)";

struct NamedNodeGuess {
  Candidate candidate;
  std::string node;  // "node 12 '/features/0/Conv' (Conv)", "%x (clamp)"
  std::string how;   // "alone", "with the nodes that feed it"
};

// `reduce` of an ONNX model in its own nodes: for each of the first `max_nodes` nodes of `model`
// that `message` names (OriginalOnnxModel::nodes_named_in) and `start` still holds: the node alone,
// its inputs cut (graph inputs holding their original values); then the node with the nodes that
// feed it, their inputs cut. Only candidates that can be written as the model's own nodes and are
// smaller than `start`, in that order.
std::vector<NamedNodeGuess> failure_named_guesses(const Candidate& start, const OriginalOnnxModel& model, const std::string& message,
                                                  size_t max_nodes = 2);

// The same for reprokit's own graph, whose messages name a value as %name: each op node so named.
std::vector<NamedNodeGuess> failure_named_guesses(const Candidate& start, const std::string& message, size_t max_nodes = 2);

// What the guesses are, to print before they are tried: a line per node, its guesses in the order
// they are tried ("node 12 '/features/0/Conv' (Conv): tried first alone, then with the nodes that
// feed it").
std::vector<std::string> describe_named_guesses(const std::vector<NamedNodeGuess>& guesses);

// The op nodes of g that `message` names as %name (the name not followed by another name
// character), in the order it names them.
std::vector<int> ops_named_in(const Graph& g, const std::string& message);

}  // namespace reprokit
