// The importer's handlers for ONNX's recurrent layers (LSTM, GRU, RNN). Each is unrolled over its
// sequence length, known at import, into the op set's linear, pointwise and slicing ops: every
// layer below the importer (the compilers, autodiff, the minifier, the exporter) sees ordinary
// nodes and needs nothing new, and a minified repro of a bug inside a recurrent layer is the few
// nodes of one step.
#include <fmt/format.h>

#include <array>
#include <string>
#include <vector>

#include "handler_util.h"
#include "import_context.h"
#include "reprokit/support/errors.h"

namespace reprokit::onnx_detail {

namespace {

// Unrolling makes about 15 nodes per step and direction; past this many steps the graph would be
// too large to compile or minify in reasonable time, and the import refuses it instead.
constexpr int64_t kMaxUnrolledSteps = 4096;

enum class Cell { lstm, gru, rnn };

struct CellInfo {
  const char* name;
  int gates;                                     // rows of W per hidden unit: 4 (iofc), 3 (zrh), 1
  std::vector<std::string> default_activations;  // per direction
};

const CellInfo& info(Cell cell) {
  static const std::array<CellInfo, 3> table{{
      {"LSTM", 4, {"Sigmoid", "Tanh", "Tanh"}},
      {"GRU", 3, {"Sigmoid", "Tanh"}},
      {"RNN", 1, {"Tanh"}},
  }};
  return table[static_cast<size_t>(cell)];
}

// The activations ONNX lists for recurrent layers that take no alpha/beta parameters. The
// parametric ones (Affine, LeakyRelu, HardSigmoid, ...) are refused by the attribute check, as
// activation_alpha and activation_beta are not allowed.
using Activation = int (*)(NodeCtx&, int);
const std::map<std::string, Activation, std::less<>>& activations() {
  static const std::map<std::string, Activation, std::less<>> table{
      {"Sigmoid", [](NodeCtx& c, int x) { return c.emit1(Op::sigmoid, x); }},
      {"Tanh", [](NodeCtx& c, int x) { return c.emit1(Op::tanh, x); }},
      {"Relu", [](NodeCtx& c, int x) { return c.emit1(Op::relu, x); }},
      {"Softsign",  // x / (1 + |x|)
       [](NodeCtx& c, int x) {
         int d = c.emit(Op::add, {v(c.emit1(Op::abs, x)), flit(1.0)});
         return c.emit(Op::div, {v(x), v(d)});
       }},
      {"Softplus",  // log(1 + exp(x))
       [](NodeCtx& c, int x) {
         return c.emit1(Op::log, c.emit(Op::add, {v(c.emit1(Op::exp, x)), flit(1.0)}));
       }},
  };
  return table;
}

int slice(NodeCtx& c, int x, int64_t dim, int64_t start, int64_t end) {
  return c.emit1(Op::slice, x, {{"dim", AttrValue(dim)}, {"start", AttrValue(start)}, {"end", AttrValue(end)}});
}
// Index `i` of dim `dim`, that dim dropped.
int take(NodeCtx& c, int x, int64_t dim, int64_t i) { return c.emit1(Op::squeeze, slice(c, x, dim, i, i + 1), {{"dim", AttrValue(dim)}}); }
int swap01(NodeCtx& c, int x) { return c.emit1(Op::transpose, x, {{"dim0", AttrValue(int64_t{0})}, {"dim1", AttrValue(int64_t{1})}}); }
int unsqueeze(NodeCtx& c, int x, int64_t dim) { return c.emit1(Op::unsqueeze, x, {{"dim", AttrValue(dim)}}); }
int add(NodeCtx& c, int a, int b) { return c.emit(Op::add, {v(a), v(b)}); }
int mul(NodeCtx& c, int a, int b) { return c.emit(Op::mul, {v(a), v(b)}); }
// `ids` stacked along a new dim `dim`.
int stack(NodeCtx& c, const std::vector<int>& ids, int64_t dim) {
  std::vector<Operand> parts;
  for (int id : ids) parts.push_back(v(unsqueeze(c, id, dim)));
  if (parts.size() == 1) return parts[0].value;
  return c.emit(Op::cat, parts, {{"dim", AttrValue(dim)}});
}

// One layer's inputs and attributes, checked.
struct Layer {
  Cell cell;
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  bool reverse_only = false, batch_first = false;
  double clip = 0;               // 0: none
  std::vector<Activation> acts;  // per direction, info(cell).default_activations.size() each
};

Layer read_layer(NodeCtx& c, Cell cell) {
  const CellInfo& ci = info(cell);
  // activation_alpha and activation_beta are not among them: only activations without parameters.
  switch (cell) {
    case Cell::lstm: c.allow({"direction", "hidden_size", "layout", "clip", "activations", "input_forget"}); break;
    case Cell::gru: c.allow({"direction", "hidden_size", "layout", "clip", "activations", "linear_before_reset"}); break;
    case Cell::rnn: c.allow({"direction", "hidden_size", "layout", "clip", "activations"}); break;
  }
  Layer L;
  L.cell = cell;
  require_float(c, 0);
  const std::string direction = c.attr_string("direction", "forward");
  if (direction == "bidirectional") L.dirs = 2;
  else if (direction == "reverse") L.reverse_only = true;
  else if (direction != "forward") c.bad(fmt::format("direction '{}' (forward, reverse or bidirectional)", direction));
  const int64_t layout = c.attr_int("layout", 0);
  if (layout != 0 && layout != 1) c.bad(fmt::format("layout {} (0 or 1)", layout));
  L.batch_first = layout == 1;
  L.clip = c.attr_float("clip", 0.0);
  if (c.attr("clip") && !(L.clip > 0)) c.bad("clip must be positive");
  if (c.rank(0) != 3) c.bad(fmt::format("X must be 3-D, it is {}", shape_str(c.shape(0))));
  const Shape& xs = c.shape(0);
  L.seq = L.batch_first ? xs[1] : xs[0];
  L.batch = L.batch_first ? xs[0] : xs[1];
  L.input = xs[2];
  if (c.rank(1) != 3 || c.rank(2) != 3) c.bad("W and R must be 3-D");
  L.hidden = c.shape(2)[2];
  if (auto hs = c.attr("hidden_size"); hs && c.attr_int("hidden_size", 0) != L.hidden)
    c.bad(fmt::format("hidden_size {} but R is {}", c.attr_int("hidden_size", 0), shape_str(c.shape(2))));
  const int64_t gh = ci.gates * L.hidden;
  auto expect = [&](int i, const Shape& want, const char* what) {
    if (c.has(i) && c.shape(i) != want) c.bad(fmt::format("{} is {}, expected {}", what, shape_str(c.shape(i)), shape_str(want)));
  };
  expect(1, {L.dirs, gh, L.input}, "W");
  expect(2, {L.dirs, gh, L.hidden}, "R");
  expect(3, {L.dirs, 2 * gh}, "B");
  const Shape state = L.batch_first ? Shape{L.batch, L.dirs, L.hidden} : Shape{L.dirs, L.batch, L.hidden};
  expect(5, state, "initial_h");
  if (cell == Cell::lstm) {
    expect(6, state, "initial_c");
    expect(7, {L.dirs, 3 * L.hidden}, "P");
  }
  for (int i = 1; i < c.num_inputs(); ++i)
    if (c.has(i) && i != 4 && c.dtype(i) != c.dtype(0))
      c.bad(fmt::format("input {} is {}, X is {}", i + 1, dtype_name(c.dtype(i)), dtype_name(c.dtype(0))));
  if (L.seq < 1) c.unsupported("an empty sequence");
  if (L.seq * L.dirs > kMaxUnrolledSteps)
    c.unsupported(
        fmt::format("{} steps of {} directions (reprokit unrolls recurrent layers over at most {} steps)", L.seq, L.dirs, kMaxUnrolledSteps));
  // sequence_lens: each batch entry's length. Lengths equal to the sequence's are the full
  // sequence; shorter ones would need a different time index per batch entry.
  if (c.has(4)) {
    for (int64_t len : c.need_ints(4, "sequence_lens"))
      if (len != L.seq)
        c.unsupported(fmt::format(
            "sequence_lens with a length ({}) other than the sequence length {} (reprokit unrolls every batch entry over the whole sequence)", len,
            L.seq));
  }
  std::vector<std::string> names = ci.default_activations;
  if (L.dirs == 2) names.insert(names.end(), ci.default_activations.begin(), ci.default_activations.end());
  if (const auto* a = c.attr("activations")) {
    names.clear();
    for (const auto& s : a->strings()) names.push_back(s);
    const size_t want = ci.default_activations.size() * static_cast<size_t>(L.dirs);
    if (names.size() != want) c.bad(fmt::format("{} activations, {} expects {}", names.size(), ci.name, want));
  }
  for (const auto& name : names) {
    auto it = activations().find(name);
    if (it == activations().end()) c.unsupported(fmt::format("activation '{}' (reprokit unrolls Sigmoid, Tanh, Relu, Softsign, Softplus)", name));
    L.acts.push_back(it->second);
  }
  return L;
}

// The state input `i` ([dirs, batch, hidden], or [batch, dirs, hidden] batch-first) for
// direction d, else zeros.
int initial_state(NodeCtx& c, const Layer& L, int i, int64_t d) {
  if (!c.has(i))
    return c.emit(Op::full, {}, {{"shape", AttrValue::ints({L.batch, L.hidden})}, {"value", AttrValue(0.0)}, {"dtype", AttrValue(c.dtype(0))}});
  return take(c, c.value(i), L.batch_first ? 1 : 0, d);
}

struct DirectionResult {
  std::vector<int> hs;    // the hidden state after each time step, in time order
  int h = -1, cell = -1;  // the final states
};

// One direction of one layer: reverse processes the sequence from its end.
DirectionResult run_direction(NodeCtx& c, const Layer& L, int xs, int64_t d, bool reverse) {
  const int64_t H = L.hidden;
  const int64_t gh = info(L.cell).gates * H;
  const size_t per_dir = info(L.cell).default_activations.size();
  auto act = [&](size_t k, int x) { return L.acts[static_cast<size_t>(d) * per_dir + k](c, x); };
  auto clip = [&](int x) {
    if (L.clip == 0) return x;
    return c.emit1(Op::clamp, x, {{"min", AttrValue(-L.clip)}, {"max", AttrValue(L.clip)}});
  };
  auto gate = [&](int g, int k) { return slice(c, g, 1, k * H, (k + 1) * H); };
  const int w = take(c, c.value(1), 0, d), r = take(c, c.value(2), 0, d);
  int wb = -1, rb = -1;
  if (c.has(3)) {
    const int b = take(c, c.value(3), 0, d);
    wb = slice(c, b, 0, 0, gh);
    rb = slice(c, b, 0, gh, 2 * gh);
  }
  auto linear = [&](int x, int weight, int bias) {
    std::vector<Operand> ops{v(x), v(weight)};
    if (bias >= 0) ops.push_back(v(bias));
    return c.emit(Op::linear, ops);
  };
  // The input's projection for every step at once: [seq, batch, gates * hidden].
  const int xw = linear(xs, w, wb);
  DirectionResult out;
  out.hs.assign(static_cast<size_t>(L.seq), -1);
  int h = initial_state(c, L, 5, d);
  int cell = L.cell == Cell::lstm ? initial_state(c, L, 6, d) : -1;
  int p = L.cell == Cell::lstm && c.has(7) ? take(c, c.value(7), 0, d) : -1;
  const bool coupled = L.cell == Cell::lstm && c.attr_int("input_forget", 0) != 0;
  const bool linear_before_reset = L.cell == Cell::gru && c.attr_int("linear_before_reset", 0) != 0;
  for (int64_t step = 0; step < L.seq; ++step) {
    const int64_t t = reverse ? L.seq - 1 - step : step;
    const int x = take(c, xw, 0, t);  // [batch, gates * hidden]
    switch (L.cell) {
      case Cell::lstm: {  // gates i, o, f, c
        const int g = add(c, x, linear(h, r, rb));
        auto peep = [&](int pre, int k, int state) { return p < 0 ? pre : add(c, pre, mul(c, slice(c, p, 0, k * H, (k + 1) * H), state)); };
        const int i = act(0, clip(peep(gate(g, 0), 0, cell)));
        const int f = coupled ? c.emit(Op::sub, {flit(1.0), v(i)}) : act(0, clip(peep(gate(g, 2), 2, cell)));
        const int cand = act(1, clip(gate(g, 3)));
        cell = add(c, mul(c, f, cell), mul(c, i, cand));
        const int o = act(0, clip(peep(gate(g, 1), 1, cell)));
        h = mul(c, o, act(2, cell));
        break;
      }
      case Cell::gru: {  // gates z, r, h
        const int hr = linear(h, r, rb);
        const int z = act(0, clip(add(c, gate(x, 0), gate(hr, 0))));
        const int reset = act(0, clip(add(c, gate(x, 1), gate(hr, 1))));
        int recurrent;
        if (linear_before_reset) {
          recurrent = mul(c, reset, gate(hr, 2));
        } else {  // the reset gate applies to the state before R
          const int rh = slice(c, r, 0, 2 * H, 3 * H);
          recurrent = linear(mul(c, reset, h), rh, rb >= 0 ? slice(c, rb, 0, 2 * H, 3 * H) : -1);
        }
        const int cand = act(1, clip(add(c, gate(x, 2), recurrent)));
        h = add(c, cand, mul(c, z, c.emit(Op::sub, {v(h), v(cand)})));  // (1 - z) * cand + z * h
        break;
      }
      case Cell::rnn: h = act(0, clip(add(c, x, linear(h, r, rb)))); break;
    }
    out.hs[static_cast<size_t>(t)] = h;
  }
  out.h = h;
  out.cell = cell;
  return out;
}

void recurrent(NodeCtx& c, Cell cell) {
  const Layer L = read_layer(c, cell);
  int xs = c.value(0);
  if (L.batch_first) xs = swap01(c, xs);  // [seq, batch, input]
  std::vector<DirectionResult> dirs;
  for (int64_t d = 0; d < L.dirs; ++d) dirs.push_back(run_direction(c, L, xs, d, L.reverse_only || d == 1));
  if (c.wants(0)) {  // Y: [seq, dirs, batch, hidden], or [batch, seq, dirs, hidden] batch-first
    std::vector<int> per_dir;
    for (const auto& r : dirs) per_dir.push_back(stack(c, r.hs, 0));
    int y = stack(c, per_dir, 1);
    if (L.batch_first) y = c.emit1(Op::permute, y, {{"dims", AttrValue::ints({2, 0, 1, 3})}});
    c.set(0, y);
  }
  auto final_state = [&](int k, int DirectionResult::*which) {
    if (!c.wants(k)) return;
    std::vector<int> ids;
    for (const auto& r : dirs) ids.push_back(r.*which);
    c.set(k, stack(c, ids, L.batch_first ? 1 : 0));  // [dirs, batch, hidden] or [batch, dirs, hidden]
  };
  final_state(1, &DirectionResult::h);
  if (cell == Cell::lstm) final_state(2, &DirectionResult::cell);
}

}  // namespace

const std::map<std::string, Handler, std::less<>>& recurrent_handlers() {
  static const std::map<std::string, Handler, std::less<>> table{
      {"LSTM", [](NodeCtx& c) { recurrent(c, Cell::lstm); }},
      {"GRU", [](NodeCtx& c) { recurrent(c, Cell::gru); }},
      {"RNN", [](NodeCtx& c) { recurrent(c, Cell::rnn); }},
  };
  return table;
}

}  // namespace reprokit::onnx_detail
