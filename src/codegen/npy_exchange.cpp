// The .npy exchange of out-of-process backends (see npy_exchange.h).
#include "npy_exchange.h"

#include <fmt/format.h>

#include "reprokit/codegen/compiled_graph.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/support/errors.h"

namespace reprokit {

NpyExchange::NpyExchange(const Graph& g, const std::vector<Tensor>& inputs, std::string_view backend)
    : g_(g), scratch_(fmt::format("rk_{}_", backend), fmt::format("{} backend", backend)) {
  const int ni = g.num_inputs();
  if (static_cast<int>(inputs.size()) != ni) throw UserError(fmt::format("graph {} takes {} inputs, got {}", g.name, ni, inputs.size()));
  const Dir in = dir().sub("inputs", true);
  dir().sub("outputs", true);
  for (int i = 0; i < ni; ++i) {
    const TensorType& t = g.node(i).type;
    const Tensor& x = inputs[static_cast<size_t>(i)];
    if (x.dtype() != t.dtype || x.shape() != t.shape)
      throw UserError(fmt::format("input %{} of graph {} must be {}", g.node(i).name, g.name, t.str()));
    in.write(g.node(i).name + ".npy", encode_npy(x));
  }
}

std::string NpyExchange::input_file(int i) const { return dir().path("inputs/" + g_.node(i).name + ".npy"); }

std::vector<Tensor> NpyExchange::read_outputs(std::string_view compiler) const {
  std::vector<Tensor> outs;
  for (size_t k = 0; k < g_.outputs.size(); ++k) {
    const TensorType& want = g_.node(g_.outputs[k]).type;
    Tensor t = read_npy_as(dir().path(fmt::format("outputs/out{}.npy", k)), want.dtype);
    if (t.dtype() != want.dtype || t.shape() != want.shape) {
      TensorType got;
      got.dtype = t.dtype();
      got.shape = t.shape();
      throw CompileFailure(FailureKind::runtime_error, fmt::format("{}'s output {} (%{}) is {}, the graph's is {}", compiler, k,
                                                                   g_.node(g_.outputs[k]).name, got.str(), want.str()));
    }
    outs.push_back(std::move(t));
  }
  return outs;
}

}  // namespace reprokit
