// Per-node accuracy against float64 (see node_accuracy.h).
#include "node_accuracy.h"

#include <cmath>
#include <set>

#include <fmt/core.h>

#include "reprokit/codegen/compiler.h"
#include "reprokit/codegen/lowering.h"
#include "reprokit/harness/accuracy.h"
#include "reprokit/harness/bisect.h"
#include "reprokit/harness/child_run.h"
#include "reprokit/process/self_executable.h"
#include "reprokit/process/subprocess.h"
#include "reprokit/support/files.h"
#include "reprokit/ir/graph_utils.h"
#include "reprokit/runtime/interpreter.h"
#include "reprokit/support/errors.h"

namespace reprokit {

namespace {

// Spacing of representable numbers of dtype near x (for a ULP-style measure).
double ulp(double x, DType t) {
  int bits = t == DType::f16 ? 10 : t == DType::bf16 ? 7 : t == DType::f32 ? 23 : 52;
  double ax = std::max(std::fabs(x), t == DType::f16 ? 6.1e-5 : 1e-30);
  return std::ldexp(1.0, std::ilogb(ax) - bits);
}

}  // namespace

Errors errors(const Tensor& got, const Tensor& ref, DType dtype) {
  Errors e;
  auto a = got.to_doubles(), b = ref.to_doubles();
  double s = 0;
  size_t n = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) continue;
    double d = std::fabs(a[i] - b[i]);
    s += d * d;
    ++n;
    e.max_abs = std::max(e.max_abs, d);
    e.max_rel = std::max(e.max_rel, d / std::max(std::fabs(b[i]), 1e-12));
    if (is_floating(dtype)) e.max_ulp = std::max(e.max_ulp, d / ulp(b[i], dtype));
  }
  e.rmse = n ? std::sqrt(s / static_cast<double>(n)) : 0;
  return e;
}

std::string does_not_run(const Bundle& b, const std::string& backend, const std::string& what) {
  BisectStep as_recorded{backend, b.spec.options.compile.run_passes, "", "", -1, -1, {}};
  const double timeout = b.spec.timeout_s > 0 ? b.spec.timeout_s : 300;
  ProcessSpec probe;
  probe.argv = {self_executable(), "bisect-step", b.dir, as_recorded.to_json().dump()};
  probe.timeout_s = timeout;
  Failure ran = classify_child(run_process(probe), what, timeout);
  if (ran.kind != FailureKind::crash && ran.kind != FailureKind::timeout && ran.kind != FailureKind::compile_error) return "";
  return fmt::format("{}: {}", ran.kind_name(), ran.message.substr(0, ran.message.find('\n')));
}

std::vector<int> captured_nodes(const Graph& g, const CompileOptions& options, bool per_node) {
  Graph lowered = lower_for_codegen(g, options, nullptr);
  auto lowered_users = compute_users(lowered);
  std::set<std::string> boundary;
  for (int i = lowered.num_inputs(); i < lowered.size(); ++i) {
    const Node& n = lowered.node(i);
    auto gi = n.attrs.find("group");
    bool internal = gi != n.attrs.end() && !lowered_users[static_cast<size_t>(i)].empty();
    for (int u : lowered_users[static_cast<size_t>(i)]) {
      auto gu = lowered.node(u).attrs.find("group");
      if (gu == lowered.node(u).attrs.end() || gi == n.attrs.end() || !(gu->second == gi->second)) internal = false;
    }
    if (!internal) boundary.insert(n.name);
  }
  std::vector<int> captured;
  for (int i = g.num_inputs(); i < g.size(); ++i)
    if (per_node || boundary.count(g.node(i).name)) captured.push_back(i);
  return captured;
}

Reference reference_for(const Bundle& b, const std::vector<int>& captured) {
  Reference r;
  InterpretOptions f64;
  f64.cast_to_f64 = true;
  r.f64 = interpret_all(b.graph, b.inputs, f64);
  r.eager = interpret_all(b.graph, b.inputs);
  r.tolerance = b.spec.tolerance;
  if (r.tolerance) return r;
  // The noise floor of every captured node (auto rule; one measurement for all of them).
  Graph watched = b.graph;
  watched.outputs = captured;
  std::vector<Tensor> probe_ref, probe_eager;
  for (int id : captured) probe_ref.push_back(r.f64[static_cast<size_t>(id)]), probe_eager.push_back(r.eager[static_cast<size_t>(id)]);
  r.floor = measure_noise_floor(watched, b.inputs, probe_ref, &probe_eager);
  return r;
}

CapturedRun run_captured(const Bundle& b, const CompileOptions& options, const std::vector<int>& captured) {
  Graph ext = b.graph;
  const size_t first_extra = ext.outputs.size();
  for (int i : captured) ext.outputs.push_back(i);
  auto compiled = compile_graph(ext, options);
  auto run1 = compiled->run(b.inputs), run2 = compiled->run(b.inputs);
  CapturedRun out;
  for (size_t k = 0; k < run1.size(); ++k) out.deterministic &= run1[k].to_doubles() == run2[k].to_doubles();
  out.values.assign(run1.begin() + static_cast<std::ptrdiff_t>(first_extra), run1.end());
  return out;
}

std::vector<NodeVerdict> judge_nodes(const Bundle& b, const CompileOptions& options, const std::vector<int>& captured, const CapturedRun& run,
                                     const Reference& ref) {
  const Graph& g = b.graph;
  std::vector<NodeVerdict> out;
  for (size_t k = 0; k < captured.size(); ++k) {
    NodeVerdict v;
    v.id = captured[k];
    const Node& n = g.node(v.id);
    const Tensor &got = run.values[k], &f64 = ref.f64[static_cast<size_t>(v.id)], &eager = ref.eager[static_cast<size_t>(v.id)];
    v.errors = errors(got, f64, n.type.dtype);
    v.eager_errors = errors(eager, f64, n.type.dtype);
    v.why = ref.tolerance ? compare_output(n.name, got, eager, f64, *ref.tolerance)
                          : compare_output_to_floor(n.name, got, eager, f64, ref.floor.outputs[k]);
    if (v.passes() && !ref.tolerance) v.decided_at_kink = decided_at_kink("%" + n.name, got, f64, ref.floor.outputs[k]);
    if (!v.passes()) {
      // Own or inherited: the node alone, fed the reference values of its operands (rounded to
      // their dtypes), through the same compiler.
      std::set<int> cut;
      for (auto& op : n.operands)
        if (op.is_value() && !g.node(op.value).is_input()) cut.insert(op.value);
      Graph alone = extract_subgraph(g, {v.id}, cut);
      std::vector<Tensor> alone_inputs;
      for (int i = 0; i < alone.num_inputs(); ++i) {
        int src = g.find(alone.node(i).name);
        alone_inputs.push_back(g.node(src).is_input() ? b.inputs[static_cast<size_t>(src)]
                                                      : ref.f64[static_cast<size_t>(src)].to(alone.node(i).type.dtype));
      }
      std::string own_why;
      try {
        auto alone_out = compile_graph(alone, options)->run(alone_inputs);
        own_why = check_accuracy(alone, alone_inputs, alone_out, b.spec.tolerance).message;
      } catch (const CompileFailure& e) { own_why = e.what(); }
      v.origin = own_why.empty() ? "inherited" : "own";
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace reprokit
