// The op registry: the schema of every op of ops.def (tensor parameters, attributes with defaults,
// class, flags, shape/dtype inference). Everything that needs facts about ops reads them here.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reprokit/ir/graph.h"

namespace reprokit {

enum class ParamKind {
  tensor,            // a value
  tensor_or_scalar,  // a value or a scalar literal (binary pointwise, where)
  optional_tensor,   // may be omitted (trailing only)
  variadic_tensor,   // one or more values (cat)
};

enum class AttrKind { int_, float_, bool_, string, dtype, ints, scalar };

struct ParamSpec {
  std::string name;
  ParamKind kind;
};

struct AttrSpec {
  std::string name;
  AttrKind kind;
  std::optional<AttrValue> default_value;  // nullopt: required, unless `optional` is set
  bool optional = false;                   // may be absent with no default (e.g. reduction dims)
};

enum class OpClass { unary, binary, pointwise, reduction, normalization, linalg, conv, shape, indexing, scan, creation };

// Flags of ops.def.
enum OpFlag : unsigned {
  kNoFlags = 0,
  kDifferentiable = 1u << 0,      // has a backward rule (for float inputs)
  kComposite = 1u << 1,           // has a decomposition into primitives
  kPrimitiveReduction = 1u << 2,  // a reduction loop in codegen (sum amax amin argmax)
  kUpcast = 1u << 3,              // f16/bf16 compute in f32 when decomposed or differentiated
};

struct OpSchema {
  Op op;
  std::string name;
  OpClass cls;
  std::vector<ParamSpec> params;
  std::vector<AttrSpec> attrs;
  unsigned flags = 0;
  TensorType (*infer)(const Graph&, const Node&) = nullptr;  // throws VerifyError

  bool differentiable() const { return flags & kDifferentiable; }
  bool composite() const { return flags & kComposite; }
  bool primitive_reduction() const { return flags & kPrimitiveReduction; }
  bool upcast() const { return flags & kUpcast; }
};

// The table ops, in ops.def order (Op::input has no schema).
const std::vector<OpSchema>& op_table();
const OpSchema& op_schema(Op op);                // InternalError for Op::input
const OpSchema* find_op(std::string_view name);  // nullptr when unknown (the text/JSON edges)

// True for ops that are elementwise over (broadcast) operands: unary, binary, where, to, clone.
bool is_pointwise(Op op);
// True for ops whose result is their operand's elements in another shape or order (reshape,
// squeeze, unsqueeze, permute, transpose, expand, slice, contiguous): a backend may read them
// through strides instead of copying.
bool is_view_op(Op op);

// Attribute lookup that falls back to the schema's default. Throws VerifyError naming the node
// when the attribute is required and missing.
const AttrValue& attr(const Node& n, std::string_view name);
std::optional<AttrValue> attr_opt(const Node& n, std::string_view name);  // absent optional attr
int64_t attr_int(const Node& n, std::string_view name);
double attr_float(const Node& n, std::string_view name);
bool attr_bool(const Node& n, std::string_view name);
std::vector<int64_t> attr_ints(const Node& n, std::string_view name);

// Infers the type of node `id` from its operands (already typed). Throws VerifyError
// "graph G, node %x = op: message".
TensorType infer_node_type(const Graph& g, int id);

}  // namespace reprokit
