// The .npy exchange of out-of-process backends (see npy_exchange.h).
#include "npy_exchange.h"

#include <fmt/format.h>
#include <stdlib.h>

#include "reprokit/codegen/compiled_graph.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/support/errors.h"

namespace reprokit {

namespace fs = std::filesystem;

fs::path NpyExchange::make_dir(std::string_view backend) {
  std::string pattern = (fs::temp_directory_path() / fmt::format("rk_{}_XXXXXX", backend)).string();
  if (!mkdtemp(pattern.data())) throw UserError(fmt::format("{} backend: cannot create a directory under {}", backend, fs::temp_directory_path().string()));
  return pattern;
}

NpyExchange::NpyExchange(const Graph& g, const std::vector<Tensor>& inputs, std::string_view backend)
    : g_(g), path_(make_dir(backend)), dir_(Dir::open(path_.string())) {
  const int ni = g.num_inputs();
  if (static_cast<int>(inputs.size()) != ni) throw UserError(fmt::format("graph {} takes {} inputs, got {}", g.name, ni, inputs.size()));
  const Dir in = dir_.sub("inputs", true);
  dir_.sub("outputs", true);
  for (int i = 0; i < ni; ++i) {
    const TensorType& t = g.node(i).type;
    const Tensor& x = inputs[static_cast<size_t>(i)];
    if (x.dtype() != t.dtype || x.shape() != t.shape) throw UserError(fmt::format("input %{} of graph {} must be {}", g.node(i).name, g.name, t.str()));
    in.write(g.node(i).name + ".npy", encode_npy(x));
  }
}

NpyExchange::~NpyExchange() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string NpyExchange::input_file(int i) const { return dir_.path("inputs/" + g_.node(i).name + ".npy"); }

std::vector<Tensor> NpyExchange::read_outputs(std::string_view compiler) const {
  std::vector<Tensor> outs;
  for (size_t k = 0; k < g_.outputs.size(); ++k) {
    const TensorType& want = g_.node(g_.outputs[k]).type;
    Tensor t = read_npy_as((path_ / "outputs" / fmt::format("out{}.npy", k)).string(), want.dtype);
    if (t.dtype() != want.dtype || t.shape() != want.shape) {
      TensorType got;
      got.dtype = t.dtype();
      got.shape = t.shape();
      throw CompileFailure(FailureKind::runtime_error,
                           fmt::format("{}'s output {} (%{}) is {}, the graph's is {}", compiler, k, g_.node(g_.outputs[k]).name, got.str(), want.str()));
    }
    outs.push_back(std::move(t));
  }
  return outs;
}

}  // namespace reprokit
