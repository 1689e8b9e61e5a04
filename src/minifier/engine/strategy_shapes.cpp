// shrink-shapes and halve-shapes: smaller input dimensions. A unit is a size class (every input
// dim of one size, and the attributes that name that size: reshape and expand targets, full
// shapes, normalized_shape, slice ends, output sizes, change together) or one input dim. The
// input values are windows of the known values (their leading elements), so failing elements
// stay in where they can. The engine rejects resizes that leave no valid graph.
#include <algorithm>
#include <map>
#include <set>

#include "reprokit/support/errors.h"
#include "reprokit/ir/op_registry.h"
#include "strategy_list.h"

namespace reprokit {

namespace {

// Units: first the size classes (each distinct dim size > 1), then each single input dim whose
// size is shared with another dim (a class already covers the unshared ones).
struct ShapeUnits {
  std::vector<int64_t> classes;              // sizes
  std::vector<std::pair<int, size_t>> dims;  // (input, dim)
};

ShapeUnits shape_units(const Graph& g) {
  std::map<int64_t, int> count;
  for (int i = 0; i < g.num_inputs(); ++i)
    for (auto d : g.node(i).type.shape)
      if (d > 1) ++count[d];
  ShapeUnits u;
  for (auto& [size, n] : count) u.classes.push_back(size);
  std::reverse(u.classes.begin(), u.classes.end());  // largest first: the biggest savings
  for (int i = 0; i < g.num_inputs(); ++i)
    for (size_t d = 0; d < g.node(i).type.shape.size(); ++d)
      if (g.node(i).type.shape[d] > 1 && count[g.node(i).type.shape[d]] > 1) u.dims.push_back({i, d});
  return u;
}

// Strides of the same layout kind for a new shape: dims ordered as the old strides order them.
Shape same_layout(const Shape& old_strides, const Shape& shape) {
  std::vector<size_t> order(shape.size());
  for (size_t d = 0; d < order.size(); ++d) order[d] = d;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return old_strides[a] > old_strides[b]; });
  Shape st(shape.size());
  int64_t acc = 1;
  for (size_t k = order.size(); k-- > 0;) {
    st[order[k]] = acc;
    acc *= std::max<int64_t>(shape[order[k]], 1);
  }
  return st;
}

// The attributes that name a size: entries equal to a resized class change with it.
const char* kSizeAttrs[] = {"shape", "normalized_shape", "output_size"};

}  // namespace

Graph resize_inputs(const Graph& g, const std::map<std::pair<int, size_t>, int64_t>& dims, const std::map<int64_t, int64_t>& sizes) {
  Graph out = g;
  for (int i = 0; i < out.size(); ++i) {
    Node& n = out.nodes[static_cast<size_t>(i)];
    if (n.is_input()) {
      Shape shape = n.type.shape;
      for (size_t d = 0; d < shape.size(); ++d) {
        if (auto it = dims.find({i, d}); it != dims.end()) shape[d] = it->second;
        else if (auto s = sizes.find(shape[d]); s != sizes.end()) shape[d] = s->second;
      }
      if (!n.type.strides.empty()) n.type.strides = same_layout(n.type.strides, shape);
      n.type.shape = shape;
      continue;
    }
    for (auto* key : kSizeAttrs)
      if (auto it = n.attrs.find(key); it != n.attrs.end() && it->second.is_list()) {
        auto v = it->second.as_ints();
        for (auto& x : v)
          if (auto s = sizes.find(x); s != sizes.end()) x = s->second;
        it->second = AttrValue::ints(v);
      }
    if (n.op == Op::slice)  // a bound at the old size follows it
      for (auto* key : {"start", "end"})
        if (auto it = n.attrs.find(key); it != n.attrs.end() && it->second.is_int())
          if (auto s = sizes.find(it->second.as_int()); s != sizes.end()) it->second = AttrValue(s->second);
  }
  return reinfer_types(out);
}

Strategy resize_strategy(bool halve) {
  auto target = [halve](int64_t size) { return halve ? (size + 1) / 2 : int64_t{1}; };
  return {halve ? "halve-shapes" : "shrink-shapes",
          halve ? "halve input dimensions, by size class then one dim at a time (delta debugging)"
                : "cut input dimensions to 1, by size class then one dim at a time (delta debugging)",
          SearchKind::delta,
          [](const Candidate& c) {
            ShapeUnits u = shape_units(c.graph);
            std::vector<int> ids;
            for (size_t k = 0; k < u.classes.size() + u.dims.size(); ++k) ids.push_back(static_cast<int>(k));
            return ids;
          },
          [target](const Candidate& c, const std::vector<int>& removed) {
            ShapeUnits u = shape_units(c.graph);
            std::map<int64_t, int64_t> sizes;
            std::map<std::pair<int, size_t>, int64_t> dims;
            for (int k : removed) {
              auto kk = static_cast<size_t>(k);
              if (kk < u.classes.size()) {
                sizes[u.classes[kk]] = target(u.classes[kk]);
              } else {
                auto [i, d] = u.dims.at(kk - u.classes.size());
                dims[{i, d}] = target(c.graph.node(i).type.shape[d]);
              }
            }
            Candidate r = c.with_graph(resize_inputs(c.graph, dims, sizes));
            // Zeroed elements are flat indices into the old shape: a resized input starts over.
            for (int i = 0; i < r.graph.num_inputs(); ++i)
              if (r.graph.node(i).type.shape != c.graph.node(i).type.shape) r.edits[r.graph.node(i).name].zeroed.clear();
            return r;
          }};
}

}  // namespace reprokit
