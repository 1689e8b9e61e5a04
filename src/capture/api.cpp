// The C++ tensor API and reprokit::compile (see reprokit/capture/api.h).
#include "reprokit/capture/api.h"

#include <fmt/core.h>
#include <unistd.h>

#include <cstdio>

#include <list>

#include "reprokit/codegen/compiler.h"
#include "reprokit/harness/harness.h"
#include "reprokit/support/files.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/runtime/interpreter.h"

namespace reprokit::api {

namespace {

// A traced program's hang, once the harness has recorded it, ends the program as it ends
// `reprokit run`: the hung graph cannot return to the program.
[[noreturn]] void end_hung_program() {
  reprokit::remove_scratch_dirs_in_use();  // the hung stage never unwinds to remove its own
  std::fflush(nullptr);
  _exit(kTimeoutExitStatus);
}

}  // namespace

struct CompiledFunction::State {
  Function fn;
  CompileSpec spec;
  CompileStats stats;
  std::list<std::pair<std::string, std::shared_ptr<CompiledGraph>>> cache;  // most recent first
  bool warned_evict = false;

  // Runs one traced graph: through the harness when REPRO_AFTER is set, else through the cache.
  std::vector<Tensor> run_graph(const Graph& g, const std::vector<Tensor>& inputs) {
    std::string key = print_graph(g);  // input types (dtype, shape, strides, device) are the guard
    auto it = std::find_if(cache.begin(), cache.end(), [&](auto& e) { return e.first == key; });
    std::shared_ptr<CompiledGraph> compiled;
    if (it != cache.end()) {
      ++stats.cache_hits;
      compiled = it->second;
      cache.splice(cache.begin(), cache, it);
    } else {
      ++stats.compiles;
      stats.graphs.push_back(key);
    }
    HarnessConfig cfg = HarnessConfig::from_env();
    if (cfg.enabled()) {
      if (!hang_end()) set_hang_end(&end_hung_program);  // the program did not choose its own
      StackOptions so;
      so.compile = spec.compile;
      return run_stack(g, inputs, so, cfg).outputs;
    }
    if (!compiled) {
      compiled = std::shared_ptr<CompiledGraph>(compile_graph(g, spec.compile));
      cache.emplace_front(key, compiled);
      if (cache.size() > spec.cache_limit) {
        cache.pop_back();
        ++stats.evictions;
        if (!warned_evict)
          fmt::print(stderr,
                     "reprokit: compile cache limit ({}) reached; evicting the least recently used graph "
                     "(inputs with many different shapes recompile)\n",
                     spec.cache_limit);
        warned_evict = true;
      }
    }
    try {
      return compiled->run(inputs);
    } catch (const CompileFailure& e) { throw StackFailure(failure_from(e.kind, e.what()), ""); }
  }
};

struct Tracer {
  CompiledFunction::State* owner;
  int segment = 0;
  Graph graph;
  std::vector<Tensor> inputs;
  std::map<std::pair<int, std::string>, Tensor> done;  // values of earlier segments
  int counter = 0;

  std::string fresh(const char* prefix) { return fmt::format("{}{}", prefix, counter++); }

  // The id in the current graph of v, lifting eager values and earlier segments' values to inputs.
  int operand(const Var& v) {
    if (v.traced() && v.segment_ == segment) return graph.find(v.name_);
    Tensor value = v.traced() ? done.at({v.segment_, v.name_}) : v.value_;
    std::string name = fresh("c");
    TensorType t;
    t.dtype = value.dtype();
    t.shape = value.shape();
    graph.add_input(name, t);
    inputs.push_back(value.contiguous());
    return graph.find(name);
  }

  // Compiles and runs the segment so far, keeping every value, and starts a new segment.
  void graph_break() {
    ++owner->stats.graph_breaks;
    std::vector<int> all;
    for (int i = graph.num_inputs(); i < graph.size(); ++i) all.push_back(i);
    if (!all.empty()) {
      Graph g = graph;
      g.outputs = all;
      auto values = owner->run_graph(g, inputs);
      for (size_t k = 0; k < all.size(); ++k) done[{segment, graph.node(all[k]).name}] = values[k];
    }
    for (int i = 0; i < graph.num_inputs(); ++i) done[{segment, graph.node(i).name}] = inputs[static_cast<size_t>(i)];
    ++segment;
    graph = Graph();
    graph.name = fmt::format("compiled_{}", segment);
    inputs.clear();
  }
};

namespace {
thread_local std::shared_ptr<Tracer> current_tracer;
}

const Tensor& Var::value() const {
  if (!tracer_) return value_;
  if (tracer_->segment == segment_) tracer_->graph_break();
  return tracer_->done.at({segment_, name_});
}

Var apply(Op op, const std::vector<Var>& tensors, const std::vector<double>& scalars, std::map<std::string, AttrValue> attrs) {
  std::shared_ptr<Tracer> tr;
  for (auto& v : tensors)
    if (v.traced()) tr = v.tracer_;
  Attrs a(attrs.begin(), attrs.end());
  if (tr) {
    std::vector<Operand> ops;
    for (auto& v : tensors) ops.push_back(Operand::of(tr->operand(v)));
    for (double s : scalars) ops.push_back(Operand::scalar(AttrValue(s)));
    std::string name = tr->fresh("v");
    tr->graph.add_node(name, op, ops, a);
    Var out;
    out.tracer_ = tr;
    out.segment_ = tr->segment;
    out.name_ = name;
    return out;
  }
  // Eager: a one-node graph on the reference interpreter.
  Graph g;
  g.name = std::string(op_name(op));
  std::vector<Operand> ops;
  std::vector<Tensor> values;
  for (size_t i = 0; i < tensors.size(); ++i) {
    values.push_back(tensors[i].value_.contiguous());
    TensorType t;
    t.dtype = values.back().dtype();
    t.shape = values.back().shape();
    ops.push_back(Operand::of(g.add_input(fmt::format("x{}", i), t)));
  }
  for (double s : scalars) ops.push_back(Operand::scalar(AttrValue(s)));
  g.outputs.push_back(g.add_node("y", op, ops, a));
  return Var(interpret(g, values).at(0));
}

Var add(const Var& a, const Var& b) { return apply(Op::add, {a, b}); }
Var add(const Var& a, double b) { return apply(Op::add, {a}, {b}); }
Var sub(const Var& a, const Var& b) { return apply(Op::sub, {a, b}); }
Var mul(const Var& a, const Var& b) { return apply(Op::mul, {a, b}); }
Var mul(const Var& a, double b) { return apply(Op::mul, {a}, {b}); }
Var div(const Var& a, const Var& b) { return apply(Op::div, {a, b}); }
Var neg(const Var& x) { return apply(Op::neg, {x}); }
Var exp(const Var& x) { return apply(Op::exp, {x}); }
Var tanh(const Var& x) { return apply(Op::tanh, {x}); }
Var relu(const Var& x) { return apply(Op::relu, {x}); }
Var sigmoid(const Var& x) { return apply(Op::sigmoid, {x}); }
Var silu(const Var& x) { return apply(Op::silu, {x}); }
Var gelu(const Var& x, const std::string& approximate) { return apply(Op::gelu, {x}, {}, {{"approximate", AttrValue(approximate)}}); }
Var matmul(const Var& a, const Var& b) { return apply(Op::matmul, {a, b}); }
Var linear(const Var& x, const Var& w) { return apply(Op::linear, {x, w}); }
Var linear(const Var& x, const Var& w, const Var& b) { return apply(Op::linear, {x, w, b}); }
Var softmax(const Var& x, int64_t dim) { return apply(Op::softmax, {x}, {}, {{"dim", AttrValue(dim)}}); }
Var layer_norm(const Var& x, const std::vector<int64_t>& ns, double eps) {
  return apply(Op::layer_norm, {x}, {}, {{"normalized_shape", AttrValue::ints(ns)}, {"eps", AttrValue(eps)}});
}
Var reshape(const Var& x, const std::vector<int64_t>& shape) { return apply(Op::reshape, {x}, {}, {{"shape", AttrValue::ints(shape)}}); }
Var transpose(const Var& x, int64_t d0, int64_t d1) { return apply(Op::transpose, {x}, {}, {{"dim0", AttrValue(d0)}, {"dim1", AttrValue(d1)}}); }
Var sum(const Var& x, const std::vector<int64_t>& dims, bool keepdim) {
  return apply(Op::sum, {x}, {}, {{"dims", AttrValue::ints(dims)}, {"keepdim", AttrValue(keepdim)}});
}
Var amax(const Var& x, const std::vector<int64_t>& dims, bool keepdim) {
  return apply(Op::amax, {x}, {}, {{"dims", AttrValue::ints(dims)}, {"keepdim", AttrValue(keepdim)}});
}

double item(const Var& v) {
  const Tensor& t = v.value();
  if (t.numel() != 1) throw UserError(fmt::format("item() needs a one-element tensor, got {} elements", t.numel()));
  return t.get(0);
}

CompiledFunction::CompiledFunction(Function fn, CompileSpec spec) : state_(std::make_shared<State>()) {
  state_->fn = std::move(fn);
  state_->spec = std::move(spec);
  add_injections_from_env(state_->spec.compile);  // REPRO_INJECT works for C++ programs too
}

const CompileStats& CompiledFunction::stats() const { return state_->stats; }

std::vector<Tensor> CompiledFunction::operator()(const std::vector<Tensor>& in) {
  auto tr = std::make_shared<Tracer>();
  tr->owner = state_.get();
  tr->graph.name = "compiled_0";
  std::vector<Var> vars;
  for (size_t i = 0; i < in.size(); ++i) {
    std::string name = fmt::format("in{}", i);
    TensorType t;
    t.dtype = in[i].dtype();
    t.shape = in[i].shape();
    if (!in[i].is_contiguous()) t.strides = in[i].strides();  // layout is part of the guard
    tr->graph.add_input(name, t);
    tr->inputs.push_back(in[i]);
    Var v;
    v.tracer_ = tr;
    v.segment_ = 0;
    v.name_ = name;
    vars.push_back(v);
  }
  std::vector<Var> outs = state_->fn(vars);
  // The last segment returns the traced outputs that live in it.
  std::vector<int> ids;
  for (auto& o : outs)
    if (o.traced() && o.segment_ == tr->segment && !tr->graph.node(tr->graph.find(o.name_)).is_input()) ids.push_back(tr->graph.find(o.name_));
  std::map<std::string, Tensor> last;
  if (!ids.empty()) {
    Graph g = tr->graph;
    g.outputs = ids;
    auto values = state_->run_graph(g, tr->inputs);
    for (size_t k = 0; k < ids.size(); ++k) last[g.node(ids[k]).name] = values[k];
  }
  std::vector<Tensor> result;
  for (auto& o : outs) {
    if (!o.traced()) result.push_back(o.value());
    else if (o.segment_ == tr->segment && last.count(o.name_)) result.push_back(last.at(o.name_));
    else if (o.segment_ == tr->segment) result.push_back(tr->inputs.at(static_cast<size_t>(tr->graph.find(o.name_))));
    else result.push_back(tr->done.at({o.segment_, o.name_}));
  }
  return result;
}

CompiledFunction compile(Function fn, CompileSpec spec) { return CompiledFunction(std::move(fn), std::move(spec)); }

}  // namespace reprokit::api
