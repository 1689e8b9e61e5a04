// LSTM, GRU and RNN unrolled at import: directions and layouts agree with each other, and what the
// unrolling cannot express is refused naming the node. Values against ONNX's reference are in the
// conformance suite (test_lstm_*, test_gru_*, test_rnn_*, test_simple_rnn_*) and against PyTorch
// in tests/models (nn.LSTM, nn.GRU).
#include <gtest/gtest.h>

#include <cmath>

#include "onnx_test_util.h"
#include "reprokit/support/errors.h"

namespace reprokit::testing {
namespace {

constexpr int64_t S = 4, B = 2, I = 3, H = 5;

// Deterministic values of order one, different per tensor.
Tensor filled(Shape s, double seed) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  std::vector<double> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.6 * std::sin(seed + 0.77 * static_cast<double>(i));
  return f32(s, v);
}

struct Recurrent {
  std::string op = "LSTM", direction = "forward";
  int64_t layout = 0;
  int dirs() const { return direction == "bidirectional" ? 2 : 1; }
  int gates() const { return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1; }
};

// A model of one recurrent node with weights, bias and an initial state; outputs Y and Y_h.
ModelBuilder model(const Recurrent& r, std::function<void(ModelBuilder&, onnx::NodeProto&)> more = {}) {
  ModelBuilder b(14);
  const int64_t D = r.dirs(), G = r.gates() * H;
  const std::vector<int64_t> x = r.layout ? std::vector<int64_t>{B, S, I} : std::vector<int64_t>{S, B, I};
  const Shape state = r.layout ? Shape{B, D, H} : Shape{D, B, H};
  b.input("x", F32, x);
  b.init("w", filled({D, G, I}, 1)).init("r", filled({D, G, H}, 2)).init("b", filled({D, 2 * G}, 3)).init("h0", filled(state, 4));
  auto& n = b.node(r.op, {"x", "w", "r", "b", "", "h0"}, {"y", "yh"});
  attr_s(n, "direction", r.direction);
  attr(n, "hidden_size", H);
  if (r.layout) attr(n, "layout", 1);
  if (more) more(b, n);
  const std::vector<int64_t> y = r.layout ? std::vector<int64_t>{B, S, D, H} : std::vector<int64_t>{S, D, B, H};
  b.output("y", F32, y).output("yh", F32, std::vector<int64_t>(state.begin(), state.end()));
  return b;
}

// x [S, B, I] with time reversed.
Tensor reversed_in_time(const Tensor& x) {
  std::vector<double> v = x.to_doubles(), out(v.size());
  const size_t step = static_cast<size_t>(B * I);
  for (int64_t t = 0; t < S; ++t)
    std::copy(v.begin() + static_cast<long>(static_cast<size_t>(t) * step), v.begin() + static_cast<long>(static_cast<size_t>(t + 1) * step),
              out.begin() + static_cast<long>(static_cast<size_t>(S - 1 - t) * step));
  return f32(x.shape(), out);
}

TEST(OnnxImportRecurrent, ReverseIsForwardOnTheReversedSequence) {
  for (const char* op : {"LSTM", "GRU", "RNN"}) {
    SCOPED_TRACE(op);
    const Tensor x = filled({S, B, I}, 5);
    Recurrent fwd{op, "forward"}, rev{op, "reverse"};
    auto yf = run(model(fwd).import(), {reversed_in_time(x)});
    auto yr = run(model(rev).import(), {x});
    // Y [S, 1, B, H]: step t of the reverse pass is step S-1-t of the forward pass.
    std::vector<double> f = yf[0].to_doubles(), r = yr[0].to_doubles();
    const size_t step = static_cast<size_t>(B * H);
    for (int64_t t = 0; t < S; ++t)
      for (size_t k = 0; k < step; ++k)
        EXPECT_NEAR(r[static_cast<size_t>(t) * step + k], f[static_cast<size_t>(S - 1 - t) * step + k], 1e-6) << "t=" << t;
    EXPECT_EQ(yr[1].to_doubles(), yf[1].to_doubles());
  }
}

TEST(OnnxImportRecurrent, BatchFirstLayoutIsTheSameComputation) {
  for (const char* op : {"LSTM", "GRU"}) {
    SCOPED_TRACE(op);
    Recurrent seq_first{op, "bidirectional", 0}, batch_first{op, "bidirectional", 1};
    const Tensor x = filled({S, B, I}, 6);
    // The same numbers in the other layout: x [B, S, I] and h0 [B, D, H].
    std::vector<double> xv = x.to_doubles(), xt(xv.size());
    for (int64_t t = 0; t < S; ++t)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < I; ++i) xt[static_cast<size_t>((b * S + t) * I + i)] = xv[static_cast<size_t>((t * B + b) * I + i)];
    ModelBuilder bf = model(batch_first);
    // Its h0 initializer must hold the transposed values of the other's.
    std::vector<double> h = filled({2, B, H}, 4).to_doubles(), ht(h.size());
    for (int64_t d = 0; d < 2; ++d)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t k = 0; k < H; ++k) ht[static_cast<size_t>((b * 2 + d) * H + k)] = h[static_cast<size_t>((d * B + b) * H + k)];
    for (auto& t : *bf.m.mutable_graph()->mutable_initializer())
      if (t.name() == "h0") t.ParseFromString(encode_onnx_tensor(f32({B, 2, H}, ht), "h0"));
    ModelBuilder sf = model(seq_first);
    for (auto& t : *sf.m.mutable_graph()->mutable_initializer())
      if (t.name() == "h0") t.ParseFromString(encode_onnx_tensor(f32({2, B, H}, h), "h0"));
    auto a = run(sf.import(), {x});
    auto c = run(bf.import(), {f32({B, S, I}, xt)});
    ASSERT_EQ(c[0].shape(), (Shape{B, S, 2, H}));
    std::vector<double> ya = a[0].to_doubles(), yc = c[0].to_doubles();
    for (int64_t t = 0; t < S; ++t)
      for (int64_t d = 0; d < 2; ++d)
        for (int64_t b = 0; b < B; ++b)
          for (int64_t k = 0; k < H; ++k)
            EXPECT_EQ(ya[static_cast<size_t>(((t * 2 + d) * B + b) * H + k)], yc[static_cast<size_t>(((b * S + t) * 2 + d) * H + k)]);
    ASSERT_EQ(c[1].shape(), (Shape{B, 2, H}));
  }
}

TEST(OnnxImportRecurrent, RefusesWhatUnrollingCannotExpressNamingTheNode) {
  // Sequence lengths: all equal to the sequence's is the whole sequence; a shorter one is refused.
  auto lens = [](std::vector<int64_t> l) {
    return model(Recurrent{}, [l](ModelBuilder& b, onnx::NodeProto& n) {
      b.init("lens", Tensor::from_int64s(DType::i32, {B}, l));
      n.set_input(4, "lens");
    });
  };
  EXPECT_NO_THROW(lens({S, S}).import());
  const std::string e = import_error(lens({S, 2}));
  EXPECT_HAS(e, "node 0 (LSTM)");
  EXPECT_HAS(e, "sequence_lens with a length (2) other than the sequence length 4");
  // Activations with parameters, and ones ONNX lists that reprokit does not unroll.
  EXPECT_HAS(
      import_error(model(Recurrent{"GRU"},
                         [](ModelBuilder&, onnx::NodeProto& n) {
                           auto* a = n.add_attribute();
                           a->set_name("activation_alpha");
                           a->set_type(onnx::AttributeProto::FLOATS);
                           a->add_floats(0.5f);
                         })),
      "attribute 'activation_alpha' (reprokit's mapping of GRU handles direction, hidden_size, layout, clip, activations, linear_before_reset)");
  EXPECT_HAS(import_error(model(Recurrent{"RNN"},
                                [](ModelBuilder&, onnx::NodeProto& n) {
                                  auto* a = n.add_attribute();
                                  a->set_name("activations");
                                  a->set_type(onnx::AttributeProto::STRINGS);
                                  a->add_strings("ThresholdedRelu");
                                })),
             "activation 'ThresholdedRelu'");
  // A clip other than positive is an invalid model.
  EXPECT_HAS(import_error(model(Recurrent{"LSTM"}, [](ModelBuilder&, onnx::NodeProto& n) { attr_f(n, "clip", -1.0f); })), "clip must be positive");
}

TEST(OnnxImportRecurrent, ClipBoundsTheActivationsInputs) {
  // Each RNN output is tanh of a sum clipped to [-clip, clip]; without the clip they are larger.
  const double clip = 1e-3;
  auto y = run(model(Recurrent{"RNN"}, [&](ModelBuilder&, onnx::NodeProto& n) { attr_f(n, "clip", static_cast<float>(clip)); }).import(),
               {filled({S, B, I}, 7)});
  for (double v : y[0].to_doubles()) EXPECT_LE(std::fabs(v), std::tanh(clip) + 1e-7);
  auto unclipped = run(model(Recurrent{"RNN"}).import(), {filled({S, B, I}, 7)});
  double largest = 0;
  for (double v : unclipped[0].to_doubles()) largest = std::max(largest, std::fabs(v));
  EXPECT_GT(largest, 0.1);
}

}  // namespace
}  // namespace reprokit::testing
