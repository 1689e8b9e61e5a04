// Writing a candidate cut from an imported ONNX model back as the model's own nodes (see
// onnx_original_nodes.h). The plan: the nodes whose ops the candidate holds; their inputs read
// from what those ops consume in the candidate (a bypass rewires them); a value no written node
// makes comes from a node that has no ops of its own (Identity, Constant, a shape computation
// folded at import) when its inputs are there, else from a cut (a graph input) or, where the
// value was known at import time, an initializer holding it.
#include "reprokit/onnx/onnx_original_nodes.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>

#include "proto_util.h"
#include "reprokit/ir/names.h"
#include "reprokit/onnx/onnx_tensor.h"
#include "reprokit/support/errors.h"

namespace reprokit {

struct OriginalOnnxModel::Model {
  onnx::ModelProto proto;
  OnnxOrigins origins;
  std::map<std::string, int> producer;          // ONNX value -> the node that outputs it
  std::map<std::string, std::string> value_of;  // graph node name -> the ONNX value it holds (a node's output first)
  std::set<std::string> computed;               // body nodes of the imported graph
  std::set<int> nodes_with_ops;                 // ONNX nodes that made at least one body node
  // A body node as imported: its attributes, its operands, and each operand's node name ("" for a literal).
  struct Imported {
    Attrs attrs;
    std::vector<Operand> operands;
    std::vector<std::string> operand_names;
  };
  std::map<std::string, Imported> as_imported;  // body node name -> it as imported
  std::map<std::string, Shape> shape_of;        // every node of the imported graph -> its shape

  std::string label(int i) const {
    if (i < 0 || i >= proto.graph().node_size()) return "ops of reprokit's own (of no node of the model)";
    const auto& n = proto.graph().node(i);
    return n.name().empty() ? fmt::format("node {} ({})", i, printable(n.op_type()))
                            : fmt::format("node {} '{}' ({})", i, printable(n.name()), printable(n.op_type()));
  }
  int node_of(const std::string& name) const {
    auto it = origins.node_of.find(name);
    return it == origins.node_of.end() ? -1 : it->second;
  }
};

namespace {

struct Plan {
  std::set<int> nodes;                                          // the model's nodes to write
  std::map<int, std::map<std::string, std::string>> inputs_of;  // node -> its ONNX input -> the name it reads in the written model
  std::map<std::string, int> fed;                               // written name -> g's input id
  std::map<std::string, Tensor> constants;                      // written name -> value known at import
  std::vector<std::pair<std::string, int>> outputs;             // written name, g's node id (for its type)
};

void set_value_info(onnx::ValueInfoProto* vi, const std::string& name, const TensorType& t) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx_elem_type(t.dtype));
  auto* s = tt->mutable_shape();
  for (int64_t d : t.shape) s->add_dim()->set_dim_value(d);
}

// ONNX ops whose attributes never name a size of their inputs: they take smaller shapes as they are.
const std::set<std::string> kNamesNoSize = {"Abs",
                                            "Acos",
                                            "Add",
                                            "And",
                                            "Asin",
                                            "Atan",
                                            "BatchNormalization",
                                            "Cast",
                                            "Ceil",
                                            "Celu",
                                            "Clip",
                                            "Cos",
                                            "Div",
                                            "Elu",
                                            "Equal",
                                            "Erf",
                                            "Exp",
                                            "Floor",
                                            "Gemm",
                                            "Greater",
                                            "GreaterOrEqual",
                                            "HardSigmoid",
                                            "HardSwish",
                                            "Identity",
                                            "IsInf",
                                            "IsNaN",
                                            "LeakyRelu",
                                            "Less",
                                            "LessOrEqual",
                                            "Log",
                                            "LogSoftmax",
                                            "MatMul",
                                            "Max",
                                            "Mean",
                                            "Min",
                                            "Mod",
                                            "Mul",
                                            "Neg",
                                            "Not",
                                            "Or",
                                            "Pow",
                                            "PRelu",
                                            "Reciprocal",
                                            "Relu",
                                            "Round",
                                            "Selu",
                                            "Sigmoid",
                                            "Sign",
                                            "Sin",
                                            "Softmax",
                                            "Softplus",
                                            "Softsign",
                                            "Sqrt",
                                            "Sub",
                                            "Sum",
                                            "Tan",
                                            "Tanh",
                                            "ThresholdedRelu",
                                            "Where",
                                            "Xor",
                                            "Dropout",
                                            "GlobalAveragePool",
                                            "GlobalMaxPool"};

class Planner {
 public:
  Planner(const OriginalOnnxModel::Model& m, const Graph& g, OnnxNodesForm form) : m_(m), g_(g), form_(form) {
    for (int i = 0; i < g.size(); ++i) id_.emplace(g.node(i).name, i);
  }

  Plan run() {
    check_whole();
    for (int i = g_.num_inputs(); i < g_.size(); ++i)
      if (int o = m_.node_of(g_.node(i).name); o >= 0) p_.nodes.insert(o);
    const std::set<int> with_ops = p_.nodes;
    refuse_subgraphs();
    for (int o : with_ops) wire(o);
    refuse_subgraphs();  // of the nodes without ops the values needed
    refuse_sizes_named_by_nodes();
    for (int o : g_.outputs) {
      std::string name = written_name(o, "an output");
      if (std::none_of(p_.outputs.begin(), p_.outputs.end(), [&](const auto& e) { return e.first == name; })) p_.outputs.emplace_back(name, o);
    }
    check_names();
    return p_;
  }

 private:
  [[noreturn]] void refuse(const std::string& why) const { throw UserError("not writable as the model's own nodes: " + why); }

  // A subgraph (If, Loop, Scan) may read values of the outer graph by name: what it reads is not
  // followed, so such a node is not written.
  void refuse_subgraphs() const {
    for (int o : p_.nodes)
      for (const auto& a : m_.proto.graph().node(o).attribute())
        if (a.has_g() || a.graphs_size() > 0) refuse(fmt::format("{} holds a subgraph", m_.label(o)));
  }

  // Smaller input shapes reach every node; reprokit's ops check them, but a node of the model may
  // name a size in an attribute reprokit's reading has no use for (a Conv's kernel_shape): with
  // smaller shapes, only nodes that name no size are written.
  void refuse_sizes_named_by_nodes() const {
    bool smaller = false;
    for (int i = 0; i < g_.num_inputs(); ++i) {
      auto was = m_.shape_of.find(g_.node(i).name);
      smaller |= was != m_.shape_of.end() && was->second != g_.node(i).type.shape;
    }
    if (!smaller) return;
    for (int o : p_.nodes) {
      const auto& n = m_.proto.graph().node(o);
      if (!n.domain().empty() && n.domain() != "ai.onnx") refuse(fmt::format("smaller shapes reach {}", m_.label(o)));
      if (!kNamesNoSize.count(n.op_type())) refuse(fmt::format("smaller shapes reach {}, whose attributes may name sizes", m_.label(o)));
    }
  }

  bool is_input(const std::string& name) const {
    auto it = id_.find(name);
    return it != id_.end() && g_.node(it->second).is_input();
  }
  bool holds_value(const std::string& name) const { return m_.value_of.count(name) > 0; }

  // Every value that passes between ONNX nodes (or to the outputs, or from a cut) is a value of the model.
  void check_whole() const {
    for (int i = g_.num_inputs(); i < g_.size(); ++i) {
      const Node& n = g_.node(i);
      const int o = m_.node_of(n.name);
      // Smaller shapes are fine where no node says a size (pointwise ops, a matmul); an op whose
      // attributes or literals changed (a reshape's target) is no longer what its node says.
      if (auto was = m_.as_imported.find(n.name); was != m_.as_imported.end()) {
        bool same = was->second.attrs == n.attrs && was->second.operands.size() == n.operands.size();
        for (size_t k = 0; same && k < n.operands.size(); ++k)
          if (!n.operands[k].is_value()) same = n.operands[k] == was->second.operands[k];
        if (!same) refuse(fmt::format("%{} of {} no longer has the attributes that node gives it", n.name, o >= 0 ? m_.label(o) : "the model"));
      }
      for (const auto& op : n.operands) {
        if (!op.is_value()) continue;
        const Node& u = g_.node(op.value);
        const int uo = m_.node_of(u.name);
        if (u.is_input() && m_.computed.count(u.name)) {
          if (!holds_value(u.name)) refuse(fmt::format("the cut at %{} lies inside {}", u.name, m_.label(uo)));
          auto p = m_.producer.find(m_.value_of.at(u.name));
          if (o >= 0 && (uo == o || (p != m_.producer.end() && p->second == o)))
            refuse(fmt::format("the cut at %{} feeds {} its own output", u.name, m_.label(o)));
        } else if (!u.is_input() && uo >= 0 && uo != o && !holds_value(u.name)) {
          refuse(fmt::format("%{} inside {} is used outside it", u.name, m_.label(uo)));
        }
      }
    }
    for (int o : g_.outputs) {
      const Node& n = g_.node(o);
      const int no = m_.node_of(n.name);
      if (!n.is_input() && no >= 0 && !holds_value(n.name)) refuse(fmt::format("%{} inside {} is returned", n.name, m_.label(no)));
    }
    // A cut at one output of a node the candidate holds would define that output twice.
    for (int i = 0; i < g_.num_inputs(); ++i) {
      const std::string& name = g_.node(i).name;
      if (!m_.computed.count(name) || !holds_value(name)) continue;
      auto p = m_.producer.find(m_.value_of.at(name));
      if (p == m_.producer.end()) continue;
      for (int j = g_.num_inputs(); j < g_.size(); ++j)
        if (m_.node_of(g_.node(j).name) == p->second)
          refuse(fmt::format("the cut at %{} is an output of {}, which stays", name, m_.label(p->second)));
    }
  }

  // Node o's inputs: what its ops consume in the candidate, where they consumed the input's value
  // when imported (a bypass leaves another value there); else the input's own value.
  void wire(int o) {
    std::map<std::string, std::string> now_reads;  // graph node name when imported -> graph node name now
    for (int i = g_.num_inputs(); i < g_.size(); ++i) {
      const Node& n = g_.node(i);
      if (m_.node_of(n.name) != o) continue;
      auto was = m_.as_imported.find(n.name);
      if (was == m_.as_imported.end()) continue;
      const auto& names = was->second.operand_names;
      for (size_t k = 0; k < n.operands.size() && k < names.size(); ++k)
        if (n.operands[k].is_value() && !names[k].empty()) now_reads.emplace(names[k], g_.node(n.operands[k].value).name);
    }
    const auto& node = m_.proto.graph().node(o);
    auto& ins = p_.inputs_of[o];
    for (const auto& v : node.input()) {
      if (v.empty() || ins.count(v)) continue;
      auto rk = m_.origins.value_node.find(v);
      if (rk != m_.origins.value_node.end()) {
        auto now = now_reads.find(rk->second);
        if (now != now_reads.end() && now->second != rk->second) {
          ins[v] = written_name(id_.at(now->second), fmt::format("input '{}' of {}", printable(v), m_.label(o)));
          continue;
        }
      }
      ins[v] = resolve(v, fmt::format("input '{}' of {}", printable(v), m_.label(o)), 0);
    }
  }

  // The written name of g's node `id`: a graph input, or the model value it holds.
  std::string written_name(int id, const std::string& what) {
    const Node& n = g_.node(id);
    if (n.is_input() && !holds_value(n.name)) return feed(n.name, id);
    auto v = m_.value_of.find(n.name);
    if (v != m_.value_of.end()) return resolve(v->second, what, 0);
    if (!n.is_input() && m_.node_of(n.name) < 0 && n.op == Op::clone && n.operands.size() == 1 && n.operands[0].is_value())
      return written_name(n.operands[0].value, what);  // an output the importer copied under the output's name
    refuse(fmt::format("{} is %{}, which is no value of the model", what, n.name));
  }

  std::string feed(const std::string& name, int id) {
    p_.fed.emplace(name, id);
    return name;
  }

  // Where the written model gets ONNX value v.
  std::string resolve(const std::string& v, const std::string& what, int depth) {
    if (depth > 64) refuse(fmt::format("{}: '{}' comes through too many nodes without ops", what, printable(v)));
    auto p = m_.producer.find(v);
    if (form_.without_noops && p != m_.producer.end() && !m_.nodes_with_ops.count(p->second) && !m_.origins.constants.count(v)) {
      // A node that computes nothing: its value is the one it passes on.
      auto rk = m_.origins.value_node.find(v);
      auto home = rk == m_.origins.value_node.end() ? m_.value_of.end() : m_.value_of.find(rk->second);
      if (home != m_.value_of.end() && home->second != v) return resolve(home->second, what, depth + 1);
    }
    if (p != m_.producer.end() && p_.nodes.count(p->second)) return v;  // a node written already
    auto rk = m_.origins.value_node.find(v);
    if (rk != m_.origins.value_node.end() && is_input(rk->second)) return feed(rk->second, id_.at(rk->second));
    if (form_.constants_as_initializers && m_.origins.constants.count(v)) {
      p_.constants.emplace(v, m_.origins.constants.at(v));
      return v;
    }
    if (p != m_.producer.end() && !m_.nodes_with_ops.count(p->second)) {
      // A node without ops of its own (Identity, Constant, a folded shape computation): written
      // when its inputs are there.
      const Plan saved = p_;
      try {
        p_.nodes.insert(p->second);
        auto& ins = p_.inputs_of[p->second];
        for (const auto& in : m_.proto.graph().node(p->second).input())
          if (!in.empty() && !ins.count(in)) ins[in] = resolve(in, what, depth + 1);
        return v;
      } catch (const UserError&) { p_ = saved; }
    }
    if (auto c = m_.origins.constants.find(v); c != m_.origins.constants.end()) {
      p_.constants.emplace(v, c->second);
      return v;
    }
    refuse(fmt::format("{}: '{}' is not in the candidate", what, printable(v)));
  }

  // Every name is defined once: graph inputs, initializers and node outputs.
  void check_names() const {
    std::set<std::string> defined;
    auto define = [&](const std::string& name) {
      if (!defined.insert(name).second) refuse(fmt::format("'{}' would be defined twice", printable(name)));
    };
    for (const auto& [name, id] : p_.fed) define(name);
    for (const auto& [name, t] : p_.constants) define(name);
    for (int o : p_.nodes)
      for (const auto& out : m_.proto.graph().node(o).output())
        if (!out.empty()) define(out);
  }

  const OriginalOnnxModel::Model& m_;
  const Graph& g_;
  const OnnxNodesForm form_;
  std::map<std::string, int> id_;
  Plan p_;
};

}  // namespace

OriginalOnnxModel::OriginalOnnxModel(const std::string& model_bytes, const Graph& imported, OnnxOrigins origins, const std::string& where)
    : m_(std::make_unique<Model>()) {
  if (model_bytes.size() > onnx_detail::kMaxModelBytes || !m_->proto.ParseFromArray(model_bytes.data(), static_cast<int>(model_bytes.size())))
    throw UserError(fmt::format("{}: not an ONNX model (the protobuf does not parse)", where));
  m_->origins = std::move(origins);
  const auto& nodes = m_->proto.graph().node();
  for (int i = 0; i < nodes.size(); ++i)
    for (const auto& out : nodes[i].output())
      if (!out.empty()) m_->producer.emplace(out, i);
  // A node's own output first, so a value an Identity passes on is named as its maker names it.
  for (const auto& [v, rk] : m_->origins.value_node) {
    auto p = m_->producer.find(v);
    if (p != m_->producer.end() && m_->node_of(rk) == p->second) m_->value_of[rk] = v;
  }
  for (const auto& [v, rk] : m_->origins.value_node) m_->value_of.emplace(rk, v);
  for (const Node& n : imported.nodes) m_->shape_of.emplace(n.name, n.type.shape);
  for (int i = imported.num_inputs(); i < imported.size(); ++i) {
    const Node& n = imported.node(i);
    m_->computed.insert(n.name);
    if (int o = m_->node_of(n.name); o >= 0) m_->nodes_with_ops.insert(o);
    Model::Imported& was = m_->as_imported[n.name];
    was.attrs = n.attrs;
    was.operands = n.operands;
    for (const auto& op : n.operands) was.operand_names.push_back(op.is_value() ? imported.node(op.value).name : std::string());
  }
}

OriginalOnnxModel::~OriginalOnnxModel() = default;

int OriginalOnnxModel::node_of(const std::string& name) const { return m_->node_of(name); }

bool OriginalOnnxModel::holds_a_model_value(const std::string& name) const { return m_->value_of.count(name) > 0; }

std::optional<std::string> OriginalOnnxModel::why_not_writable(const Graph& g) const {
  try {
    Planner(*m_, g, {}).run();
    return std::nullopt;
  } catch (const UserError& e) { return std::string(e.what()); }
}

std::string OriginalOnnxModel::describe_node(int index) const { return m_->label(index); }

std::vector<int> OriginalOnnxModel::nodes_named_in(const std::string& message) const {
  // Quotes and brackets, not spaces: an output called "output" is not named by "the output is".
  static const std::string kOpen = "'\"`([{<:=", kClose = "'\"`)]}>,;:/";
  struct Named {
    size_t at, length;
    int node;
  };
  std::vector<Named> found;
  const auto look_for = [&](const std::string& name, int node) {
    if (name.size() < 2) return;  // "" and one letter name nothing
    for (size_t at = message.find(name); at != std::string::npos; at = message.find(name, at + 1)) {
      const size_t end = at + name.size();
      const bool opens = at == 0 || kOpen.find(message[at - 1]) != std::string::npos;
      const bool closes = end == message.size() || kClose.find(message[end]) != std::string::npos;
      if (opens && closes) {
        found.push_back({at, name.size(), node});
        return;
      }
    }
  };
  const auto& graph = m_->proto.graph();
  for (int i = 0; i < graph.node_size(); ++i) {
    look_for(graph.node(i).name(), i);
    for (const auto& out : graph.node(i).output()) look_for(out, i);
  }
  // Where names overlap ("/Mul" inside "/Mul_1/..."), the longest one at a place is the one meant.
  std::sort(found.begin(), found.end(), [](const Named& a, const Named& b) { return a.at != b.at ? a.at < b.at : a.length > b.length; });
  std::vector<int> nodes;
  size_t covered_until = 0;
  for (const Named& n : found) {
    if (n.at < covered_until) continue;
    covered_until = n.at + n.length;
    if (std::find(nodes.begin(), nodes.end(), n.node) == nodes.end()) nodes.push_back(n.node);
  }
  return nodes;
}

std::vector<std::string> OriginalOnnxModel::op_types(const Graph& g, OnnxNodesForm form) const {
  std::vector<std::string> types;
  for (int o : Planner(*m_, g, form).run().nodes) types.push_back(m_->proto.graph().node(o).op_type());
  return types;
}

OriginalOnnxModel::Written OriginalOnnxModel::write(const Graph& g, const std::vector<Tensor>& inputs, const std::set<std::string>& weights,
                                                    OnnxNodesForm form) const {
  const Plan plan = Planner(*m_, g, form).run();
  onnx::ModelProto out = m_->proto;
  auto* graph = out.mutable_graph();
  graph->clear_node();
  graph->clear_input();
  graph->clear_output();
  graph->clear_initializer();
  graph->clear_sparse_initializer();
  graph->clear_value_info();
  Written w;
  std::vector<std::pair<int, std::string>> fed;  // in g's input order
  for (const auto& [name, id] : plan.fed) fed.emplace_back(id, name);
  std::sort(fed.begin(), fed.end());
  for (const auto& [id, name] : fed) {
    if (weights.count(name)) {
      onnx_detail::tensor_to_proto(inputs.at(static_cast<size_t>(id)), graph->add_initializer());
      graph->mutable_initializer(graph->initializer_size() - 1)->set_name(name);
      w.weight_inputs.push_back(id);
    } else {
      set_value_info(graph->add_input(), name, g.node(id).type);
      w.fed_inputs.push_back(id);
    }
  }
  for (const auto& [name, t] : plan.constants) {
    onnx_detail::tensor_to_proto(t, graph->add_initializer());
    graph->mutable_initializer(graph->initializer_size() - 1)->set_name(name);
  }
  for (int o : plan.nodes) {  // in the model's order, so every input is defined before it is read
    onnx::NodeProto* n = graph->add_node();
    *n = m_->proto.graph().node(o);
    const auto& ins = plan.inputs_of.at(o);
    for (int k = 0; k < n->input_size(); ++k)
      if (!n->input(k).empty()) n->set_input(k, ins.at(n->input(k)));
  }
  for (const auto& [name, id] : plan.outputs) set_value_info(graph->add_output(), name, g.node(id).type);
  if (!out.SerializeToString(&w.model)) throw InternalError("serializing the written model failed");
  return w;
}

}  // namespace reprokit
