// The C++ tensor API and reprokit::compile (the "dynamo" level). Var is a tensor handle: outside
// compile() its ops run eagerly on the reference kernels; inside, they record nodes of a graph.
// Reading a traced value (item()) is a graph break: the graph so far is compiled and run, and
// tracing goes on in a new graph that takes the values it needs as inputs.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "reprokit/codegen/compile_options.h"
#include "reprokit/ir/attr.h"
#include "reprokit/runtime/tensor.h"

namespace reprokit::api {

struct Tracer;
class CompiledFunction;

class Var {
 public:
  Var() = default;
  explicit Var(Tensor value) : value_(std::move(value)) {}
  bool traced() const { return tracer_ != nullptr; }
  // The value; for a traced Var this forces a graph break.
  const Tensor& value() const;

 private:
  friend struct Tracer;
  friend class CompiledFunction;
  friend Var apply(Op op, const std::vector<Var>& tensors, const std::vector<double>& scalars, std::map<std::string, AttrValue> attrs);
  friend double item(const Var& v);
  Tensor value_;
  std::shared_ptr<Tracer> tracer_;
  int segment_ = -1;
  std::string name_;  // the value's name in its segment's graph (ids shift when inputs are lifted)
};

// Applies `op` to tensor operands (then scalar operands, for binary ops with a scalar).
Var apply(Op op, const std::vector<Var>& tensors, const std::vector<double>& scalars = {}, std::map<std::string, AttrValue> attrs = {});

// The op set, as free functions.
Var add(const Var& a, const Var& b);
Var add(const Var& a, double b);
Var sub(const Var& a, const Var& b);
Var mul(const Var& a, const Var& b);
Var mul(const Var& a, double b);
Var div(const Var& a, const Var& b);
Var neg(const Var& x);
Var exp(const Var& x);
Var tanh(const Var& x);
Var relu(const Var& x);
Var sigmoid(const Var& x);
Var silu(const Var& x);
Var gelu(const Var& x, const std::string& approximate = "none");
Var matmul(const Var& a, const Var& b);
Var linear(const Var& x, const Var& w);
Var linear(const Var& x, const Var& w, const Var& b);
Var softmax(const Var& x, int64_t dim);
Var layer_norm(const Var& x, const std::vector<int64_t>& normalized_shape, double eps = 1e-5);
Var reshape(const Var& x, const std::vector<int64_t>& shape);
Var transpose(const Var& x, int64_t dim0, int64_t dim1);
Var sum(const Var& x, const std::vector<int64_t>& dims, bool keepdim = false);
Var amax(const Var& x, const std::vector<int64_t>& dims, bool keepdim = false);
// The single value of a one-element tensor. When traced: a graph break.
double item(const Var& v);

struct CompileSpec {
  CompileOptions compile;  // backend etc. (default cpp)
  size_t cache_limit = 8;  // compiled graphs kept; the least recently used is evicted beyond it
};

struct CompileStats {
  int compiles = 0;    // guard misses: a graph compiled
  int cache_hits = 0;  // a compiled graph reused
  int graph_breaks = 0;
  int evictions = 0;
  std::vector<std::string> graphs;  // each compiled graph, in .rk text (for tests and logs)
};

using Function = std::function<std::vector<Var>(const std::vector<Var>&)>;

// A compiled function: every call traces fn (cheap: ops only record nodes), and runs each graph
// through the harness-wrapped stack (REPRO_* apply), reusing a compiled graph when the guard (the
// inputs' dtype, shape, strides and device, and the graph's structure) matches.
class CompiledFunction {
 public:
  CompiledFunction(Function fn, CompileSpec spec);
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs);
  const CompileStats& stats() const;
  struct State;  // the cache and counters, shared by copies of this object

 private:
  std::shared_ptr<State> state_;
};

CompiledFunction compile(Function fn, CompileSpec spec = {});

}  // namespace reprokit::api
