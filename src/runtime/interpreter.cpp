// The reference interpreter: walks the graph in order, runs each node's reference kernel in
// double precision and rounds the result to the node's dtype (or keeps f64 in float64 mode).
#include "reprokit/runtime/interpreter.h"

#include <fmt/format.h>

#include "kernel_util.h"
#include "reprokit/ir/errors.h"
#include "reprokit/ir/op_registry.h"

namespace reprokit {

namespace {

DType value_dtype(DType t, bool f64_mode) { return f64_mode && is_floating(t) ? DType::f64 : t; }

// Scalar literals compute in the op's compute type: f32 for f16/bf16/f32 results, as PyTorch's
// CPU kernels do, unless the graph runs in float64.
double literal_value(const AttrValue& lit, DType compute, bool f64_mode) {
  double v = lit.is_bool() ? (lit.as_bool() ? 1.0 : 0.0) : lit.as_float();
  if (!f64_mode && is_floating(compute) && compute != DType::f64) v = static_cast<float>(v);
  return v;
}

}  // namespace

bool has_reference_kernel(std::string_view op) { return kernels::find_kernel(op) != nullptr; }

Tensor run_reference_kernel(const Node& node, const std::vector<Tensor>& operands, bool f64_mode) {
  const kernels::Kernel* k = kernels::find_kernel(node.op);
  if (!k) throw InternalError(fmt::format("no reference kernel for op '{}'", node.op));
  std::vector<kernels::Arg> args;
  args.reserve(operands.size());
  for (auto& t : operands) args.push_back({t.shape(), t.to_doubles()});
  std::vector<double> values = (*k)(node, args, node.type.shape);
  return Tensor::from_doubles(value_dtype(node.type.dtype, f64_mode), node.type.shape, values);
}

std::vector<Tensor> interpret_all(const Graph& g, const std::vector<Tensor>& inputs, const InterpretOptions& opts) {
  int ni = g.num_inputs();
  if (static_cast<int>(inputs.size()) != ni)
    throw UserError(fmt::format("graph {} takes {} inputs, got {}", g.name, ni, inputs.size()));
  std::vector<Tensor> values(static_cast<size_t>(g.size()));
  for (int i = 0; i < ni; ++i) {
    const Node& in = g.node(i);
    const Tensor& t = inputs[static_cast<size_t>(i)];
    if (t.dtype() != in.type.dtype || t.shape() != in.type.shape)
      throw UserError(fmt::format("input %{} of graph {} must be {}, got {}[{}]", in.name, g.name, in.type.str(),
                                  dtype_name(t.dtype()), fmt::join(t.shape(), ", ")));
    values[static_cast<size_t>(i)] = opts.cast_to_f64 && is_floating(t.dtype()) && t.dtype() != DType::f64 ? t.to(DType::f64) : t;
    if (opts.on_value) opts.on_value(i, values[static_cast<size_t>(i)]);
  }
  for (int id = ni; id < g.size(); ++id) {
    const Node& n = g.node(id);
    std::vector<Tensor> ops;
    ops.reserve(n.operands.size());
    for (auto& o : n.operands) {
      if (o.is_value()) {
        ops.push_back(values[static_cast<size_t>(o.value)]);
      } else {
        double v = literal_value(o.literal, n.type.dtype, opts.cast_to_f64);
        ops.push_back(Tensor::from_doubles(DType::f64, {}, {v}));
      }
    }
    values[static_cast<size_t>(id)] = run_reference_kernel(n, ops, opts.cast_to_f64);
    if (opts.on_value) opts.on_value(id, values[static_cast<size_t>(id)]);
  }
  return values;
}

std::vector<Tensor> interpret(const Graph& g, const std::vector<Tensor>& inputs, const InterpretOptions& opts) {
  std::vector<Tensor> all = interpret_all(g, inputs, opts);
  std::vector<Tensor> out;
  for (int o : g.outputs) out.push_back(all[static_cast<size_t>(o)]);
  return out;
}

}  // namespace reprokit
