// Batch slicing: a graph whose every output sample depends only on the same sample of its inputs
// runs as a graph of a few samples, once per slice of the batch. Layers then run over one slice's
// activations, which stay in cache from one layer to the next; over the whole batch they did not
// (mobilenet_v2 at batch 8 holds 38 MB in one activation), and the time per sample grew with the
// batch.
#pragma once
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "reprokit/ir/graph.h"

namespace reprokit {

// Where each node of a graph holds the batch: the dim that indexes the samples, or kNoBatch for a
// value that is the same for every sample (a weight, what is derived from weights alone). The
// batch is dim 0 of the inputs not in `frozen` (the first one's size, B > 1), or where that
// fails, of the first such input alone; nullopt when some node mixes samples (a reduction over
// the batch, a reshape that merges it with another dim, a matmul that contracts it, an op the
// analysis does not know), or an output does not hold the batch in dim 0.
constexpr int kNoBatch = -1;
struct BatchDims {
  int64_t batch = 0;
  std::vector<int> dim;  // per node
};
std::optional<BatchDims> batch_dims(const Graph& g, const std::set<std::string>& frozen);

// The graph for `slice` samples: batched inputs and every batched value `slice` long in their
// batch dim (reshape and expand shapes follow). nullopt when some node's type does not come out
// as its own with the batch dim `slice` long.
std::optional<Graph> graph_for_slice(const Graph& g, const BatchDims& dims, int64_t slice);

// Samples per slice: the most that keep a slice's largest batched value under
// kSliceValueBytes, a divisor of the batch; the batch itself when the largest value of the whole
// batch fits (nothing to gain).
constexpr int64_t kSliceValueBytes = int64_t{4} << 20;
int64_t slice_samples(const Graph& g, const BatchDims& dims);

// The graph to compile and how to run it: `graph` runs `count` times, on slices of `samples`.
struct BatchSlicing {
  Graph graph;
  int64_t samples = 0, count = 0;
  std::vector<bool> input_batched;  // per input of the graph
};
// The slicing of g where it pays (slice_samples) and holds (batch_dims, graph_for_slice).
std::optional<BatchSlicing> plan_batch_slicing(const Graph& g, const std::set<std::string>& frozen);

}  // namespace reprokit
