// Pointwise duplication: a cheap pointwise op read by several kernels is computed again in each
// of them, so it is no longer a kernel (a write and a read of a whole tensor) of its own. A
// softmax's scaled scores feed its row max and its exp; a layer norm's x - mean feeds its
// variance and its output: each was a pass over the tensor between two others (BERT's 4 x 12 x
// 128 x 128 scores times 1/8: 0.11 ms). Only adds, subtracts, multiplies and negations, reading at most
// one operand of their own shape (the others literals or broadcast, so each copy reads no more
// than the copies' users read of the op's output before), and only where every user is a
// reduction over it or a pointwise op of its shape: each copy joins its user's group (a new one
// with it where the user had none), and reduction fusion later takes a reduction with its copy.
// Runs after pointwise fusion, which groups an op whose users all ended in one group with them.
#include <algorithm>
#include <map>
#include <set>

#include "graph_builder.h"
#include "passes.h"
#include "reprokit/ir/graph_utils.h"
#include "reprokit/ir/op_registry.h"

namespace reprokit {

namespace {

// Whether op p can be computed in each of its users (`members`: each group's size; a copy joining
// a full group would pass kMaxGroupSize).
bool duplicable(const Graph& g, int p, const std::vector<int>& users, const std::set<int>& outputs, const std::map<int64_t, size_t>& members) {
  const Node& n = g.node(p);
  if (n.is_input() || !is_pointwise(n.op) || !is_cheap_pointwise(n.op) || group_of(n) || outputs.count(p) || users.size() < 2) return false;
  int full = 0;
  for (auto& o : n.operands) full += o.is_value() && g.node(o.value).type.numel() == n.type.numel();
  if (full > 1) return false;
  for (int u : users) {
    const Node& un = g.node(u);
    const bool reduction = is_reduction(un.op) && !group_of(un);
    if (!reduction && !(is_pointwise(un.op) && un.type.shape == n.type.shape)) return false;
    if (auto gr = group_of(un); gr && members.at(*gr) >= kMaxGroupSize) return false;
  }
  return true;
}

}  // namespace

bool run_pointwise_duplication(Graph& g, RewriteBudget& budget) {
  const auto all_users = compute_users(g);
  const std::set<int> outputs(g.outputs.begin(), g.outputs.end());
  int64_t next_group = 0;
  std::map<int64_t, size_t> members;
  for (auto& n : g.nodes)
    if (auto gr = group_of(n)) {
      next_group = std::max(next_group, *gr + 1);
      ++members[*gr];
    }
  std::map<int, std::vector<int>> duplicated;  // op -> its users, each to get a copy
  std::map<int, std::vector<int>> reads;       // user -> the duplicated ops it reads
  int injected_op = -1;
  for (int p = g.num_inputs(); p < g.size(); ++p) {
    std::vector<int> us = all_users[static_cast<size_t>(p)];
    std::sort(us.begin(), us.end());
    us.erase(std::unique(us.begin(), us.end()), us.end());
    // An op read by one that is duplicated stays: that one's copies read it where it is.
    bool reads_duplicate = false;
    for (auto& o : g.node(p).operands) reads_duplicate = reads_duplicate || (o.is_value() && duplicated.count(o.value));
    if (reads_duplicate || !duplicable(g, p, us, outputs, members) || !budget.allow()) continue;
    duplicated[p] = us;
    for (int u : us) reads[u].push_back(p);
    if (budget.inject_now()) injected_op = p;
  }
  if (duplicated.empty()) return false;
  GraphBuilder b(g);
  std::map<int, int> named;  // op -> copies emitted so far
  for (int i = 0; i < g.size(); ++i) {
    if (duplicated.count(i)) continue;  // computed in each user instead
    auto r = reads.find(i);
    if (r == reads.end()) {
      b.copy(i);
      continue;
    }
    Node user = g.node(i);
    // A pointwise user's group (a new one where it had none); a reduction user has none.
    std::optional<int64_t> group = group_of(user);
    if (!group && is_pointwise(user.op)) group = next_group++;
    std::map<int, int> copy_of;  // duplicated op -> this user's copy
    for (int p : r->second) {
      const Node& op = g.node(p);
      std::vector<Operand> ops;
      for (auto& o : op.operands) ops.push_back(b.map_operand(o));
      Attrs attrs = op.attrs;
      if (group) attrs["group"] = AttrValue(*group);
      const std::string name = named[p]++ == 0 ? op.name : b.fresh_name(op.name);
      int id = b.graph().add_node(name, op.op, std::move(ops), std::move(attrs));
      if (p == injected_op && named[p] == 1) id = b.perturb(id);
      copy_of[p] = id;
    }
    std::vector<Operand> ops;
    for (auto& o : user.operands) ops.push_back(o.is_value() && copy_of.count(o.value) ? Operand::of(copy_of[o.value]) : b.map_operand(o));
    if (group) user.attrs["group"] = AttrValue(*group);
    b.alias(i, b.graph().add_node(user.name, user.op, std::move(ops), user.attrs));
  }
  g = b.finish();
  return true;
}

}  // namespace reprokit
