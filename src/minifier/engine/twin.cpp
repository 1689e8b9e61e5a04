// The one-line difference between a failing candidate and its passing twin (see twin.h): what
// the twin changed, in the terms of the strategy that changed it.
#include "reprokit/minifier/twin.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/text_format.h"

namespace reprokit {

namespace {

std::string shape_text(const TensorType& t) { return fmt::format("{}[{}]", dtype_name(t.dtype), fmt::join(t.shape, ", ")); }

std::string edit_text(const InputEdit& e) {
  std::string s = e.fill == InputFill::original ? "its original values" : std::string(fill_name(e.fill));
  if (!e.zeroed.empty()) s += fmt::format(" with {} element{} set to 0", e.zeroed.size(), e.zeroed.size() == 1 ? "" : "s");
  return s;
}

}  // namespace

std::string describe_difference(const Candidate& failing, const Candidate& passing, const DifferenceWords& words) {
  // Each difference as (what the repro has, what the twin has): "<bad> with A, <good> B".
  std::vector<std::pair<std::string, std::string>> parts;
  // Compiler decisions.
  for (auto& p : passing.disabled_passes)
    if (!failing.disabled_passes.count(p)) parts.emplace_back(fmt::format("pass {} on", p), "without it");
  for (auto& [p, n] : passing.pass_limits) {
    auto f = failing.pass_limits.find(p);
    if (failing.disabled_passes.count(p) || passing.disabled_passes.count(p)) continue;
    if (f == failing.pass_limits.end()) parts.emplace_back(fmt::format("every rewrite of {}", p), fmt::format("with its first {}", n));
    else if (f->second != n)
      parts.emplace_back(fmt::format("the first {} rewrite{} of {}", f->second, f->second == 1 ? "" : "s", p), fmt::format("with {}", n));
  }
  // Inputs: shapes, layouts and values.
  const Graph &fg = failing.graph, &pg = passing.graph;
  for (int i = 0; i < fg.num_inputs(); ++i) {
    const Node& in = fg.node(i);
    int j = pg.find(in.name);
    if (j < 0 || !pg.node(j).is_input()) continue;
    const TensorType &a = in.type, &b = pg.node(j).type;
    if (a.shape != b.shape) {
      std::vector<std::string> dims;
      for (size_t d = 0; d < a.shape.size() && d < b.shape.size(); ++d)
        if (a.shape[d] != b.shape[d]) dims.push_back(fmt::format("dim {} = {}", d, a.shape[d]));
      parts.emplace_back(fmt::format("%{}: {} ({})", in.name, shape_text(a), fmt::join(dims, ", ")), "with " + shape_text(b));
    } else if (a.strides != b.strides) {
      parts.emplace_back(fmt::format("%{} strided [{}]", in.name, fmt::join(a.strides, ", ")), "contiguous");
    }
    if (a.requires_grad != b.requires_grad)
      parts.emplace_back(fmt::format("%{} {}", in.name, a.requires_grad ? "marked grad" : "not marked grad"),
                         b.requires_grad ? "marked grad" : "without the mark");
    const InputEdit &ea = failing.edit(in.name), &eb = passing.edit(in.name);
    if (!(ea == eb) && a.shape == b.shape) parts.emplace_back(fmt::format("%{} holding {}", in.name, edit_text(ea)), "with " + edit_text(eb));
  }
  // Nodes: attributes, and nodes the twin does without.
  for (int id = fg.num_inputs(); id < fg.size(); ++id) {
    const Node& n = fg.node(id);
    int j = pg.find(n.name);
    if (j < 0) {
      parts.emplace_back(print_node(fg, id), "without it");
      continue;
    }
    const Node& m = pg.node(j);
    if (m.op != n.op || m.is_input()) {
      parts.emplace_back(print_node(fg, id), fmt::format("with %{} as an input holding its original value", n.name));
      continue;
    }
    for (auto& spec : op_schema(n.op).attrs) {
      auto x = n.attrs.find(spec.name), y = m.attrs.find(spec.name);
      bool hx = x != n.attrs.end(), hy = y != m.attrs.end();
      if (hx == hy && (!hx || x->second == y->second)) continue;
      auto text = [&](bool has, const Attrs::const_iterator& it) {
        if (has) return it->second.str();
        return spec.default_value ? spec.default_value->str() + " (the default)" : std::string("absent");
      };
      parts.emplace_back(fmt::format("%{}'s {}={}", n.name, spec.name, text(hx, x)), "with " + text(hy, y));
    }
  }
  if (pg.outputs.size() < fg.outputs.size()) parts.emplace_back("more outputs returned", "with fewer");
  if (parts.empty()) return "the twin differs from the repro only in ways not described here (compare twin.rk with repro.rk)";
  std::vector<std::string> lines;
  for (auto& [repro_has, twin_has] : parts) lines.push_back(fmt::format("{} with {}, {} {}", words.bad, repro_has, words.good, twin_has));
  return fmt::format("{}", fmt::join(lines, "; "));
}

}  // namespace reprokit
