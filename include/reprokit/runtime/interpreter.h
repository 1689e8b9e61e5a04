// The reference interpreter: runs any graph node by node with the reference kernels. In float64
// mode every floating value is computed and stored as f64: the ground truth of accuracy checks.
#pragma once
#include <functional>
#include <vector>

#include "reprokit/ir/graph.h"
#include "reprokit/runtime/tensor.h"

namespace reprokit {

// How sums (sum, matmul, linear, conv2d) add their terms. `exact` adds in double and rounds the
// result once: the reference. The others round every partial sum to the result's precision (float
// for f32/f16/bf16 results, as compiled kernels accumulate) in one order: the orders a correct
// compiled kernel may use, which the noise floor (harness/noise_floor.h) runs to see how far
// results move without any bug. blocked: 8 interleaved partial sums (SIMD lanes, threads),
// combined pairwise; wide: 32 of them (512-bit vectors with two accumulators).
enum class AccumulationOrder { exact, forward, reversed, pairwise, blocked, wide };

struct InterpretOptions {
  bool cast_to_f64 = false;  // upcast every floating input and value to f64
  AccumulationOrder accumulation = AccumulationOrder::exact;
  // Nonzero: every floating value a node computes is moved one ulp (of its dtype) up or down at
  // random from this seed, as if each op had rounded the other way (the noise floor's "values
  // +-1 ulp" variant).
  uint64_t perturb_values_seed = 0;
  // Nonzero: decisions taken within this relative distance of a kink go the other way, as a
  // rounding difference upstream could make them go (the noise floor's "kinks" variant): a relu
  // input x with 0 < |x| <= band * rms(x) is treated as -x, and a comparison whose operands differ
  // by 0 < |a - b| <= band * max(rms(a), rms(b)) is flipped, and so is an exact tie (a == b) of
  // operands computed with rounding (not inputs, literals or exact values moved about).
  double flip_kinks_band = 0;
  // Called after each node is computed (node id, its value); used by analyze and the minifier.
  std::function<void(int, const Tensor&)> on_value;
};

// Runs g on inputs (one per graph input, in order). Returns one tensor per graph output.
// Throws UserError when an input does not match its declared dtype/shape (naming it).
std::vector<Tensor> interpret(const Graph& g, const std::vector<Tensor>& inputs, const InterpretOptions& opts = {});

// Every node's value (index = node id); inputs included. For cut-point values.
std::vector<Tensor> interpret_all(const Graph& g, const std::vector<Tensor>& inputs, const InterpretOptions& opts = {});

// Ops whose result jumps at a point (relu's kink, a comparison's threshold): those that
// InterpretOptions::flip_kinks_band acts on.
bool has_kink(Op op);

// Reference kernel of one node, given its operand tensors in operand order (a literal operand's
// entry is ignored: the node's literal is used). Output dtype/shape as node.type.
Tensor run_reference_kernel(const Node& node, const std::vector<Tensor>& operands, bool f64_mode);

}  // namespace reprokit
