// The op registry: one table entry per op of DESIGN.md with its schema (tensor parameters and
// attributes with defaults), its class, whether it is composite (has a decomposition) and its
// shape/dtype inference. Everything else that needs a list of ops derives it from this table.
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

enum class OpClass { unary, binary, pointwise, reduction, normalization, linalg, shape, indexing, creation };

struct OpSchema {
  std::string name;
  OpClass cls;
  std::vector<ParamSpec> params;
  std::vector<AttrSpec> attrs;
  bool composite = false;       // has a decomposition into primitives
  bool differentiable = true;   // has a backward rule (for float inputs)
  TensorType (*infer)(const Graph&, const Node&) = nullptr;  // throws VerifyError
};

const std::vector<OpSchema>& op_table();
const OpSchema* find_op(std::string_view name);  // nullptr when unknown
const OpSchema& op_schema(std::string_view name);  // throws UserError when unknown

// True for ops that are elementwise over (broadcast) operands: unary, binary, where, to, clone.
bool is_pointwise(std::string_view op);

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

// Normalizes a possibly negative dim against rank; throws VerifyError-style message via UserError.
int64_t normalize_dim(int64_t dim, int64_t rank);
// Broadcast two shapes as NumPy/PyTorch do; std::nullopt when incompatible.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);

}  // namespace reprokit
