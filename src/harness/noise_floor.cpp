// The noise floor (see noise_floor.h).
#include "reprokit/harness/noise_floor.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <thread>

#include "reprokit/aot/decompose.h"
#include "reprokit/runtime/memory_budget.h"
#include "reprokit/support/parallel_for.h"

namespace reprokit {

namespace {

// Ops that add many terms: where the accumulation order matters.
bool accumulates(const Graph& g) {
  for (const Node& n : g.nodes)
    if (n.op == Op::sum || n.op == Op::matmul || n.op == Op::linear || n.op == Op::conv2d || n.op == Op::conv3d || n.op == Op::conv_transpose2d ||
        n.op == Op::conv_transpose3d)
      return true;
  return false;
}

bool has_kinks(const Graph& g) {
  for (const Node& n : g.nodes)
    if (has_kink(n.op)) return true;
  return false;
}

// How near a kink a decision may be and still go either way: 2^-16 relative to the operand's scale,
// what a float32 sum of some thousand terms moves a value by (a few hundred ulps).
constexpr double kKinkBand = 1.0 / 65536;

// How many variants run side by side: the machine's cores (at most 4), or one at a time when a
// run's values would take more than an eighth of the memory budget each.
size_t variants_side_by_side(const Graph& g) {
  size_t bytes = 0;
  for (const Node& n : g.nodes) bytes += static_cast<size_t>(std::max<int64_t>(n.type.numel(), 0)) * sizeof(double);
  if (bytes > memory_budget_bytes() / 8) return 1;
  return std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 4);
}

bool has_composite(const Graph& g) {
  for (const Node& n : g.nodes)
    if (has_decomposition(n.op)) return true;
  return false;
}

}  // namespace

namespace {

// Whether a node's result jumps where its input crosses a threshold: a decision (relu, a
// comparison), a pick of one position (argmax, max pooling's gradient), a cast to an integer.
bool jumps(const Graph& g, const Node& n) {
  if (has_kink(n.op) || n.op == Op::argmax || n.op == Op::max_pool2d_backward || n.op == Op::max_pool3d_backward) return true;
  return n.op == Op::to && !is_floating(n.type.dtype) && !n.operands.empty() && n.operands[0].is_value() &&
         is_floating(g.node(n.operands[0].value).type.dtype);
}

bool takes_decisions(const Graph& g) {
  for (const Node& n : g.nodes)
    if (jumps(g, n)) return true;
  return false;
}

}  // namespace

bool element_floors_apply(const Graph& g) { return !takes_decisions(has_composite(g) ? decompose(g) : g); }

Deviation deviation(const std::vector<double>& value, const std::vector<double>& reference) {
  Deviation d;
  double s = 0;
  size_t n = 0;
  for (size_t i = 0; i < value.size() && i < reference.size(); ++i) {
    if (!std::isfinite(value[i]) || !std::isfinite(reference[i])) continue;
    double e = std::fabs(value[i] - reference[i]);
    s += e * e;
    d.max = std::max(d.max, e);
    ++n;
  }
  d.rms = n ? std::sqrt(s / static_cast<double>(n)) : 0;
  return d;
}

void widen_element_floor(std::vector<double>& floor, const std::vector<double>& value, const std::vector<double>& reference) {
  floor.resize(reference.size(), 0.0);
  for (size_t i = 0; i < value.size() && i < reference.size(); ++i)
    if (std::isfinite(value[i]) && std::isfinite(reference[i])) floor[i] = std::max(floor[i], std::fabs(value[i] - reference[i]));
}

std::vector<Tensor> perturb_by_one_ulp(const std::vector<Tensor>& inputs, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Tensor> out;
  for (const Tensor& t : inputs) {
    if (!is_floating(t.dtype())) {
      out.push_back(t);
      continue;
    }
    std::vector<double> v = t.to_doubles();
    for (double& x : v)
      if (x != 0 && std::isfinite(x)) x += (rng() & 1 ? 1 : -1) * ulp_of(x, t.dtype());
    out.push_back(Tensor::from_doubles(t.dtype(), t.shape(), v));
  }
  return out;
}

std::vector<Tensor> run_with_kinks_flipped(const Graph& g, const std::vector<Tensor>& inputs) {
  InterpretOptions kinks;
  kinks.flip_kinks_band = kKinkBand;
  return interpret(has_composite(g) ? decompose(g) : g, inputs, kinks);
}

NoiseFloor measure_noise_floor(const Graph& g, const std::vector<Tensor>& inputs, const std::vector<Tensor>& reference,
                               const std::vector<Tensor>* eager, const std::function<bool(const NoiseFloor&)>& enough) {
  NoiseFloor floor;
  floor.outputs.resize(g.outputs.size());
  std::vector<std::vector<double>> ref;
  for (const Tensor& r : reference) ref.push_back(is_floating(r.dtype()) ? r.to_doubles() : std::vector<double>{});

  const bool composite = has_composite(g);
  const Graph decomposed = composite ? decompose(g) : g;
  const bool element_floors = !takes_decisions(decomposed);
  // Adds one variant's deviations; true when the caller has seen enough.
  auto record = [&](const std::string& name, const std::vector<Tensor>& outs) {
    floor.variants.push_back(name);
    for (size_t k = 0; k < floor.outputs.size() && k < outs.size(); ++k) {
      if (!is_floating(outs[k].dtype()) || ref[k].empty()) continue;
      const std::vector<double> got = outs[k].to_doubles();
      Deviation d = deviation(got, ref[k]);
      OutputNoise& o = floor.outputs[k];
      if (element_floors) widen_element_floor(o.element, got, ref[k]);
      if (o.rms_from.empty() || d.rms > o.rms) o.rms = d.rms, o.rms_from = name;
      if (o.max_from.empty() || d.max > o.max) o.max = d.max, o.max_from = name;
      if (name != "kinks") o.rms_without_kinks = std::max(o.rms_without_kinks, d.rms), o.max_without_kinks = std::max(o.max_without_kinks, d.max);
    }
    return enough && enough(floor);
  };
  auto run = [&](const Graph& graph, const std::vector<Tensor>& in, InterpretOptions o = {}) { return interpret(graph, in, o); };

  // The variants, in the order that settles most results soonest: the one that usually moves
  // results most (forward accumulation), then the ones that catch what it cannot (a decision at a
  // kink, an op that amplifies rounding), then the rest.
  const bool sums = accumulates(decomposed);
  auto order = [](AccumulationOrder o) {
    InterpretOptions x;
    x.accumulation = o;
    return x;
  };
  InterpretOptions kinks, other_way;
  kinks.flip_kinks_band = kKinkBand;
  other_way.perturb_values_seed = 1;
  struct Variant {
    const char* name;
    bool applies;
    const Graph* graph;
    InterpretOptions options;
  };
  const Variant variants[] = {
      {"forward accumulation", sums, &decomposed, order(AccumulationOrder::forward)},
      {"kinks", has_kinks(decomposed), &decomposed, kinks},
      {"values +-1 ulp", true, &decomposed, other_way},
      {"reversed accumulation", sums, &decomposed, order(AccumulationOrder::reversed)},
      {"blocked accumulation", sums, &decomposed, order(AccumulationOrder::blocked)},
      {"wide blocked accumulation", sums, &decomposed, order(AccumulationOrder::wide)},
      {"pairwise accumulation", sums, &decomposed, order(AccumulationOrder::pairwise)},
      {"decomposed", composite, &decomposed, {}},
  };
  if (record("float32", eager ? *eager : run(g, inputs))) return floor;
  // The variants are independent runs: a few side by side on the machine's cores, recorded in
  // order, so the floor and where it stops are what one after another gives.
  struct Run {
    std::string name;
    std::function<std::vector<Tensor>()> outputs;
  };
  std::vector<Run> runs;
  for (const Variant& v : variants)
    if (v.applies) runs.push_back({v.name, [&run, &inputs, &v] { return run(*v.graph, inputs, v.options); }});
  for (uint64_t seed : {1, 2})
    runs.push_back({"inputs +-1 ulp #" + std::to_string(seed), [&run, &g, &inputs, seed] { return run(g, perturb_by_one_ulp(inputs, seed)); }});
  const size_t wave = variants_side_by_side(decomposed);
  for (size_t first = 0; first < runs.size(); first += wave) {
    const size_t n = std::min(wave, runs.size() - first);
    std::vector<std::vector<Tensor>> outs(n);
    parallel_for(static_cast<int64_t>(n), n > 1, [&](int64_t k) { outs[static_cast<size_t>(k)] = runs[first + static_cast<size_t>(k)].outputs(); });
    for (size_t k = 0; k < n; ++k)
      if (record(runs[first + k].name, outs[k])) return floor;
  }
  return floor;
}

}  // namespace reprokit
