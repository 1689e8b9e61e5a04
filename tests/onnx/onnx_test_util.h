// Helpers of the ONNX tests: tiny models built with the protobuf API, run through the importer.
#pragma once
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <cmath>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "reprokit/onnx/onnx_import.h"
#include "reprokit/support/errors.h"
#include "reprokit/onnx/onnx_tensor.h"
#include "reprokit/runtime/interpreter.h"

namespace reprokit::testing {

constexpr int F32 = onnx::TensorProto::FLOAT;
constexpr int F64 = onnx::TensorProto::DOUBLE;
constexpr int F16 = onnx::TensorProto::FLOAT16;
constexpr int I32 = onnx::TensorProto::INT32;
constexpr int I64 = onnx::TensorProto::INT64;
constexpr int BOOL = onnx::TensorProto::BOOL;
constexpr int U8 = onnx::TensorProto::UINT8;
constexpr int I8_T = onnx::TensorProto::INT8;

// A model under construction: inputs, outputs, nodes, initializers.
struct ModelBuilder {
  onnx::ModelProto m;
  explicit ModelBuilder(int opset = 17, const std::string& name = "test") {
    m.set_ir_version(opset >= 15 ? 8 : 7);
    auto* op = m.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    m.mutable_graph()->set_name(name);
  }
  static void set_type(onnx::ValueInfoProto* vi, const std::string& name, int elem, const std::vector<int64_t>* dims) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    if (dims) {
      auto* s = tt->mutable_shape();
      for (auto d : *dims) s->add_dim()->set_dim_value(d);
    }
  }
  ModelBuilder& input(const std::string& name, int elem, std::vector<int64_t> dims) {
    set_type(m.mutable_graph()->add_input(), name, elem, &dims);
    return *this;
  }
  // An input with a symbolic dimension `param` at position `at`.
  ModelBuilder& dynamic_input(const std::string& name, int elem, std::vector<int64_t> dims, size_t at, const std::string& param) {
    auto* vi = m.mutable_graph()->add_input();
    set_type(vi, name, elem, &dims);
    auto* d = vi->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(static_cast<int>(at));
    d->clear_dim_value();
    d->set_dim_param(param);
    return *this;
  }
  // An output without dims gets them from ONNX's shape inference where it can (the checker needs
  // a shape); give dims where inference cannot know them (shapes computed from inputs' values).
  ModelBuilder& output(const std::string& name, int elem, std::optional<std::vector<int64_t>> dims = std::nullopt) {
    set_type(m.mutable_graph()->add_output(), name, elem, dims ? &*dims : nullptr);
    return *this;
  }
  onnx::NodeProto& node(const std::string& op, std::vector<std::string> ins, std::vector<std::string> outs, const std::string& name = "") {
    auto* n = m.mutable_graph()->add_node();
    n->set_op_type(op);
    if (!name.empty()) n->set_name(name);
    for (auto& i : ins) n->add_input(i);
    for (auto& o : outs) n->add_output(o);
    return *n;
  }
  ModelBuilder& init(const std::string& name, const Tensor& t) {
    auto* p = m.mutable_graph()->add_initializer();
    p->ParseFromString(encode_onnx_tensor(t, name));
    return *this;
  }
  // Outputs are declared without a shape; ONNX's checker wants one: shape inference fills it in
  // where it can (else a scalar shape is a placeholder the importer's own inference overrides).
  std::string bytes() const {
    onnx::ModelProto copy = m;
    bool all_shaped = true;
    for (const auto& o : m.graph().output()) all_shaped &= o.type().tensor_type().has_shape();
    if (all_shaped) return copy.SerializeAsString();  // (hostile models stay away from ONNX's inference here)
    try {
      onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(), onnx::ShapeInferenceOptions(false, 0, true));
    } catch (const std::exception&) {}
    for (auto& o : *copy.mutable_graph()->mutable_output()) {
      auto* tt = o.mutable_type()->mutable_tensor_type();
      if (tt->has_shape()) continue;
      for (const auto& vi : copy.graph().value_info())
        if (vi.name() == o.name() && vi.type().tensor_type().has_shape()) *tt->mutable_shape() = vi.type().tensor_type().shape();
      tt->mutable_shape();
    }
    return copy.SerializeAsString();
  }
  ImportedModel import(const ImportOptions& o = {}) const { return import_onnx_bytes(bytes(), "test.onnx", o); }
};

inline void attr(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
inline void attr_f(onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
inline void attr_ints(onnx::NodeProto& n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (auto x : v) a->add_ints(x);
}
inline void attr_s(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}
inline void attr_tensor(onnx::NodeProto& n, const std::string& name, const Tensor& t) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->ParseFromString(encode_onnx_tensor(t, ""));
}

inline Tensor f32(Shape s, std::vector<double> v) { return Tensor::from_doubles(DType::f32, s, v); }
inline Tensor i64(Shape s, std::vector<int64_t> v) { return Tensor::from_int64s(DType::i64, s, v); }

// Runs the imported graph on the given real inputs (in graph input order, before the inputs with
// saved values) through the reference interpreter.
inline std::vector<Tensor> run(const ImportedModel& m, const std::vector<Tensor>& real) {
  std::vector<Tensor> in;
  size_t r = 0;
  for (int i = 0; i < m.graph.num_inputs(); ++i) {
    auto it = m.values.find(m.graph.node(i).name);
    if (it != m.values.end()) in.push_back(it->second);
    else in.push_back(real.at(r++));
  }
  return interpret(m.graph, in);
}

// The UserError importing b gives, or "(no error)".
inline std::string import_error(const ModelBuilder& b, const ImportOptions& o = {}) {
  try {
    b.import(o);
  } catch (const UserError& e) { return e.what(); }
  return "(no error)";
}

#define EXPECT_HAS(haystack, needle) EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

inline void expect_values(const Tensor& t, Shape shape, std::vector<double> want, double tol = 1e-6) {
  ASSERT_EQ(t.shape(), shape);
  auto got = t.to_doubles();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
    else EXPECT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << "at " << i;
  }
}

}  // namespace reprokit::testing
