// The JSON form of a graph (used in bundles). JSON -> graph -> JSON is identical.
#pragma once
#include <nlohmann/json.hpp>

#include "reprokit/ir/graph.h"

namespace reprokit {

nlohmann::json graph_to_json(const Graph& g);
Graph graph_from_json(const nlohmann::json& j);  // verifies; UserError on malformed JSON
Module module_from_json(const nlohmann::json& j);

}  // namespace reprokit
