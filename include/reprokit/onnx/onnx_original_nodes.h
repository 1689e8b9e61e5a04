// An ONNX model's own nodes as the unit of a reduction. The importer maps one ONNX node onto
// several reprokit ops where the op set has no single op for it (HardSigmoid is a mul, an add and a
// clamp); a candidate cut from the imported graph is written back here as the subset of the
// model's original nodes it still holds — op type, domain, attributes, opset and names as they
// were — with the values it cuts at fed in as inputs. A check keyed to an op's own kernel, or to a
// fusion that matches the original pattern, sees the model's nodes, never reprokit's reading of them.
//
// A candidate is writable when every ONNX node it holds is whole: what one node's ops hand to
// another node, to the outputs or to a cut is a value of the model (the node's output), never a
// value inside one node's decomposition.
#pragma once
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "reprokit/ir/graph.h"
#include "reprokit/onnx/onnx_import.h"
#include "reprokit/runtime/tensor.h"

namespace reprokit {

// How a candidate's nodes are written. By default every node of the model a value passes through
// is written; a finished repro may be tried in a plainer form (constants_fold_away in reduce).
struct OnnxNodesForm {
  bool constants_as_initializers = false;  // a value known at import time as an initializer, not the nodes computing it
  bool without_noops = false;              // nodes that compute nothing (Identity, a zero Pad, Dropout) left out
  bool operator==(const OnnxNodesForm&) const = default;
};

class OriginalOnnxModel {
 public:
  // `model_bytes`: the serialized model `imported` was imported from with keep_original_nodes;
  // `origins`: what that import recorded.
  OriginalOnnxModel(const std::string& model_bytes, const Graph& imported, OnnxOrigins origins, const std::string& where);
  ~OriginalOnnxModel();
  OriginalOnnxModel(const OriginalOnnxModel&) = delete;
  OriginalOnnxModel& operator=(const OriginalOnnxModel&) = delete;

  // The ONNX node whose import made body node `name`, or -1 (an input, a constant, an output's copy).
  int node_of(const std::string& name) const;
  // Whether body node `name` holds an output value of its ONNX node (another node may use it).
  bool holds_a_model_value(const std::string& name) const;
  // Why `g` (cut from the imported graph, its node names kept) cannot be written as original
  // nodes, or nullopt when it can.
  std::optional<std::string> why_not_writable(const Graph& g) const;

  struct Written {
    std::string model;               // the serialized ModelProto
    std::vector<int> fed_inputs;     // ids of g's inputs the model takes as graph inputs
    std::vector<int> weight_inputs;  // ids of g's inputs written as initializers
  };
  // `g` as original nodes: inputs named in `weights` become initializers holding `inputs`' values,
  // the others graph inputs named as g names them. UserError (why_not_writable) when it cannot.
  // A value known at import time (a Constant's, a shape computation's) is written as the nodes
  // that compute it, and nodes that compute nothing stay, unless `form` says otherwise.
  Written write(const Graph& g, const std::vector<Tensor>& inputs, const std::set<std::string>& weights, OnnxNodesForm form = {}) const;
  // The ONNX nodes a message names (a compiler's error: "node with name '/layer1/Conv'",
  // "(node:'/Mul/QuickGeluFusion/' ...)"), by node name or output name, quoted or bracketed as
  // compilers print them, in the order the message names them. A name followed by '/' counts: a
  // compiler names the nodes it fuses after the node it started from.
  std::vector<int> nodes_named_in(const std::string& message) const;
  // "node 12 '/layer1/Conv' (Conv)": ONNX node `index` as messages name it.
  std::string describe_node(int index) const;
  // The ONNX op type of each node written for g, in the model's order.
  std::vector<std::string> op_types(const Graph& g, OnnxNodesForm form = {}) const;

  struct Model;  // defined where it is used: onnx_original_nodes.cpp

 private:
  std::unique_ptr<Model> m_;
};

}  // namespace reprokit
