// Internal to rk_onnx: the importer's state and the context each ONNX op handler works through.
#pragma once
#include <onnx/onnx_pb.h>

#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "reprokit/ir/builder.h"
#include "reprokit/onnx/onnx_import.h"
#include "reprokit/onnx/onnx_names.h"

namespace reprokit::onnx_detail {

// Results of import-time evaluation larger than this (in elements, all of its nodes together)
// stay in the graph instead.
constexpr int64_t kFoldLimit = int64_t{1} << 20;

enum class Kind { computed, real_input, initializer, constant };

// An ONNX value during import: a node of the main graph, a constant known at import time, or both.
struct Value {
  Kind kind = Kind::computed;
  TensorType type;
  std::optional<Tensor> constant;
  std::string rk;        // the main graph's node holding it; empty until a constant is materialized
  std::string alias_of;  // an Identity of an initializer: materializes as that initializer's input
};

// A graph being built, with its nodes by name. Node ids never shift: real inputs are added before
// any other node, and a constant that is to become an input holding a value is a placeholder
// (a `full` node of its type) until hoisted() makes it an input.
class Target {
 public:
  explicit Target(NameSet& names) : names_(names) {}
  Graph g;
  std::map<std::string, Tensor> placeholder_values;  // placeholder name -> the input's value
  std::vector<std::string> placeholders;             // in creation order

  NameSet& names() { return names_; }
  int id(const std::string& name) const;
  int add_input(const std::string& name, const TensorType& t);  // before any other node
  int add_placeholder(const std::string& name, const Tensor& value);
  int add_node(const std::string& name, Op op, std::vector<Operand> operands, Attrs attrs);
  void rename(int id, const std::string& name);
  bool is_placeholder(int id) const { return placeholder_values.count(g.node(id).name) > 0; }
  // The graph with `inputs` (ids of inputs and placeholders, in order) as its inputs, then every
  // other node except inputs and placeholders not listed (they must be unused). Verified.
  Graph hoisted(const std::vector<int>& inputs) const;

 private:
  NameSet& names_;
  std::unordered_map<std::string, int> ids_;
};

class NodeCtx;
using Handler = void (*)(NodeCtx&);
const std::map<std::string, Handler, std::less<>>& handlers();
// Conv, pooling, BatchNormalization, InstanceNormalization and Pad (onnx_ops_conv.cpp), merged into handlers().
const std::map<std::string, Handler, std::less<>>& conv_handlers();
// LSTM, GRU and RNN, unrolled over the sequence (onnx_ops_recurrent.cpp), merged into handlers().
const std::map<std::string, Handler, std::less<>>& recurrent_handlers();
// Mod and ScatterND, evaluated at import time only (onnx_ops_folded.cpp), merged into handlers().
const std::map<std::string, Handler, std::less<>>& folded_handlers();
// Resize and Upsample (nearest, linear) as gathers at source indices (onnx_ops_resize.cpp).
const std::map<std::string, Handler, std::less<>>& resize_handlers();
// GridSample in 2-D (onnx_ops_sample.cpp).
const std::map<std::string, Handler, std::less<>>& sample_handlers();
// Loop and Scan (unrolled) and If (its branch) when decided at import (onnx_ops_control.cpp).
const std::map<std::string, Handler, std::less<>>& control_handlers();
// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear and Round (onnx_ops_quantize.cpp).
const std::map<std::string, Handler, std::less<>>& quantize_handlers();

class Importer {
 public:
  Importer(onnx::ModelProto& model, std::string file, const ImportOptions& opts);
  ImportedModel run();

  onnx::ModelProto& model;
  const std::string file;
  const ImportOptions& opts;
  int64_t opset = 0;
  NameSet names;
  ForeignNames foreign{names};
  Target main{names};
  std::unordered_map<std::string, Value> values;
  std::set<std::string> frozen;                               // real inputs (ONNX names) used as import-time constants
  std::map<std::string, Tensor> frozen_values;                // ... and the values they were given
  std::set<std::string> onnx_inputs;                          // the model's inputs and initializers (ONNX names), for ImportOptions' callbacks
  std::unordered_map<std::string, onnx::TypeProto> inferred;  // ONNX's inferred value types

  Value& value(const std::string& onnx_name);     // InternalError when undefined (checked before)
  int materialize(const std::string& onnx_name);  // its id in the main graph
  // A new constant of the main graph (full when uniform, else an input with a saved value).
  int add_constant(const std::string& name, const Tensor& t);
  std::vector<std::string> initializer_inputs;  // placeholders of initializers, in creation order
  // Imports one node (of the model, or of a Loop or If body with its values renamed).
  void import_node(const onnx::NodeProto& n, int index);

 private:
  void refuse_external_data();  // before anything reads the model's tensors
  void bind_inputs();
  void check_against_inferred(const onnx::NodeProto& n, int index, int k, const TensorType& t);
  ImportedModel finish();

  std::vector<std::string> real_inputs_, initializers_;  // ONNX names, model order
  std::map<std::string, std::string> constant_sources_;  // rk name of a materialized constant -> ONNX name
  std::set<std::string> statistics_;                     // BatchNormalization's mean and var inputs
  std::map<std::string, int> node_of_;                   // body node name -> the model's node that made it
  void note_origins(int node_index, size_t first_new_node);
};

std::string node_label(const onnx::NodeProto& n, int index);

// ONNX's checker and shape inference on `model`, in a reprokit child (onnx_checker.h): the inferred
// types by value name. UserError naming `file` when the checker refuses the model, shape inference
// fails, or the child crashes, runs out of time or memory, or cannot be started.
std::unordered_map<std::string, onnx::TypeProto> check_and_infer_in_child(const onnx::ModelProto& model, const std::string& file);

// What a handler sees: the node's inputs as values, constants or literals, its attributes, and a
// target graph (the main graph, or a scratch graph that is evaluated at import time).
class NodeCtx {
 public:
  NodeCtx(Importer& imp, Target& t, const onnx::NodeProto& n, int index, bool folding);

  Importer& imp;
  Target& t;
  const onnx::NodeProto& n;
  const int index;
  const bool folding;

  int64_t opset() const { return imp.opset; }
  std::string label() const { return node_label(n, index); }
  [[noreturn]] void unsupported(const std::string& what) const;  // the op set cannot express it
  [[noreturn]] void bad(const std::string& what) const;          // the model is invalid

  // ---- inputs
  int num_inputs() const { return n.input_size(); }
  bool has(int i) const { return i < n.input_size() && !n.input(i).empty(); }
  const Value& in(int i) const;  // bad() when absent
  const TensorType& type(int i) const { return in(i).type; }
  DType dtype(int i) const { return type(i).dtype; }
  const Shape& shape(int i) const { return type(i).shape; }
  int64_t rank(int i) const { return type(i).rank(); }
  const Tensor* constant(int i) const;
  // The input's value at import time: a constant, or a real input given in known_inputs.
  Tensor need_constant(int i, std::string_view what);
  std::vector<int64_t> need_ints(int i, std::string_view what);    // an integer tensor of rank <= 1
  int value(int i);                                                // the input as a node of t
  std::vector<Operand> pointwise(const std::vector<int>& inputs);  // literals where it is safe
  int const_value(const Tensor& t);                                // a new constant node of t

  // ---- building
  int emit(Op op, std::vector<Operand> operands, Attrs attrs = {});
  int emit1(Op op, int x, Attrs attrs = {}) { return emit(op, {Operand::of(x)}, std::move(attrs)); }
  const TensorType& type_of(int id) const { return t.g.node(id).type; }
  int cast(int id, DType dtype);
  int reshape(int id, const Shape& shape);

  // ---- outputs
  bool wants(int k) const { return k < n.output_size() && !n.output(k).empty(); }
  void set(int k, int id);
  void set_const(int k, Tensor value);
  void pass(int k, int i);  // output k is input i

  // ---- attributes
  const onnx::AttributeProto* attr(std::string_view name) const;
  int64_t attr_int(std::string_view name, int64_t def) const;
  double attr_float(std::string_view name, double def) const;
  std::string attr_string(std::string_view name, const std::string& def) const;
  std::optional<std::vector<int64_t>> attr_ints(std::string_view name) const;
  // unsupported() for any attribute not named here.
  void allow(std::initializer_list<std::string_view> names) const;

  std::vector<std::optional<int>> out_ids;
  std::vector<std::optional<Tensor>> out_consts;
  std::vector<std::string> out_alias;  // ONNX value an output is the same constant as

 private:
  std::set<std::string> created_;
  std::map<std::string, std::string> scratch_names_;  // folding: ONNX input -> scratch input name
  std::string base_;
};

}  // namespace reprokit::onnx_detail
