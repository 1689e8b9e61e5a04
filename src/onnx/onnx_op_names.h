// Internal to rk_onnx: the ONNX op types that are one reprokit op each way. The importer maps each
// to its op through the handler of its kind (onnx_ops.cpp), and the exporter writes the op as that
// type through the rule of its kind (onnx_export.cpp), so a name is written once for both. Ops
// that map any other way (a composition, one ONNX type for several ops, a variadic ONNX op) are in
// each side's own table.
#pragma once
#include "reprokit/ir/op.h"

namespace reprokit::onnx_detail {

enum class OneToOneKind { unary, binary, reduce, softmax };

struct OneToOneOp {
  const char* onnx;
  Op op;
  OneToOneKind kind;
};

inline constexpr OneToOneOp kOneToOneOps[] = {
    {"Neg", Op::neg, OneToOneKind::unary},           {"Abs", Op::abs, OneToOneKind::unary},
    {"Exp", Op::exp, OneToOneKind::unary},           {"Log", Op::log, OneToOneKind::unary},
    {"Sqrt", Op::sqrt, OneToOneKind::unary},         {"Reciprocal", Op::reciprocal, OneToOneKind::unary},
    {"Sin", Op::sin, OneToOneKind::unary},           {"Cos", Op::cos, OneToOneKind::unary},
    {"Tanh", Op::tanh, OneToOneKind::unary},         {"Sigmoid", Op::sigmoid, OneToOneKind::unary},
    {"Relu", Op::relu, OneToOneKind::unary},         {"Erf", Op::erf, OneToOneKind::unary},
    {"Add", Op::add, OneToOneKind::binary},          {"Sub", Op::sub, OneToOneKind::binary},
    {"Mul", Op::mul, OneToOneKind::binary},          {"Div", Op::div, OneToOneKind::binary},
    {"Pow", Op::pow, OneToOneKind::binary},          {"Equal", Op::eq, OneToOneKind::binary},
    {"Less", Op::lt, OneToOneKind::binary},          {"LessOrEqual", Op::le, OneToOneKind::binary},
    {"Greater", Op::gt, OneToOneKind::binary},       {"GreaterOrEqual", Op::ge, OneToOneKind::binary},
    {"ReduceSum", Op::sum, OneToOneKind::reduce},    {"ReduceMean", Op::mean, OneToOneKind::reduce},
    {"ReduceMax", Op::amax, OneToOneKind::reduce},   {"ReduceMin", Op::amin, OneToOneKind::reduce},
    {"Softmax", Op::softmax, OneToOneKind::softmax}, {"LogSoftmax", Op::log_softmax, OneToOneKind::softmax},
};

// The row of `op`, or nullptr when it maps some other way.
constexpr const OneToOneOp* one_to_one(Op op) {
  for (const OneToOneOp& r : kOneToOneOps)
    if (r.op == op) return &r;
  return nullptr;
}

}  // namespace reprokit::onnx_detail
