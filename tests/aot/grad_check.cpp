// Helpers of the aot tests (see grad_check.h).
#include "grad_check.h"

#include <cmath>
#include <stdexcept>

#include "reprokit/runtime/interpreter.h"

namespace reprokit::testing {

std::vector<Tensor> ones_tangents(const Graph& g) {
  std::vector<Tensor> t;
  for (int o : g.outputs) {
    const TensorType& ty = g.node(o).type;
    double one = is_floating(ty.dtype) ? 1.0 : 0.0;
    t.push_back(Tensor::from_doubles(ty.dtype, ty.shape, std::vector<double>(static_cast<size_t>(ty.numel()), one)));
  }
  return t;
}

std::vector<Tensor> run_joint(const JointGraph& j, const std::vector<Tensor>& inputs, bool f64) {
  std::vector<Tensor> all = inputs;
  Graph fwd_view;  // the forward outputs' types are the joint graph's first outputs
  fwd_view.nodes = j.graph.nodes;
  fwd_view.outputs.assign(j.graph.outputs.begin(), j.graph.outputs.begin() + j.num_forward_outputs);
  for (auto& t : ones_tangents(fwd_view)) all.push_back(t);
  InterpretOptions o;
  o.cast_to_f64 = f64;
  return interpret(j.graph, all, o);
}

std::vector<Tensor> run_partitioned(const PartitionedGraphs& p, const std::vector<Tensor>& inputs, bool f64) {
  InterpretOptions o;
  o.cast_to_f64 = f64;
  std::vector<Tensor> fwd = interpret(p.forward, inputs, o);
  std::vector<Tensor> bwd_in(fwd.begin() + p.num_forward_outputs, fwd.end());
  Graph fwd_view;
  fwd_view.nodes = p.forward.nodes;
  fwd_view.outputs.assign(p.forward.outputs.begin(), p.forward.outputs.begin() + p.num_forward_outputs);
  for (auto& t : ones_tangents(fwd_view)) bwd_in.push_back(t);
  // In f64 mode the saved values come back as f64; the backward graph declares their own dtype.
  for (int i = 0; i < p.num_saved; ++i) {
    DType want = p.backward.node(i).type.dtype;
    if (bwd_in[static_cast<size_t>(i)].dtype() != want) bwd_in[static_cast<size_t>(i)] = bwd_in[static_cast<size_t>(i)].to(want);
  }
  std::vector<Tensor> grads = interpret(p.backward, bwd_in, o);
  std::vector<Tensor> out(fwd.begin(), fwd.begin() + p.num_forward_outputs);
  out.insert(out.end(), grads.begin(), grads.end());
  return out;
}

namespace {
double loss(const Graph& g, const std::vector<Tensor>& inputs) {
  InterpretOptions o;
  o.cast_to_f64 = true;
  double s = 0;
  auto outs = interpret(g, inputs, o);
  for (size_t k = 0; k < outs.size(); ++k)
    if (is_floating(g.node(g.outputs[k]).type.dtype))
      for (double v : outs[k].to_doubles()) s += v;
  return s;
}
}  // namespace

std::vector<std::vector<double>> finite_difference_grads(const Graph& g, const std::vector<Tensor>& inputs, const std::vector<int>& grad_inputs,
                                                         double h) {
  std::vector<std::vector<double>> grads;
  for (int k : grad_inputs) {
    if (inputs[static_cast<size_t>(k)].dtype() != DType::f64) throw std::invalid_argument("finite differences need f64 inputs: " + g.node(k).name);
    std::vector<double> gk;
    for (int64_t i = 0; i < inputs[static_cast<size_t>(k)].numel(); ++i) {
      std::vector<Tensor> p = inputs, m = inputs;
      Tensor tp = inputs[static_cast<size_t>(k)].to(DType::f64), tm = inputs[static_cast<size_t>(k)].to(DType::f64);
      // to() may share storage when the dtype is unchanged: copy through doubles.
      tp = Tensor::from_doubles(DType::f64, tp.shape(), tp.to_doubles());
      tm = Tensor::from_doubles(DType::f64, tm.shape(), tm.to_doubles());
      double x = tp.get(i);
      tp.set(i, x + h);
      tm.set(i, x - h);
      p[static_cast<size_t>(k)] = tp;
      m[static_cast<size_t>(k)] = tm;
      gk.push_back((loss(g, p) - loss(g, m)) / (2 * h));
    }
    grads.push_back(gk);
  }
  return grads;
}

double max_rel_diff(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return INFINITY;
  double worst = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k].shape() != b[k].shape()) return INFINITY;
    auto u = a[k].to_doubles(), v = b[k].to_doubles();
    for (size_t i = 0; i < u.size(); ++i) {
      if (std::isnan(u[i]) != std::isnan(v[i])) return INFINITY;
      if (!std::isnan(u[i])) worst = std::max(worst, std::fabs(u[i] - v[i]) / (1 + std::fabs(u[i])));
    }
  }
  return worst;
}

std::string as_f64(std::string text) {
  for (size_t p = text.find("f32"); p != std::string::npos; p = text.find("f32", p)) text.replace(p, 3, "f64");
  return text;
}

}  // namespace reprokit::testing
