// Batch slicing: which graphs run slice by slice (every output sample depends on its own input
// sample only), the graph of a slice, how many samples a slice takes, and the cpp backend's runs
// of it against the reference.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "../../src/codegen/batch_slicing.h"
#include "backend_test_util.h"
#include "reprokit/ir/text_format.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

// A small image classifier: conv, batch norm, relu, pool, flatten, linear.
const char* kClassifier = R"(graph g(%x: f32[4, 3, 10, 12], %w: f32[6, 3, 3, 3], %m: f32[6], %v: f32[6], %fw: f32[5, 24], %fb: f32[5]) {
  %c = conv2d(%x, %w, stride=[1, 1], padding=[1, 1], dilation=[1, 1], groups=1)
  %n = batch_norm(%c, %m, %v, eps=0.00001)
  %r = relu(%n)
  %p = adaptive_avg_pool2d(%r, output_size=[2, 2])
  %f = reshape(%p, shape=[4, -1])
  %o = linear(%f, %fw, %fb)
  return (%o)
}
)";

// Self-attention over [batch, tokens, features]: heads split by reshape and permute, the keys
// transposed, a weight transposed on its own (a value the same for every sample).
const char* kAttention = R"(graph g(%x: f32[3, 5, 8], %wq: f32[8, 8], %wk: f32[8, 8], %wv: f32[8, 8]) {
  %wkt = transpose(%wk, dim0=0, dim1=1)
  %q = matmul(%x, %wq)
  %k = matmul(%x, %wkt)
  %v = matmul(%x, %wv)
  %qh = reshape(%q, shape=[3, 5, 2, 4])
  %kh = reshape(%k, shape=[3, 5, 2, 4])
  %vh = reshape(%v, shape=[3, 5, 2, 4])
  %qp = permute(%qh, dims=[0, 2, 1, 3])
  %kp = permute(%kh, dims=[0, 2, 3, 1])
  %vp = permute(%vh, dims=[0, 2, 1, 3])
  %s = matmul(%qp, %kp)
  %a = softmax(%s, dim=-1)
  %h = matmul(%a, %vp)
  %t = transpose(%h, dim0=1, dim1=2)
  %o = reshape(%t, shape=[3, 5, 8])
  return (%o)
}
)";

// The inputs that are not data (whose names do not begin with x): a model's weights.
std::set<std::string> weights_of(const Graph& g) {
  std::set<std::string> out;
  for (int i = 0; i < g.num_inputs(); ++i)
    if (g.node(i).name[0] != 'x') out.insert(g.node(i).name);
  return out;
}

// The batch dim of value `name`, or nullopt when the graph does not slice.
std::optional<int> dim_of(const Graph& g, const std::string& name) {
  auto dims = batch_dims(g, weights_of(g));
  if (!dims) return std::nullopt;
  return dims->dim[static_cast<size_t>(g.find(name))];
}

// Whether the graph slices.
bool slices(const std::string& text) {
  Graph g = parse_graph(text);
  return batch_dims(g, weights_of(g)).has_value();
}

}  // namespace

TEST(BatchSlicing, AClassifierHoldsTheBatchInDimZeroThroughout) {
  Graph g = parse_graph(kClassifier);
  auto dims = batch_dims(g, weights_of(g));
  ASSERT_TRUE(dims);
  EXPECT_EQ(dims->batch, 4);
  for (const char* name : {"x", "c", "n", "r", "p", "f", "o"}) EXPECT_EQ(dims->dim[static_cast<size_t>(g.find(name))], 0) << name;
  for (const char* name : {"w", "m", "v", "fw", "fb"}) EXPECT_EQ(dims->dim[static_cast<size_t>(g.find(name))], kNoBatch) << name;
  auto slice = graph_for_slice(g, *dims, 1);
  ASSERT_TRUE(slice);
  EXPECT_EQ(slice->node(slice->find("x")).type.shape, (Shape{1, 3, 10, 12}));
  EXPECT_EQ(slice->node(slice->find("f")).type.shape, (Shape{1, 24}));  // the flatten's shape follows
  EXPECT_EQ(slice->node(slice->find("fw")).type.shape, (Shape{5, 24}));
  EXPECT_EQ(slice->node(slice->find("o")).type.shape, (Shape{1, 5}));
}

TEST(BatchSlicing, AttentionFollowsTheBatchThroughReshapesPermutesAndMatmuls) {
  Graph g = parse_graph(kAttention);
  EXPECT_EQ(dim_of(g, "wkt"), kNoBatch);
  EXPECT_EQ(dim_of(g, "kp"), 0);
  EXPECT_EQ(dim_of(g, "s"), 0);
  auto dims = batch_dims(g, weights_of(g));
  ASSERT_TRUE(dims);
  auto slice = graph_for_slice(g, *dims, 1);
  ASSERT_TRUE(slice);
  EXPECT_EQ(slice->node(slice->find("qh")).type.shape, (Shape{1, 5, 2, 4}));
  EXPECT_EQ(slice->node(slice->find("s")).type.shape, (Shape{1, 2, 5, 5}));
  // The batch moved by a permute, then back: a transposed batch dim is followed.
  EXPECT_TRUE(slices(R"(graph g(%x: f32[4, 3, 5], %w: f32[5, 2]) {
  %t = permute(%x, dims=[1, 0, 2])
  %m = matmul(%t, %w)
  %e = exp(%m)
  %b = permute(%e, dims=[1, 0, 2])
  return (%b)
}
)"));
}

TEST(BatchSlicing, WithoutFrozenInputsAWeightAsLongAsTheBatchIsTakenForOne) {
  // 4 filters at batch 4: taken for batched, the weight mixes samples in the conv; the first
  // input alone holds the batch.
  Graph g = parse_graph(R"(graph g(%x: f32[4, 3, 8, 8], %w: f32[4, 3, 3, 3]) {
  %c = conv2d(%x, %w, stride=[1, 1], padding=[1, 1], dilation=[1, 1], groups=1)
  return (%c)
}
)");
  auto dims = batch_dims(g, {});
  ASSERT_TRUE(dims);
  EXPECT_EQ(dims->dim[0], 0);
  EXPECT_EQ(dims->dim[1], kNoBatch);
  // Two data inputs as long as the batch, added: both hold it.
  Graph two = parse_graph("graph g(%x: f32[4, 3], %y: f32[4, 3]) {\n  %a = add(%x, %y)\n  return (%a)\n}\n");
  auto both = batch_dims(two, {});
  ASSERT_TRUE(both);
  EXPECT_EQ(both->dim[1], 0);
}

TEST(BatchSlicing, OpsThatKeepSamplesApartSlice) {
  // Channels concatenated, sliced, padded, cumulated, squeezed and unsqueezed, per-sample norms,
  // embeddings and gathers of each sample's own indices.
  EXPECT_TRUE(slices(R"(graph g(%x: f32[4, 6, 5, 5], %gw: f32[6], %gb: f32[6]) {
  %a = slice(%x, dim=1, start=0, end=3)
  %b = slice(%x, dim=1, start=3, end=6)
  %c = cat(%b, %a, dim=1)
  %p = pad(%c, pads=[1, 1, 2, 0])
  %s = cumsum(%p, dim=2)
  %u = unsqueeze(%s, dim=0)
  %q = squeeze(%u, dim=0)
  %n = group_norm(%q, %gw, %gb, num_groups=2)
  %m = amax(%n, dims=[1, 2], keepdim=true)
  %o = sub(%n, %m)
  return (%o)
}
)"));
  EXPECT_TRUE(slices(R"(graph g(%x_ids: i64[4, 7], %e: f32[10, 3], %x_at: i64[4, 7, 2]) {
  %v = embedding(%e, %x_ids)
  %l = layer_norm(%v, normalized_shape=[3])
  %p = gt(%l, 0.0)
  %w = where(%p, %l, 0.0)
  %g = gather(%w, %x_at, dim=2)
  return (%v, %g)
}
)"));
  // ... but not a gather of one table by each sample's indices along the batch's dim.
  EXPECT_FALSE(slices(R"(graph g(%x_at: i64[4, 3], %t: f32[4, 3]) {
  %g = gather(%t, %x_at, dim=1)
  return (%g)
}
)"));
}

TEST(BatchSlicing, OpsThatMixSamplesDoNotSlice) {
  // A reduction over the batch.
  EXPECT_FALSE(slices("graph g(%x: f32[4, 3]) {\n  %s = sum(%x, dims=[0])\n  return (%s)\n}\n"));
  // The batch merged with the channels.
  EXPECT_FALSE(slices(
      "graph g(%x: f32[4, 3, 2]) {\n  %r = reshape(%x, shape=[12, 2])\n  %e = exp(%r)\n  %b = reshape(%e, shape=[4, 3, 2])\n  return (%b)\n}\n"));
  // The batch contracted by a matmul (x^T x).
  EXPECT_FALSE(
      slices("graph g(%x: f32[4, 3]) {\n  %t = transpose(%x, dim0=0, dim1=1)\n  %m = matmul(%t, %x)\n  %b = expand(%m, shape=[4, 3, 3])\n  return "
             "(%b)\n}\n"));
  EXPECT_FALSE(slices("graph g(%x: f32[4, 3], %w: f32[4, 4]) {\n  %t = transpose(%x, dim0=0, dim1=1)\n  %m = matmul(%t, %w)\n  return (%m)\n}\n"));
  // A weight with one row per sample: slicing the input alone would pair samples with row 0.
  EXPECT_FALSE(slices("graph g(%x: f32[4, 3], %w: f32[4, 3]) {\n  %a = add(%x, %w)\n  return (%a)\n}\n"));
  // Softmax across the samples; cumulative sum down the batch; concatenation along it.
  EXPECT_FALSE(slices("graph g(%x: f32[4, 3]) {\n  %s = softmax(%x, dim=0)\n  return (%s)\n}\n"));
  EXPECT_FALSE(slices("graph g(%x: f32[4, 3]) {\n  %s = cumsum(%x, dim=0)\n  return (%s)\n}\n"));
  EXPECT_FALSE(
      slices("graph g(%x: f32[4, 3], %y: f32[4, 3]) {\n  %c = cat(%x, %y, dim=0)\n  %s = slice(%c, dim=0, start=2, end=6)\n  return (%s)\n}\n"));
  // An output with the batch in dim 1: its slices are not contiguous.
  EXPECT_FALSE(slices("graph g(%x: f32[4, 3]) {\n  %t = transpose(%x, dim0=0, dim1=1)\n  return (%t)\n}\n"));
  // An op the analysis does not know.
  EXPECT_FALSE(slices(
      "graph g(%x: f32[4, 3], %y: f32[4, 3]) {\n  %e = einsum(%x, %y, equation=\"bi,bi->b\")\n  %u = unsqueeze(%e, dim=1)\n  return (%u)\n}\n"));
  // One sample: nothing to slice.
  EXPECT_FALSE(slices("graph g(%x: f32[1, 3]) {\n  %e = exp(%x)\n  return (%e)\n}\n"));
}

TEST(BatchSlicing, ASliceHoldsAsManySamplesAsKeepItsLargestValueInCache) {
  // One sample's largest value: 64 x 96 x 96 floats, 2.25 MiB.
  auto plan = [](int64_t batch, int64_t channels) {
    Graph g = parse_graph(fmt::format(R"(graph g(%x: f32[{0}, 3, 96, 96], %w: f32[{1}, 3, 3, 3]) {{
  %c = conv2d(%x, %w, stride=[1, 1], padding=[1, 1], dilation=[1, 1], groups=1)
  %r = relu(%c)
  return (%r)
}}
)",
                                      batch, channels));
    return plan_batch_slicing(g, weights_of(g));
  };
  auto one = plan(6, 64);  // 2 samples would take 4.5 MiB: one at a time
  ASSERT_TRUE(one);
  EXPECT_EQ(one->samples, 1);
  EXPECT_EQ(one->count, 6);
  EXPECT_EQ(one->input_batched, (std::vector<bool>{true, false}));
  auto two = plan(8, 24);  // 0.84 MiB a sample: 4 fit, but 8 do not
  ASSERT_TRUE(two);
  EXPECT_EQ(two->samples, 4);
  EXPECT_EQ(two->count, 2);
  EXPECT_FALSE(plan(4, 8));  // the whole batch's largest value is 1.1 MiB: nothing to gain
  // A declared batch of 2^31 (never allocated here) is planned without counting up to it.
  Graph huge = parse_graph("graph g(%x: f32[2147483648, 1]) {\n  %e = exp(%x)\n  return (%e)\n}\n");
  auto far = plan_batch_slicing(huge, {});
  ASSERT_TRUE(far);
  EXPECT_EQ(far->samples, int64_t{1} << 20);  // 4 MiB of one float each
  EXPECT_EQ(far->count, 2048);
}

// One sample's largest value is 128 x 64 x 80 floats (2.5 MiB): slices of one sample, which run
// side by side where the library has threads (one a core) and as many slices at least; at batch
// 5 on two threads, four side by side, then the fifth on both.
std::string slices_of_one(int batch) {
  return fmt::format(R"(graph g(%x: f32[{}, 4, 64, 80], %w: f32[128, 4, 3, 3], %b: f32[128], %w2: f32[8, 128, 1, 1]) {{
  %c = conv2d(%x, %w, %b, stride=[1, 1], padding=[1, 1], dilation=[1, 1], groups=1)
  %r = relu(%c)
  %d = conv2d(%r, %w2, stride=[2, 2], padding=[0, 0], dilation=[1, 1], groups=1)
  %e = relu(%d)
  %m = mean(%e, dims=[2, 3], keepdim=true)
  %o = sub(%e, %m)
  return (%o, %m)
}}
)",
                     batch);
}

class BatchSlicingRun : public ::testing::TestWithParam<int> {};

TEST_P(BatchSlicingRun, TheCppBackendRunsSliceBySliceAndAgreesWithTheReference) {
  const int batch = GetParam();
  Graph g = parse_graph(slices_of_one(batch));
  CompileOptions o = cpp_options();
  o.frozen_inputs = weights_of(g);
  auto compiled = compile_graph(g, o);
  EXPECT_EQ(compiled->source().rfind(fmt::format("// Runs {0} times, on slices of 1 sample of the batch of {0}.\n", batch), 0), 0u)
      << compiled->source().substr(0, 200);
  const std::vector<Tensor> inputs = generate_inputs(g, 11);
  EXPECT_LE(run_error_vs_f64(*compiled, g, inputs), 1e-5);
  // Another batch in the same weights' place: every slice reads its own sample.
  std::vector<Tensor> other = generate_inputs(g, 12);
  for (size_t i = 1; i < other.size(); ++i) other[i] = inputs[i];
  EXPECT_LE(run_error_vs_f64(*compiled, g, other), 1e-5);
  // Kernel timing (one slice at a time) adds every slice's time under one label per kernel.
  std::vector<double> seconds;
  auto timed = compiled->run_timing_kernels(inputs, &seconds);
  EXPECT_EQ(seconds.size(), compiled->kernel_labels().size());
  EXPECT_LE(max_error_against(timed, compiled->run(inputs)), 0.0);
  // Each label says its types are a slice's and its time every slice's.
  const std::string slice_note = fmt::format("  (shapes of one slice; time of all {})", batch);
  for (const std::string& label : compiled->kernel_labels())
    EXPECT_EQ(label.substr(label.size() - std::min(label.size(), slice_note.size())), slice_note) << label;
}

INSTANTIATE_TEST_SUITE_P(Batches, BatchSlicingRun, ::testing::Values(4, 5));

TEST(BatchSlicing, AFailureInAnySliceFailsTheRun) {
  Graph g = parse_graph(slices_of_one(4));
  CompileOptions o = cpp_options();
  o.frozen_inputs = weights_of(g);
  o.injections = {parse_fault_injection("relu:runtime_error")};
  auto compiled = compile_graph(g, o);
  try {
    compiled->run(generate_inputs(g, 3));
    ADD_FAILURE() << "the injected runtime error was not reported";
  } catch (const CompileFailure& e) {
    EXPECT_EQ(e.kind, FailureKind::runtime_error);
    EXPECT_NE(std::string(e.what()).find("failed: "), std::string::npos) << e.what();
  }
}
