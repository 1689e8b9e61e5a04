// Candidate: one graph the minifier asks about, plus how its inputs are simplified. Input names
// are original input names or original node names (cut points), whose values the oracle knows.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "reprokit/ir/graph.h"

namespace reprokit {

enum class InputFill { original, zeros, ones };

struct Candidate {
  Graph graph;
  std::map<std::string, InputFill> fills;  // inputs not listed keep their original values

  uint64_t key() const;  // memo key: structure plus input names and fills
  // A candidate of graph g with this one's fills for the inputs g still has.
  Candidate with_graph(Graph g) const;
  nlohmann::json to_json() const;
  static Candidate from_json(const nlohmann::json& j);
};

}  // namespace reprokit
