// Graph utilities shared by passes and the minifier: users, liveness, rebuilding and hashing.
#include "reprokit/ir/graph_utils.h"

#include <fmt/format.h>

#include "reprokit/support/errors.h"
#include "reprokit/ir/verifier.h"
#include "reprokit/support/hash.h"

namespace reprokit {

std::vector<std::vector<int>> compute_users(const Graph& g) {
  std::vector<std::vector<int>> users(static_cast<size_t>(g.size()));
  for (int i = 0; i < g.size(); ++i)
    for (auto& o : g.node(i).operands)
      if (o.is_value()) {
        auto& u = users[static_cast<size_t>(o.value)];
        if (u.empty() || u.back() != i) u.push_back(i);
      }
  return users;
}

std::vector<bool> ancestors(const Graph& g, const std::vector<int>& roots) {
  std::vector<bool> live(static_cast<size_t>(g.size()), false);
  for (int r : roots) live.at(static_cast<size_t>(r)) = true;
  for (int i = g.size() - 1; i >= 0; --i) {  // operands precede users, so one backward sweep
    if (!live[static_cast<size_t>(i)]) continue;
    for (auto& o : g.node(i).operands)
      if (o.is_value()) live[static_cast<size_t>(o.value)] = true;
  }
  return live;
}

Graph rebuild_graph(const Graph& g, const std::vector<int>& remap, const std::vector<bool>& keep) {
  auto resolve = [&](int id) {
    for (int guard = 0; remap[static_cast<size_t>(id)] != id; ++guard) {
      if (guard > g.size()) throw InternalError("rebuild_graph: remap has a cycle");
      id = remap[static_cast<size_t>(id)];
    }
    return id;
  };
  Graph out;
  out.name = g.name;
  std::vector<int> new_id(static_cast<size_t>(g.size()), -1);
  for (int i = 0; i < g.size(); ++i) {
    if (!keep[static_cast<size_t>(i)]) continue;
    Node n = g.node(i);
    for (auto& o : n.operands) {
      if (!o.is_value()) continue;
      int src = resolve(o.value);
      if (new_id[static_cast<size_t>(src)] < 0)
        throw InternalError(fmt::format("rebuild_graph: node %{} uses %{} which is not kept", n.name, g.node(src).name));
      o.value = new_id[static_cast<size_t>(src)];
    }
    new_id[static_cast<size_t>(i)] = out.size();
    out.nodes.push_back(std::move(n));
  }
  for (int o : g.outputs) {
    int src = resolve(o);
    if (new_id[static_cast<size_t>(src)] < 0) throw InternalError("rebuild_graph: an output is not kept");
    out.outputs.push_back(new_id[static_cast<size_t>(src)]);
  }
  verify(out);
  return out;
}

static std::vector<int> identity(int n) {
  std::vector<int> r(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) r[static_cast<size_t>(i)] = i;
  return r;
}

Graph eliminate_dead_code(const Graph& g) {
  auto keep = ancestors(g, g.outputs);
  for (int i = 0, n = g.num_inputs(); i < n; ++i) keep[static_cast<size_t>(i)] = true;
  return rebuild_graph(g, identity(g.size()), keep);
}

Graph prune_unused_inputs(const Graph& g) { return rebuild_graph(g, identity(g.size()), ancestors(g, g.outputs)); }

Graph extract_subgraph(const Graph& g, const std::vector<int>& outputs, const std::set<int>& cut) {
  // Liveness that stops at cut nodes: they become inputs, so their operands are not needed.
  std::vector<bool> live(static_cast<size_t>(g.size()), false);
  for (int r : outputs) live.at(static_cast<size_t>(r)) = true;
  for (int i = g.size() - 1; i >= 0; --i) {
    if (!live[static_cast<size_t>(i)] || cut.count(i)) continue;
    for (auto& o : g.node(i).operands)
      if (o.is_value()) live[static_cast<size_t>(o.value)] = true;
  }
  Graph out;
  out.name = g.name;
  std::vector<int> new_id(static_cast<size_t>(g.size()), -1);
  auto add_as_input = [&](int i) {
    Node in;
    in.name = g.node(i).name;
    in.op = Op::input;
    in.type = g.node(i).type;
    if (!g.node(i).is_input()) in.type.strides.clear();
    new_id[static_cast<size_t>(i)] = out.size();
    out.nodes.push_back(std::move(in));
  };
  for (int i = 0; i < g.size(); ++i)
    if (live[static_cast<size_t>(i)] && g.node(i).is_input()) add_as_input(i);
  for (int i = 0; i < g.size(); ++i)
    if (live[static_cast<size_t>(i)] && !g.node(i).is_input() && cut.count(i)) add_as_input(i);
  for (int i = 0; i < g.size(); ++i) {
    if (!live[static_cast<size_t>(i)] || g.node(i).is_input() || cut.count(i)) continue;
    Node n = g.node(i);
    for (auto& o : n.operands)
      if (o.is_value()) o.value = new_id[static_cast<size_t>(o.value)];
    new_id[static_cast<size_t>(i)] = out.size();
    out.nodes.push_back(std::move(n));
  }
  for (int o : outputs) out.outputs.push_back(new_id[static_cast<size_t>(o)]);
  verify(out);
  return out;
}

namespace {
uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdULL;
  return h ^ (h >> 33);
}
uint64_t hash_str(std::string_view s) { return fnv1a64(s); }
}  // namespace

uint64_t structural_hash(const Graph& g) {
  uint64_t h = hash_str("reprokit-graph");
  for (int i = 0; i < g.size(); ++i) {
    const Node& n = g.node(i);
    h = mix(h, static_cast<uint64_t>(n.op));
    if (n.is_input()) h = mix(h, hash_str(n.type.str()));
    for (auto& o : n.operands) h = mix(h, o.is_value() ? static_cast<uint64_t>(o.value) : hash_str(o.literal.str()) ^ 0x5bd1e995ULL);
    for (auto& [k, v] : n.attrs) h = mix(mix(h, hash_str(k)), hash_str(v.str()));
  }
  for (int o : g.outputs) h = mix(h, static_cast<uint64_t>(o) + 0x1234567ULL);
  return h;
}

}  // namespace reprokit
