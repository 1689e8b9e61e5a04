// Seeded input generation: random tensors that honour declared strides and give integer inputs
// valid, non-trivial values (embedding and gather indices in range, never all zeros).
#pragma once
#include <optional>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "reprokit/ir/graph.h"
#include "reprokit/runtime/input_files.h"
#include "reprokit/runtime/tensor.h"

namespace reprokit {

// One tensor per graph input. Floats ~ N(0,1) scaled; integer inputs used as indices get values in
// [0, size of the indexed dim); other integers in [-8, 8]; bools ~ Bernoulli(0.5).
std::vector<Tensor> generate_inputs(const Graph& g, uint64_t seed);
// The same, leaving an empty tensor for each input marked in `provided` (whose values the caller
// has, e.g. a model's weights): the other inputs get the same values as above.
std::vector<Tensor> generate_inputs(const Graph& g, uint64_t seed, const std::vector<bool>& provided);

// Another input sample drawn like `inputs` (seeded): floating inputs from a normal distribution
// with each input's own mean and spread (a constant input stays constant); integer inputs uniform
// in each input's own [min, max] (so indices stay in range); bools with each input's own share of
// true. Inputs marked `grad` (a model's weights) are kept: parameters stay, data varies.
std::vector<Tensor> sample_like(const Graph& g, const std::vector<Tensor>& inputs, uint64_t seed);

// Where each input of a run came from (for the CLI's note).
struct InputOrigins {
  std::vector<std::string> from_files;  // "%x <- DIR/x.npy", the path escaped (escape_controls.h)
  std::vector<std::string> random;      // "%y" (drawn from the seed)
  std::string unused;                   // the .npy files of the directory that fit no input, said in a sentence ("" when none), escaped
};

// The inputs of a run of g as the CLI assembles them: `known` values (an ONNX model's weights),
// then the input's file in files.dir (input_file of input_files.h) where files.dir is given and
// holds one, random (seed) for the rest. UserError naming the file when files.dir is not a
// directory, or when a file's dtype or shape differs from the input's. .npy files that fit no
// input (files.specialised went into the graph) are listed in origins->unused: the CLI says so
// rather than leave them silently unread.
std::vector<Tensor> assemble_inputs(const Graph& g, const std::map<std::string, Tensor>& known, uint64_t seed, const GivenInputs& files,
                                    InputOrigins* origins = nullptr);
// The same for a graph without ONNX names: inputs_dir/<input name>.npy (inputs_dir may be empty).
std::vector<Tensor> assemble_inputs(const Graph& g, const std::map<std::string, Tensor>& known, const std::string& inputs_dir, uint64_t seed);

}  // namespace reprokit
