// The importer's handlers for ONNX's control flow: Loop with a trip count (and condition) known at
// import and Scan (its length is static) are unrolled, If with a condition known at import is its
// chosen branch. The body's nodes
// are imported as the main graph's own, once per iteration under names of their own, so every
// layer below sees ordinary nodes. What cannot be decided at import (a condition computed at run
// time, a trip count from a run-time value) is refused naming the node.
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "handler_util.h"
#include "import_context.h"
#include "reprokit/support/errors.h"

namespace reprokit::onnx_detail {

namespace {

// Unrolling stops with a refusal past this many body nodes imported in all.
constexpr int64_t kMaxUnrolledNodes = 200000;

const onnx::GraphProto& graph_attr(const NodeCtx& c, const char* name) {
  const auto* a = c.attr(name);
  if (!a || !a->has_g()) c.bad(fmt::format("attribute '{}' (a graph) is missing", name));
  return a->g();
}

void refuse_nested(const NodeCtx& c, const onnx::GraphProto& body) {
  for (const auto& n : body.node())
    for (const auto& a : n.attribute())
      if (a.has_g() || a.graphs_size())
        c.unsupported(fmt::format("a {} inside the body of {} (reprokit unrolls one level of control flow)", printable(n.op_type()), c.n.op_type()));
}

// One import of a body: its values renamed with `prefix` so each iteration's are distinct and
// leave no trace in the model's own names; references to the enclosing graph stay as they are.
class BodyImport {
 public:
  BodyImport(NodeCtx& c, const onnx::GraphProto& body, std::string prefix) : c_(c), body_(body), prefix_(std::move(prefix)) {
    for (const auto& in : body.input()) local_.insert(in.name());
    for (const auto& n : body.node())
      for (const auto& out : n.output())
        if (!out.empty()) local_.insert(out);
  }
  std::string renamed(const std::string& name) const { return local_.count(name) ? prefix_ + name : name; }
  // Binds body input k to `v` (the value it has in this iteration).
  void bind(int k, Value v) { c_.imp.values[renamed(body_.input(k).name())] = std::move(v); }
  void run(int64_t& budget) {
    for (int i = 0; i < body_.node_size(); ++i) {
      if (--budget < 0) c_.unsupported(fmt::format("unrolling past {} nodes", kMaxUnrolledNodes));
      onnx::NodeProto n = body_.node(i);
      for (auto& in : *n.mutable_input())
        if (!in.empty()) in = renamed(in);
      for (auto& out : *n.mutable_output())
        if (!out.empty()) out = renamed(out);
      c_.imp.import_node(n, i);
    }
  }
  const Value& output(int k) const { return c_.imp.value(renamed(body_.output(k).name())); }

 private:
  NodeCtx& c_;
  const onnx::GraphProto& body_;
  std::string prefix_;
  std::set<std::string> local_;
};

Value constant_value(const Tensor& t) {
  Value v;
  v.kind = Kind::constant;
  v.constant = t;
  v.type = TensorType{t.dtype(), t.shape(), {}, Device::cpu, false};
  return v;
}

bool truth(const NodeCtx& c, const Tensor& t, const std::string& what) {
  if (t.numel() != 1) c.bad(fmt::format("{} must have one element", what));
  return t.get_int(0) != 0;
}

// A body's condition output: decided at import, or the Loop is refused.
bool condition(const NodeCtx& c, const Value& v, const std::string& what) {
  if (!v.constant)
    c.unsupported(fmt::format("{} is computed at run time; reprokit imports a {} only when its condition is known at import", what, c.n.op_type()));
  return truth(c, *v.constant, what);
}

// The node's condition input i: a constant, or a model input whose value the user gives.
bool condition_input(NodeCtx& c, int i) { return truth(c, c.need_constant(i, "the condition"), "the condition"); }

// The output k of the node is `v`: its node in the main graph, or its constant.
void set_output(NodeCtx& c, int k, const Value& v) {
  if (v.constant) return c.set_const(k, *v.constant);
  c.set(k, c.t.id(v.rk));
}

// Values of the iterations stacked along a new dim `axis` (a Loop's or Scan's scan output), in
// reverse order for a Scan output whose direction is reverse.
void set_stacked(NodeCtx& c, int k, std::vector<Value> parts, int64_t axis = 0, bool reverse = false) {
  if (reverse) std::reverse(parts.begin(), parts.end());
  for (const auto& p : parts)
    if (p.type.shape != parts[0].type.shape) c.unsupported("scan outputs whose shape changes between iterations");
  const auto rank = static_cast<int64_t>(parts[0].type.shape.size());
  if (axis < -(rank + 1) || axis > rank) c.bad(fmt::format("scan output axis {} is out of range for a rank-{} output", axis, rank));
  if (axis < 0) axis += rank + 1;
  bool all_const = axis == 0;
  for (const auto& p : parts) all_const &= p.constant.has_value();
  if (all_const) {
    const Tensor& first = *parts[0].constant;
    Shape s = first.shape();
    s.insert(s.begin(), static_cast<int64_t>(parts.size()));
    Tensor out = Tensor::zeros(first.dtype(), s);
    int64_t at = 0;
    for (const auto& p : parts)
      for (int64_t i = 0; i < p.constant->numel(); ++i, ++at) {
        if (is_floating(first.dtype())) out.set(at, p.constant->get(i));
        else out.set_int(at, p.constant->get_int(i));
      }
    return c.set_const(k, out);
  }
  std::vector<Operand> rows;
  for (const auto& p : parts) {
    const int id = p.constant ? c.const_value(*p.constant) : c.t.id(p.rk);
    rows.push_back(v(c.emit1(Op::unsqueeze, id, {{"dim", AttrValue(axis)}})));
  }
  c.set(k, rows.size() == 1 ? rows[0].value : c.emit(Op::cat, rows, {{"dim", AttrValue(axis)}}));
}

// The node's input i as the first value of a carried state. An initializer carried in
// materializes as its own input, not as a copy of it per iteration.
Value carried_in(const NodeCtx& c, int i) {
  Value v = c.in(i);
  if (v.kind == Kind::initializer && v.alias_of.empty()) v.alias_of = c.n.input(i);
  return v;
}

// What the body's names are prefixed with (then "iter<i>/", "then/" or "else/"): the node's first
// output, or `kind` and the node's index.
std::string names_base(const NodeCtx& c, const char* kind) {
  return c.n.output_size() && !c.n.output(0).empty() ? c.n.output(0) : fmt::format("{}{}", kind, c.index);
}

// A node of the main graph as the value a body input is bound to.
Value computed_value(NodeCtx& c, int id) {
  Value v;
  v.kind = Kind::computed;
  v.type = c.type_of(id);
  v.rk = c.t.g.node(id).name;
  return v;
}

// Loop(M, cond, v_initial...) with body(iteration_num, cond_in, v_in...) -> (cond_out, v_out...,
// scan_out...): outputs v_final... and the scan outputs stacked over the iterations.
void loop(NodeCtx& c) {
  c.allow({"body"});
  const onnx::GraphProto& body = graph_attr(c, "body");
  refuse_nested(c, body);
  const int carried = c.num_inputs() - 2;
  if (carried < 0 || body.input_size() != carried + 2 || body.output_size() < carried + 1)
    c.bad(fmt::format("the body has {} inputs and {} outputs for {} loop-carried values", body.input_size(), body.output_size(), carried));
  const int scans = body.output_size() - 1 - carried;
  std::optional<int64_t> trips;
  if (c.has(0)) {
    Tensor m = c.need_constant(0, "the trip count M");
    if (m.numel() != 1) c.bad("M must have one element");
    trips = m.get_int(0);
  }
  bool go = !c.has(1) || condition_input(c, 1);
  if (!trips && !c.has(1)) c.bad("a Loop with neither trip count nor condition never ends");
  std::vector<Value> state;
  for (int j = 0; j < carried; ++j) state.push_back(carried_in(c, j + 2));
  std::vector<std::vector<Value>> scanned(static_cast<size_t>(scans));
  int64_t budget = kMaxUnrolledNodes;
  const std::string base = names_base(c, "loop");
  int64_t i = 0;
  for (; go && (!trips || i < *trips); ++i) {
    BodyImport b(c, body, fmt::format("{}/iter{}/", base, i));
    b.bind(0, constant_value(Tensor::from_int64s(DType::i64, {}, {i})));
    b.bind(1, constant_value(Tensor::from_int64s(DType::boolean, {}, {1})));
    for (int j = 0; j < carried; ++j) b.bind(j + 2, state[static_cast<size_t>(j)]);
    b.run(budget);
    go = condition(c, b.output(0), "the body's condition output");
    for (int j = 0; j < carried; ++j) state[static_cast<size_t>(j)] = b.output(j + 1);
    for (int s = 0; s < scans; ++s) scanned[static_cast<size_t>(s)].push_back(b.output(1 + carried + s));
  }
  if (scans > 0 && i == 0) c.unsupported("a Loop with scan outputs that runs no iteration (their shape is unknown)");
  for (int j = 0; j < carried; ++j)
    if (c.wants(j)) set_output(c, j, state[static_cast<size_t>(j)]);
  for (int s = 0; s < scans; ++s)
    if (c.wants(carried + s)) set_stacked(c, carried + s, scanned[static_cast<size_t>(s)]);
}

// If(cond) with then_branch / else_branch: the branch the condition picks, imported in place.
void if_op(NodeCtx& c) {
  c.allow({"then_branch", "else_branch"});
  const bool taken = condition_input(c, 0);
  const onnx::GraphProto& branch = graph_attr(c, taken ? "then_branch" : "else_branch");
  refuse_nested(c, branch);
  if (branch.output_size() != c.n.output_size())
    c.bad(fmt::format("the {} branch has {} outputs, the node {}", taken ? "then" : "else", branch.output_size(), c.n.output_size()));
  const std::string base = names_base(c, "if");
  BodyImport b(c, branch, base + (taken ? "/then/" : "/else/"));
  int64_t budget = kMaxUnrolledNodes;
  b.run(budget);
  for (int k = 0; k < c.n.output_size(); ++k)
    if (c.wants(k)) set_output(c, k, b.output(k));
}

// Scan (opset 9 on) with body(state..., scan_in_slice...) -> (state..., scan_out_slice...): the
// scan inputs are sliced along their axes (from the end for direction 1), the states carried, and
// the scan outputs stacked along their axes.
void scan(NodeCtx& c) {
  c.allow({"body", "num_scan_inputs", "scan_input_axes", "scan_input_directions", "scan_output_axes", "scan_output_directions"});
  if (c.opset() < 9) c.unsupported("Scan of opset 8 (its batch dim and sequence_lens)");
  const onnx::GraphProto& body = graph_attr(c, "body");
  refuse_nested(c, body);
  const int m = static_cast<int>(c.attr_int("num_scan_inputs", 0));
  const int n = c.num_inputs() - m;
  if (m < 1 || n < 0 || body.input_size() != n + m || body.output_size() < n)
    c.bad(fmt::format("{} inputs, {} of them scanned, for a body of {} inputs and {} outputs", c.num_inputs(), m, body.input_size(),
                      body.output_size()));
  const int k_out = body.output_size() - n;
  auto list = [&](const char* name, int count) {
    std::vector<int64_t> v = c.attr_ints(name).value_or(std::vector<int64_t>(static_cast<size_t>(count), 0));
    if (static_cast<int>(v.size()) != count) c.bad(fmt::format("{} has {} values for {}", name, v.size(), count));
    return v;
  };
  const auto in_axes = list("scan_input_axes", m), in_dirs = list("scan_input_directions", m);
  const auto out_axes = list("scan_output_axes", k_out), out_dirs = list("scan_output_directions", k_out);
  int64_t length = -1;
  std::vector<int64_t> axes(static_cast<size_t>(m));
  for (int j = 0; j < m; ++j) {
    const int64_t axis = norm_axis(c, in_axes[static_cast<size_t>(j)], c.rank(n + j), "scan input axis");
    axes[static_cast<size_t>(j)] = axis;
    const int64_t len = c.shape(n + j)[static_cast<size_t>(axis)];
    if (length >= 0 && len != length) c.bad(fmt::format("scan inputs of lengths {} and {}", length, len));
    length = len;
  }
  if (length == 0 && k_out > 0) c.unsupported("a Scan over an empty sequence with scan outputs (their shape is unknown)");
  std::vector<Value> state;
  for (int j = 0; j < n; ++j) state.push_back(carried_in(c, j));
  std::vector<std::vector<Value>> scanned(static_cast<size_t>(k_out));
  int64_t budget = kMaxUnrolledNodes;
  const std::string base = names_base(c, "scan");
  for (int64_t t = 0; t < length; ++t) {
    BodyImport b(c, body, fmt::format("{}/iter{}/", base, t));
    for (int j = 0; j < n; ++j) b.bind(j, state[static_cast<size_t>(j)]);
    for (int j = 0; j < m; ++j) {
      const int64_t axis = axes[static_cast<size_t>(j)];
      const int64_t at = in_dirs[static_cast<size_t>(j)] ? length - 1 - t : t;
      const int x = c.value(n + j);
      const int slice = c.emit1(Op::slice, x, {{"dim", AttrValue(axis)}, {"start", AttrValue(at)}, {"end", AttrValue(at + 1)}});
      b.bind(n + j, computed_value(c, c.emit1(Op::squeeze, slice, {{"dim", AttrValue(axis)}})));
    }
    b.run(budget);
    for (int j = 0; j < n; ++j) state[static_cast<size_t>(j)] = b.output(j);
    for (int s = 0; s < k_out; ++s) scanned[static_cast<size_t>(s)].push_back(b.output(n + s));
  }
  for (int j = 0; j < n; ++j)
    if (c.wants(j)) set_output(c, j, state[static_cast<size_t>(j)]);
  for (int s = 0; s < k_out; ++s)
    if (c.wants(n + s))
      set_stacked(c, n + s, scanned[static_cast<size_t>(s)], out_axes[static_cast<size_t>(s)], out_dirs[static_cast<size_t>(s)] != 0);
}

}  // namespace

const std::map<std::string, Handler, std::less<>>& control_handlers() {
  static const std::map<std::string, Handler, std::less<>> table{
      {"Loop", loop},
      {"If", if_op},
      {"Scan", scan},
  };
  return table;
}

}  // namespace reprokit::onnx_detail
