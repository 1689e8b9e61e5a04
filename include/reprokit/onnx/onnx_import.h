// ONNX import: an ONNX model (opsets 7-17 of the ops listed in onnx_supported_ops(); opset 6
// models where their semantics agree) as a reprokit Graph. Model files are untrusted input: every
// problem, and every op, attribute value or dtype the op set cannot express, is a UserError naming
// the file and the ONNX node (index, name, op type) — never a wrong graph.
//
// The graph's inputs are the model's real inputs (model order), then one input per initializer the
// graph uses as a tensor (weights, marked `grad` when floating, except BatchNormalization's running
// statistics; their values are in `values`), then constants that could not
// become a `full` node. Nodes whose inputs are all known constants are evaluated at import time
// (shape arithmetic: Shape, Gather, Concat, ... feeding Reshape targets). Foreign names are mapped
// into the name rule (onnx_names.h).
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "reprokit/ir/graph.h"
#include "reprokit/ir/tensor_type.h"
#include "reprokit/runtime/input_files.h"
#include "reprokit/runtime/tensor.h"

namespace reprokit {

// Where each part of an imported graph came from, for writing a graph cut from it back as nodes of
// the model itself (onnx_original_nodes.h).
struct OnnxOrigins {
  std::map<std::string, int> node_of;             // body node name -> index of the ONNX node whose import made it
  std::map<std::string, std::string> value_node;  // ONNX value name -> the graph's node holding it (where one does)
  std::map<std::string, Tensor> constants;        // ONNX value name -> its value, where known at import time
};

struct ImportedModel {
  Graph graph;
  std::map<std::string, Tensor> values;     // graph input name -> its known value (initializers, constants)
  std::vector<std::string> input_sources;   // per graph input: the ONNX value it stands for
  std::vector<std::string> output_sources;  // per graph output: the ONNX graph output
  int64_t opset = 0;                        // the model's ai.onnx opset
  OnnxOrigins origins;                      // filled with ImportOptions::keep_original_nodes
};

struct ImportOptions {
  // Every body node stays the work of one ONNX node (no pattern of several nodes is folded into
  // one op) and ImportedModel::origins says which.
  bool keep_original_nodes = false;
  // Sizes of dynamic dimensions, by ONNX input name (or its mapped name): the whole shape.
  std::map<std::string, Shape> shapes;
  // Values of real model inputs that the importer may use where an op needs a constant known at
  // import time (a Reshape target, Slice bounds, axes given as inputs). Such an input that is only
  // used that way is dropped from the graph's inputs: the value is specialised into the graph (as
  // Dynamo specialises on such values), and the imported graph and every repro of it hold it.
  std::map<std::string, Tensor> known_inputs;
  // The same for inputs not in known_inputs: the value the user gives for the input and where it
  // is ("in/axes.npy"), or nullopt. The CLI's --inputs DIR answers from DIR's .npy files.
  // `onnx_inputs`: the ONNX names of the model's inputs and initializers, which a file named after
  // one belongs to (input_files.h).
  using OnnxNames = std::set<std::string>;
  std::function<std::optional<std::pair<Tensor, std::string>>(const std::string& onnx_name, const std::string& mapped, const OnnxNames& onnx_inputs)>
      given_value;
  // For an input whose shape the model leaves open (a dynamic dimension, or no shape) and `shapes`
  // does not give: the shape of the values the user gives for it and where they are ("in/x.npy"),
  // or nullopt. The CLI's --inputs DIR answers from DIR's .npy files.
  std::function<std::optional<std::pair<Shape, std::string>>(const std::string& onnx_name, const std::string& mapped, const OnnxNames& onnx_inputs)>
      shape_of_given_values;
};

ImportedModel import_onnx(const std::string& path, const std::map<std::string, Shape>& shapes = {});
ImportedModel import_onnx(const std::string& path, const ImportOptions& options);
// A serialized ModelProto; `where` names it in messages.
ImportedModel import_onnx_bytes(std::string_view bytes, const std::string& where, const ImportOptions& options = {});

// ONNX op types (domain ai.onnx) the importer maps, sorted.
const std::vector<std::string>& onnx_supported_ops();
bool onnx_op_supported(std::string_view op_type);

// "NAME:[d0,d1,...]" of --shape; UserError on anything else (and on a name given twice).
std::pair<std::string, Shape> parse_shape_spec(const std::string& spec);
std::map<std::string, Shape> parse_shape_specs(const std::vector<std::string>& specs);

// Whether the CLI reads `path` as an ONNX model (its extension is .onnx).
bool is_onnx_path(const std::string& path);
// A model file as the CLI reads it: an ONNX model imported (its known input values, the
// initializers, go to `values`), or a .rk module loaded (then `shapes` must be empty).
Module load_model(const std::string& path, const std::map<std::string, Shape>& shapes = {}, std::map<std::string, Tensor>* values = nullptr);
// The same, for `--inputs DIR` (GivenInputs, input_files.h): an ONNX input's open dimensions take
// their sizes from its file in DIR when `shapes` does not give them, and an input whose value an op
// needs at import time (a Reshape target, Slice bounds, axes) is specialised from its file.
// With `origins`, an ONNX model is imported with ImportOptions::keep_original_nodes and its origins go there.
Module load_model(const std::string& path, const std::map<std::string, Shape>& shapes, std::map<std::string, Tensor>* values, GivenInputs& given,
                  OnnxOrigins* origins = nullptr);

}  // namespace reprokit
