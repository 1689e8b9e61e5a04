// The noise floor: how far a graph's floating results move, against its float64 reference, under
// changes that are not bugs. Each variant is a legitimate way to compute the same graph:
//   float32            the reference interpreter at the graph's precision (one rounding per op)
//   decomposed         the same after aot decompositions (a rounding per primitive op)
//   forward, reversed, pairwise, blocked, wide blocked accumulation
//                      the decomposed graph with every sum, matmul and convolution adding its
//                      terms at float32 precision in that order (see AccumulationOrder)
//   values +-1 ulp    the decomposed graph with every value an op computes (but a whole number
//                      the type holds exactly: a mask, a quantised level) moved one ulp up or
//                      down at random, as if each op had rounded the other way (what a rewrite
//                      such as x / c -> x * (1 / c) does), showing how much the graph amplifies it
//   kinks              the decomposed graph with every decision taken within 2^-16 (relative) of a
//                      kink going the other way: a relu input that close to 0 treated as its
//                      negation, a comparison that close to its threshold flipped, as a rounding
//                      difference upstream may make them go
//   inputs +-1 ulp #1, #2
//                      float32 on the inputs with every nonzero floating element moved by one
//                      unit in the last place, up or down at random (two seeds)
// Variants run in the order that settles most results soonest (see measure_noise_floor).
// For each output the floor is the largest deviation any variant shows, as an RMS over the tensor
// and as a largest single element. docs/ACCURACY.md explains how the accuracy rule uses it.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "reprokit/ir/graph.h"
#include "reprokit/runtime/interpreter.h"
#include "reprokit/runtime/tensor.h"

namespace reprokit {

struct OutputNoise {
  double rms = 0;        // the largest RMS deviation from float64 among the variants
  double max = 0;        // the largest deviation of one element among the variants
  std::string rms_from;  // the variant that gave each
  std::string max_from;
  std::vector<double> element;  // each element's own largest deviation among the variants (empty: not
                                // measured, see element_floors_apply)
  // The same over every variant but "kinks": what rounding alone moves the output by, without a
  // decision taken the other way.
  double rms_without_kinks = 0, max_without_kinks = 0;
};

struct NoiseFloor {
  std::vector<std::string> variants;  // the variants run, in order
  std::vector<OutputNoise> outputs;   // one per graph output (zero for integer and bool outputs)
};

// Runs the variants of g on `inputs` and measures each output's deviation from `reference` (the
// float64 outputs on the same inputs). `eager` (the float32 outputs) is reused when given. After
// each variant `enough` (when given) may end the measurement: the floor only widens with more
// variants, so a result already within it stays within it.
// Whether each element's own floor means something: not in a graph that takes decisions (relu, a
// comparison, its decomposition's), where a decision within the noise going the other way moves a
// few elements far past their own floors legitimately (a gradient through a relu that flipped).
// measure_noise_floor fills OutputNoise::element only where this holds.
bool element_floors_apply(const Graph& g);

// Widens each element's floor to that element's deviation in `value` (finite elements only);
// `floor` takes the reference's size first.
void widen_element_floor(std::vector<double>& floor, const std::vector<double>& value, const std::vector<double>& reference);

NoiseFloor measure_noise_floor(const Graph& g, const std::vector<Tensor>& inputs, const std::vector<Tensor>& reference,
                               const std::vector<Tensor>* eager = nullptr, const std::function<bool(const NoiseFloor&)>& enough = {});

// g's outputs with every decision near its kink taken the other way (the "kinks" variant): an
// integer or bool output that differs from eager only where this one does too was decided within
// the noise of its threshold.
std::vector<Tensor> run_with_kinks_flipped(const Graph& g, const std::vector<Tensor>& inputs);

// RMS and largest deviation of `value` from `reference` over elements finite in both.
struct Deviation {
  double rms = 0, max = 0;
};
Deviation deviation(const std::vector<double>& value, const std::vector<double>& reference);

// The inputs with every nonzero floating element moved one ulp (of its dtype) up or down, chosen
// by `seed`. Integer and bool inputs are unchanged.
std::vector<Tensor> perturb_by_one_ulp(const std::vector<Tensor>& inputs, uint64_t seed);

}  // namespace reprokit
