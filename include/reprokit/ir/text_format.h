// The .rk text format of DESIGN.md: parser and printer. print(parse(x)) is a fixed point.
#pragma once
#include <string>
#include <string_view>

#include "reprokit/ir/graph.h"

namespace reprokit {

// Parses and verifies. `file` is used in error messages ("FILE:LINE:COL: error: ...").
Module parse_module(std::string_view text, const std::string& file = "<input>");
Graph parse_graph(std::string_view text, const std::string& file = "<input>");  // the entry graph
Module load_module_file(const std::string& path);                               // UserError naming the path when unreadable

std::string print_graph(const Graph& g);
std::string print_module(const Module& m);
// "%o = linear(%x, %w, %b)" for one node (used in messages and reports).
std::string print_node(const Graph& g, int id);

}  // namespace reprokit
