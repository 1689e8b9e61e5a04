// Candidate: one thing the minifier asks about: a graph, how each of its inputs' values is
// derived from a value the oracle knows (an original input, or a cut point's value in the
// original run, by name), and the compiler decisions it runs with.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reprokit/ir/graph.h"
#include "reprokit/support/files.h"

namespace reprokit {

// The values of an input, simplified (the window and zeroed elements apply to every fill).
enum class InputFill {
  original,  // the known value
  zeros,
  ones,
  integers,  // the known value rounded to the nearest integer in [-4, 4]
};

struct InputEdit {
  InputFill fill = InputFill::original;
  // Where the (possibly smaller) declared shape sits in the known value: a start per dim
  // (empty: at the origin). Shrinking a dim keeps the leading elements.
  std::vector<int64_t> start;
  std::vector<int64_t> zeroed;  // flat indices (C order over the declared shape) set to 0
  bool operator==(const InputEdit&) const = default;
  bool is_identity() const { return fill == InputFill::original && zeroed.empty() && start.empty(); }
};

// The compiler whose decisions a candidate carries (disabled passes, rewrite limits by pass name).
// The engine knows no compiler: a front end fills this in from its compiler's pass table.
class CompilerPasses {
 public:
  virtual ~CompilerPasses() = default;
  virtual bool known(const std::string& pass) const = 0;
  // {"pass": rewrite limit, ...} read as the compiler's options read it; UserError when malformed.
  virtual std::map<std::string, int64_t> limits_from_json(const nlohmann::json& limits) const = 0;
};

struct Candidate {
  Graph graph;
  std::map<std::string, InputEdit> edits;  // inputs not listed take the known value as it is
  // Compiler decisions on top of the bundle's: passes switched off, rewrite limits per pass.
  std::set<std::string> disabled_passes;
  std::map<std::string, int64_t> pass_limits;

  const InputEdit& edit(const std::string& input) const;  // an identity edit when none is set
  // Memo key: structure, input names, edits and compiler decisions; with `every_name`, every
  // node's name too (for an oracle that may read them).
  uint64_t key(bool every_name = false) const;
  // A candidate of graph g with this one's edits (for the inputs g still has) and decisions.
  Candidate with_graph(Graph g) const;
  nlohmann::json to_json() const;
  // UserError on malformed input, passes `passes` does not know included.
  static Candidate from_json(const nlohmann::json& j, const CompilerPasses& passes);
};

// The best candidate of an interrupted minify or reduce: `dir`/state.json ({"best": candidate}),
// untrusted (it lies in a bundle or output directory a user may hand over): UserError naming the
// file for anything malformed, bad JSON included.
Candidate read_best_candidate(const Dir& dir, const CompilerPasses& passes);

std::string_view fill_name(InputFill f);
// The elements of g's inputs, all together (how big a repro's data is).
int64_t input_elements(const Graph& g);

}  // namespace reprokit
