// simplify-attributes: each attribute toward its simplest value (its schema default, or absent
// for an optional one: reduction dims, clamp bounds, pool strides), each strided input to a
// contiguous one and each input marked grad to a plain one, while the failure stays.
#include "reprokit/ir/op_registry.h"
#include "strategy_list.h"

namespace reprokit {

namespace {

// A unit is node id * kSlots + attribute index in the op's schema; kStrides and kGrad for an
// input's strides and grad mark.
constexpr int kSlots = 64;
constexpr int kStrides = kSlots - 1;
constexpr int kGrad = kSlots - 2;

// Whether attribute `a` of n is set to something other than where the strategy would take it.
bool simplifiable(const Node& n, const AttrSpec& a) {
  auto it = n.attrs.find(a.name);
  if (it == n.attrs.end()) return false;
  if (a.default_value) return !(it->second == *a.default_value);
  return a.optional;  // an optional attribute can be dropped; a required one stays
}

}  // namespace

Strategy simplify_attributes_strategy() {
  return {"simplify-attributes", "set attributes to their defaults (or drop optional ones) and make strided inputs contiguous (delta debugging)",
          SearchKind::delta,
          [](const Candidate& c) {
            std::vector<int> units;
            for (int id = 0; id < c.graph.size(); ++id) {
              const Node& n = c.graph.node(id);
              if (n.is_input()) {
                if (!n.type.strides.empty()) units.push_back(id * kSlots + kStrides);
                if (n.type.requires_grad) units.push_back(id * kSlots + kGrad);
                continue;
              }
              const auto& attrs = op_schema(n.op).attrs;
              for (size_t k = 0; k < attrs.size() && k < static_cast<size_t>(kGrad); ++k)
                if (simplifiable(n, attrs[k])) units.push_back(id * kSlots + static_cast<int>(k));
            }
            return units;
          },
          [](const Candidate& c, const std::vector<int>& removed) {
            Graph g = c.graph;
            for (int u : removed) {
              Node& n = g.nodes.at(static_cast<size_t>(u / kSlots));
              if (u % kSlots == kStrides) n.type.strides.clear();
              else if (u % kSlots == kGrad) n.type.requires_grad = false;
              else n.attrs.erase(op_schema(n.op).attrs.at(static_cast<size_t>(u % kSlots)).name);
            }
            return c.with_graph(reinfer_types(g));
          }};
}

}  // namespace reprokit
