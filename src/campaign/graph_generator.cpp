// The fuzzer's graph generator. A graph grows one node at a time: an op is drawn from the allowed
// set, its operands are picked from the values so far or made as new inputs whose types are
// proposed from the first operand's (same shape, broadcastable, transposed, a suffix, random), its
// attributes are proposed from their kinds in the schema, and the op's own shape inference and the
// node verifier decide whether the proposal is valid. Rejected proposals cost microseconds, so
// the generator needs no op-specific rules: what the op table accepts is what gets generated.
#include "reprokit/campaign/graph_generator.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>

#include "reprokit/aot/partition.h"
#include "reprokit/harness/stack.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/op_semantics.h"
#include "reprokit/ir/verifier.h"
#include "reprokit/runtime/input_gen.h"
#include "reprokit/runtime/interpreter.h"

namespace reprokit {

namespace {

using Rng = std::mt19937_64;

int64_t between(Rng& r, int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(r() % static_cast<uint64_t>(hi - lo + 1)); }
bool chance(Rng& r, double p) { return static_cast<double>(r() >> 11) * (1.0 / 9007199254740992.0) < p; }
double uniform(Rng& r, double lo, double hi) { return lo + (hi - lo) * static_cast<double>(r() >> 11) * (1.0 / 9007199254740992.0); }
template <class T> const T& one_of(Rng& r, const std::vector<T>& xs) { return xs[static_cast<size_t>(r() % xs.size())]; }

// Dtypes by how often a new input gets one: mostly f32, every other dtype of the op set too.
const std::vector<DType> kDtypeDraw = {DType::f32, DType::f32,  DType::f32, DType::f32, DType::f64,
                                       DType::f16, DType::bf16, DType::i32, DType::i64, DType::boolean};

// String attributes take their default or one of these (the schema records defaults, not choices).
const std::map<std::string, std::vector<std::string>, std::less<>> kStringChoices = {
    {"approximate", {"none", "tanh"}},
    {"equation", {"ij->ji", "ij->", "ijk->kj", "ij,jk->ik", "bij,bjk->bik", "ij,ij->i", "i,i->", "ij,kj", "ij,jk,kl->il"}},
    {"mode", {"bilinear", "nearest"}},
    {"padding_mode", {"zeros", "border", "reflection"}},
};

// One operand of a node being proposed: an existing value (by name, since new inputs shift ids),
// a new input, or a scalar literal.
struct Proposed {
  enum Kind { existing, fresh, literal } kind = existing;
  std::string name;
  TensorType type;
  AttrValue literal_value;
};

class Generator {
 public:
  Generator(uint64_t seed, const GeneratorOptions& o) : rng_(seed), opt_(o) {
    for (Op op : o.ops.empty() ? all_fuzzable_ops() : o.ops) ops_.push_back(op);
    g_.name = fmt::format("fuzz_{:016x}", seed);
  }

  std::optional<Graph> build() {
    if (ops_.empty()) return std::nullopt;
    const int target = static_cast<int>(between(rng_, 1, std::max(1, opt_.max_nodes)));
    // Each draw of an op gets many proposals: ops whose operands must fit closely (conv2d, the
    // pools' backward) would otherwise lose their turn to the easy ones.
    for (int made = 0, draws = 0; made < target && draws < 20 * target; ++draws) {
      const OpSchema& s = op_schema(one_of(rng_, ops_));
      for (int k = 0; k < 60; ++k)
        if (try_node(s)) {
          ++made;
          break;
        }
    }
    if (g_.num_ops() == 0) return std::nullopt;
    choose_outputs();
    try {
      verify(g_);
      if (opt_.train) build_training_graphs(g_);  // the backward graph must exist for --train
    } catch (const std::exception&) { return std::nullopt; }
    return g_;
  }

 private:
  // A small shape: rank 0..4, dims 1..5, at most max_elements / 4 elements.
  Shape random_shape() {
    static const std::vector<int64_t> ranks = {0, 1, 1, 2, 2, 2, 3, 3, 4, 4};
    Shape s(static_cast<size_t>(one_of(rng_, ranks)));
    for (auto& d : s) d = between(rng_, 1, 5);
    return s;
  }

  // A type for a new input next to an operand of type `ref` (or any type when there is none):
  // the proposals that make broadcasting, matmul, conv weights, norm parameters and indices fit.
  TensorType related_type(const TensorType* ref) {
    TensorType t;
    t.dtype = ref && chance(rng_, 0.7) ? ref->dtype : one_of(rng_, kDtypeDraw);
    if (!ref) {
      t.shape = random_shape();
      return t;
    }
    std::vector<int64_t> pool = ref->shape;
    for (int64_t d : {1, 2, 3, 4}) pool.push_back(d);
    switch (between(rng_, 0, 5)) {
      case 0: t.shape = ref->shape; break;
      case 1:  // broadcastable: some dims 1, maybe fewer leading dims
        t.shape = ref->shape;
        for (auto& d : t.shape)
          if (chance(rng_, 0.4)) d = 1;
        if (!t.shape.empty() && chance(rng_, 0.4))
          t.shape.erase(t.shape.begin(), t.shape.begin() + between(rng_, 1, static_cast<int64_t>(t.shape.size())));
        break;
      case 2:  // the last two dims swapped (a matmul partner)
        t.shape = ref->shape;
        if (t.shape.size() >= 2) std::swap(t.shape[t.shape.size() - 1], t.shape[t.shape.size() - 2]);
        if (!t.shape.empty()) t.shape.back() = one_of(rng_, pool);
        break;
      case 3:  // one dim of it (norm parameters, biases)
        t.shape = ref->shape.empty() ? Shape{} : Shape{one_of(rng_, ref->shape)};
        break;
      default: {  // a shape from the operand's dims and small numbers
        int64_t rank = std::clamp<int64_t>(ref->rank() + between(rng_, -1, 1), 0, 4);
        t.shape.resize(static_cast<size_t>(rank));
        for (auto& d : t.shape) d = one_of(rng_, pool);
      }
    }
    return t;
  }

  // Non-contiguous layouts for some inputs: transposed or padded strides.
  void maybe_strided(TensorType& t) {
    if (t.rank() < 2 || !chance(rng_, 0.15)) return;
    if (chance(rng_, 0.5)) {  // column-major in the last two dims
      Shape perm = t.shape;
      std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
      Shape s = contiguous_strides(perm);
      std::swap(s[s.size() - 1], s[s.size() - 2]);
      t.strides = s;
    } else {  // rows padded to twice their length
      Shape s = contiguous_strides(t.shape);
      for (size_t i = 0; i + 1 < s.size(); ++i) s[i] *= 2;
      t.strides = s;
    }
  }

  std::vector<int64_t> int_pool(const TensorType* ref) {
    std::vector<int64_t> pool = {0, 1, 2, 3};
    if (!ref) return pool;
    for (int64_t d = -ref->rank(); d < ref->rank(); ++d) pool.push_back(d);
    for (int64_t d : ref->shape) pool.push_back(d);
    return pool;
  }

  // A list attribute: a permutation of dims, the operand's shape rearranged (reshape, expand), a
  // few dims, a 2-D window, padding pairs, or an [N, C, H, W] size led by the operand's first dim.
  AttrValue propose_ints(const TensorType* ref) {
    const int64_t rank = ref ? ref->rank() : 0;
    std::vector<int64_t> xs;
    switch (between(rng_, 0, 5)) {
      case 0:
        xs.resize(static_cast<size_t>(rank));
        std::iota(xs.begin(), xs.end(), 0);
        std::shuffle(xs.begin(), xs.end(), rng_);
        break;
      case 1:
        if (ref) xs = ref->shape;
        if (xs.size() >= 2 && chance(rng_, 0.4)) {  // merge two neighbours
          size_t i = static_cast<size_t>(between(rng_, 0, static_cast<int64_t>(xs.size()) - 2));
          xs[i] *= xs[i + 1];
          xs.erase(xs.begin() + static_cast<long>(i) + 1);
        }
        if (chance(rng_, 0.3)) xs.insert(xs.begin() + between(rng_, 0, static_cast<int64_t>(xs.size())), 1);
        if (!xs.empty() && chance(rng_, 0.3)) one_of_ref(xs) = -1;
        if (chance(rng_, 0.3)) xs.insert(xs.begin(), between(rng_, 1, 3));  // expand's new leading dim
        break;
      case 2: {
        auto pool = int_pool(ref);
        xs.resize(static_cast<size_t>(between(rng_, 1, std::max<int64_t>(1, rank))));
        for (auto& x : xs) x = rank > 0 && chance(rng_, 0.7) ? between(rng_, -rank, rank - 1) : one_of(rng_, pool);
        break;
      }
      case 3: xs = {between(rng_, 1, 3), between(rng_, 1, 3)}; break;
      case 4: xs = {rank > 0 ? ref->shape[0] : 1, between(rng_, 1, 3), between(rng_, 1, 4), between(rng_, 1, 4)}; break;
      default:
        xs.resize(static_cast<size_t>(2 * between(rng_, 1, std::max<int64_t>(1, std::min<int64_t>(rank, 2)))));
        for (auto& x : xs) x = between(rng_, 0, 2);
    }
    return AttrValue::ints(xs);
  }
  int64_t& one_of_ref(std::vector<int64_t>& xs) { return xs[static_cast<size_t>(rng_() % xs.size())]; }

  AttrValue propose_scalar() {
    static const std::vector<AttrValue> scalars = {AttrValue(0.5),        AttrValue(-1.0),        AttrValue(2.0), AttrValue(int64_t{1}),
                                                   AttrValue(int64_t{0}), AttrValue(int64_t{-3}), AttrValue(1.5), AttrValue(true)};
    return one_of(rng_, scalars);
  }

  std::optional<AttrValue> propose_attr(const AttrSpec& a, const TensorType* ref) {
    const bool required = !a.default_value && !a.optional;
    if (!required && chance(rng_, 0.5)) return std::nullopt;  // the default (or absent)
    switch (a.kind) {
      case AttrKind::int_: {
        const int64_t rank = ref ? ref->rank() : 0;
        if (rank > 0 && chance(rng_, 0.6)) return AttrValue(between(rng_, -rank, rank - 1));
        return AttrValue(one_of(rng_, int_pool(ref)));
      }
      case AttrKind::float_: {
        static const std::vector<double> fs = {1e-5, 1e-3, 0.5, 2.0, -1.0, 0.1};
        return AttrValue(one_of(rng_, fs));
      }
      case AttrKind::bool_: return AttrValue(chance(rng_, 0.5));
      case AttrKind::string: {
        auto it = kStringChoices.find(a.name);
        if (it == kStringChoices.end()) return a.default_value;
        return AttrValue(one_of(rng_, it->second));
      }
      case AttrKind::dtype: return AttrValue(one_of(rng_, kDtypeDraw));
      case AttrKind::ints: return propose_ints(ref);
      case AttrKind::scalar: return propose_scalar();
    }
    return std::nullopt;
  }

  // Proposes one node and keeps it when the op's inference and the verifier accept it.
  bool try_node(const OpSchema& s) {
    std::vector<Proposed> operands;
    const TensorType* ref = nullptr;
    TensorType ref_copy;
    auto existing_values = [&] {
      std::vector<int> ids;
      for (int i = 0; i < g_.size(); ++i) ids.push_back(i);
      return ids;
    };
    for (const ParamSpec& p : s.params) {
      int count = p.kind == ParamKind::variadic_tensor ? static_cast<int>(between(rng_, 1, 3)) : 1;
      if (p.kind == ParamKind::optional_tensor && chance(rng_, 0.4)) break;  // trailing: the rest go too
      for (int k = 0; k < count; ++k) {
        Proposed o;
        const bool first = operands.empty();
        if (p.kind == ParamKind::tensor_or_scalar && !first && chance(rng_, 0.25)) {
          o.kind = Proposed::literal;
          o.literal_value = propose_scalar();
        } else if (g_.size() > 0 && chance(rng_, first ? 0.8 : 0.35)) {
          auto ids = existing_values();
          const Node& n = g_.node(one_of(rng_, ids));
          o.name = n.name;
          o.type = n.type;
        } else {
          o.kind = Proposed::fresh;
          o.type = related_type(ref);
          if (!ref && spatial_rank(s.op) == 3) {  // the 3-D window ops take 5-D operands, which random shapes never are
            o.type.shape.resize(5);
            for (auto& d : o.type.shape) d = between(rng_, 1, 5);
          }
          maybe_strided(o.type);
          if (opt_.train && is_floating(o.type.dtype)) o.type.requires_grad = true;
        }
        if (!ref && o.kind != Proposed::literal) {
          ref_copy = o.type;
          ref = &ref_copy;
        }
        operands.push_back(std::move(o));
      }
    }
    Attrs attrs;
    for (const AttrSpec& a : s.attrs)
      if (auto v = propose_attr(a, ref)) attrs[a.name] = *v;

    Graph g = g_;
    std::vector<Operand> ops;
    int next_input = next_input_;
    for (auto& o : operands) {
      if (o.kind == Proposed::fresh) {
        if (o.type.numel() > opt_.max_elements) return false;
        o.name = fmt::format("x{}", next_input++);
        g.add_input(o.name, o.type);
      }
    }
    for (auto& o : operands) ops.push_back(o.kind == Proposed::literal ? Operand::scalar(o.literal_value) : Operand::of(g.find(o.name)));
    try {
      int id = g.add_node(fmt::format("v{}", next_value_), s.op, ops, attrs);
      verify_node(g, id);
      if (g.node(id).type.numel() > opt_.max_elements) return false;
    } catch (const std::exception&) { return false; }
    ++next_value_;
    next_input_ = next_input;
    g_ = std::move(g);
    return true;
  }

  // Returns every value no node uses (so nothing is dead), and now and then one that is used.
  void choose_outputs() {
    std::vector<bool> used(static_cast<size_t>(g_.size()), false);
    for (auto& n : g_.nodes)
      for (auto& o : n.operands)
        if (o.is_value()) used[static_cast<size_t>(o.value)] = true;
    for (int i = g_.num_inputs(); i < g_.size(); ++i)
      if (!used[static_cast<size_t>(i)] || chance(rng_, 0.1)) g_.outputs.push_back(i);
  }

  Rng rng_;
  const GeneratorOptions& opt_;
  std::vector<Op> ops_;
  Graph g_;
  int next_input_ = 0, next_value_ = 0;
};

// ---- value search

// The value distributions tried, in order: the harness's own inputs, then positive ones (log,
// sqrt, rsqrt, pow, div stay defined), then small ones (exp and f16 stay in range).
enum class ValueDraw { standard, positive, small };
constexpr ValueDraw kValueDraws[] = {ValueDraw::standard, ValueDraw::positive, ValueDraw::small};

std::vector<Tensor> draw_values(const Graph& g, uint64_t seed, ValueDraw how) {
  std::vector<Tensor> xs = generate_inputs(g, seed);  // integers: indices in range, never all zero
  if (how == ValueDraw::standard) return xs;
  Rng r(seed ^ 0x5eed5eedULL);
  for (auto& x : xs)
    if (is_floating(x.dtype()))
      for (int64_t k = 0; k < x.numel(); ++k)
        x.set(k, how == ValueDraw::positive ? uniform(r, 0.5, 2.0) : uniform(r, 0.1, 0.6) * (chance(r, 0.5) ? 1 : -1));
  return xs;
}

double rms(const Tensor& t) {
  double s = 0;
  for (double v : t.to_doubles()) s += v * v;
  return t.numel() ? std::sqrt(s / static_cast<double>(t.numel())) : 0;
}

// Every floating value finite in both precisions, and no kink (relu's zero, a comparison's
// threshold) nearer than a thousandth of its operands' scale without being exactly on it:
// rounding alone could send such a decision either way, which is not a bug.
bool kinks_are_clear(const Graph& g, const std::vector<Tensor>& exact);
bool integers_are_exact(const Graph& g, const std::vector<Tensor>& native);

bool values_are_tame(const Graph& g, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> exact, native;
  try {
    InterpretOptions f64;
    f64.cast_to_f64 = true;
    exact = interpret_all(g, inputs, f64);
    native = interpret_all(g, inputs);
  } catch (const std::exception&) {
    return false;  // the reference refuses these values (an index out of range, ...)
  }
  for (const auto* values : {&exact, &native})
    for (const Tensor& t : *values)
      if (is_floating(t.dtype()))
        for (double v : t.to_doubles())
          if (!std::isfinite(v) || std::fabs(v) > 1e4) return false;
  try {
    return kinks_are_clear(g, exact) && integers_are_exact(g, native);
  } catch (const std::exception&) {
    return false;  // a literal that is no number (a bool compared with a tensor)
  }
}

// Integer arithmetic only where it is exact: an op on integer tensors with an integer result must
// give what the same op gives on the same numbers in float64. Where they differ the integer result
// is one convention among several (0 ** -3, 16 ** 16 wrapped, a fractional pad value truncated):
// PyTorch refuses some, other compilers answer differently, and none of that is a bug to find.
bool integers_are_exact(const Graph& g, const std::vector<Tensor>& native) {
  for (int i = g.num_inputs(); i < g.size(); ++i) {
    const Node& n = g.node(i);
    if (is_floating(n.type.dtype) || n.type.dtype == DType::boolean) continue;
    std::vector<Tensor> as_f64;
    bool integer_operands = true;
    for (const Operand& o : n.operands) {
      if (!o.is_value()) {
        as_f64.emplace_back();  // a literal: run_reference_kernel takes it from the node
        continue;
      }
      const Tensor& t = native[static_cast<size_t>(o.value)];
      integer_operands = integer_operands && !is_floating(t.dtype());
      as_f64.push_back(t.to(DType::f64));
    }
    if (!integer_operands || as_f64.empty()) continue;
    Node real = n;
    real.type.dtype = DType::f64;
    const std::vector<double> want = run_reference_kernel(real, as_f64, /*f64_mode=*/true).to_doubles();
    const std::vector<double> got = native[static_cast<size_t>(i)].to_doubles();
    if (want != got) return false;
  }
  return true;
}

bool kinks_are_clear(const Graph& g, const std::vector<Tensor>& exact) {
  for (int i = g.num_inputs(); i < g.size(); ++i) {
    const Node& n = g.node(i);
    if (!has_kink(n.op)) continue;
    const Tensor& a = exact[static_cast<size_t>(n.operands[0].value)];
    const bool binary = n.operands.size() > 1;
    std::vector<double> av = a.to_doubles(), bv;
    double scale = rms(a);
    if (binary) {
      if (n.operands[1].is_value()) {
        const Tensor& b = exact[static_cast<size_t>(n.operands[1].value)];
        if (b.numel() != a.numel()) continue;  // broadcast pairs: checked by the harness's kink variant
        bv = b.to_doubles();
        scale = std::max(scale, rms(b));
      } else {
        bv.assign(av.size(), n.operands[1].literal.as_float());
      }
    } else {
      bv.assign(av.size(), 0.0);
    }
    for (size_t k = 0; k < av.size(); ++k) {
      const double d = std::fabs(av[k] - bv[k]);
      if (d != 0 && d <= 1e-3 * std::max(scale, 1e-30)) return false;
    }
  }
  return true;
}

}  // namespace

std::set<Op> all_fuzzable_ops() {
  std::set<Op> ops;
  for (const OpSchema& s : op_table()) ops.insert(s.op);
  return ops;
}

std::optional<GeneratedCase> generate_case(uint64_t seed, const GeneratorOptions& options, GenerateOutcome* outcome) {
  auto fail = [&](GenerateOutcome why) -> std::optional<GeneratedCase> {
    if (outcome) *outcome = why;
    return std::nullopt;
  };
  Generator gen(seed, options);
  std::optional<Graph> g = gen.build();
  if (!g) return fail(GenerateOutcome::no_graph);
  GeneratedCase c;
  c.graph = std::move(*g);
  for (ValueDraw how : kValueDraws) {
    ++c.value_tries;
    c.inputs = draw_values(c.graph, seed, how);
    if (values_are_tame(c.graph, c.inputs)) {
      if (outcome) *outcome = GenerateOutcome::ok;
      return c;
    }
  }
  return fail(GenerateOutcome::no_values);
}

}  // namespace reprokit
