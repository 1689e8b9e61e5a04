// How a backend whose compiler runs in another process (onnxruntime, inductor) hands it a graph's
// tensors: .npy files in a scratch directory of this run's own, inputs/<input name>.npy in and
// outputs/out<k>.npy back, each checked against the graph's declarations.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "reprokit/ir/graph.h"
#include "reprokit/runtime/tensor.h"
#include "reprokit/support/files.h"

namespace reprokit {

class NpyExchange {
 public:
  // A fresh directory under the system's temporary directory (named after `backend`), with the
  // inputs written; UserError when an input is not what the graph declares.
  NpyExchange(const Graph& g, const std::vector<Tensor>& inputs, std::string_view backend);
  NpyExchange(const NpyExchange&) = delete;
  NpyExchange& operator=(const NpyExchange&) = delete;

  const Dir& dir() const { return scratch_.dir(); }
  std::string inputs_dir() const { return dir().path("inputs"); }
  std::string outputs_dir() const { return dir().path("outputs"); }
  std::string input_file(int i) const;  // inputs/<name of input i>.npy

  // The graph's outputs as the other process wrote them; CompileFailure{runtime_error} naming
  // `compiler` when one's dtype or shape is not the graph's.
  std::vector<Tensor> read_outputs(std::string_view compiler) const;

 private:
  const Graph& g_;
  ScratchDir scratch_;  // removed with this
};

}  // namespace reprokit
