// AttrValue: an attribute or scalar-literal value in the graph (int, float, bool, string, dtype, list).
#pragma once
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "reprokit/ir/dtype.h"

namespace reprokit {

struct AttrValue {
  using List = std::vector<AttrValue>;
  std::variant<int64_t, double, bool, std::string, DType, List> v;

  AttrValue() : v(int64_t{0}) {}
  AttrValue(int64_t x) : v(x) {}
  AttrValue(int x) : v(int64_t{x}) {}
  AttrValue(double x) : v(x) {}
  AttrValue(bool x) : v(x) {}
  AttrValue(std::string x) : v(std::move(x)) {}
  AttrValue(const char* x) : v(std::string(x)) {}
  AttrValue(DType x) : v(x) {}
  AttrValue(List x) : v(std::move(x)) {}
  static AttrValue ints(const std::vector<int64_t>& xs);

  bool is_int() const { return std::holds_alternative<int64_t>(v); }
  bool is_float() const { return std::holds_alternative<double>(v); }
  bool is_bool() const { return std::holds_alternative<bool>(v); }
  bool is_string() const { return std::holds_alternative<std::string>(v); }
  bool is_dtype() const { return std::holds_alternative<DType>(v); }
  bool is_list() const { return std::holds_alternative<List>(v); }

  int64_t as_int() const;   // throws UserError when not an int (bools are not ints)
  double as_float() const;  // ints convert
  bool as_bool() const;
  const std::string& as_string() const;
  DType as_dtype() const;
  const List& as_list() const;
  std::vector<int64_t> as_ints() const;  // list of ints (or a single int as a 1-list)

  bool operator==(const AttrValue& o) const { return v == o.v; }
  // The .rk spelling: 2.0, -1, true, "tanh", f32, [1, 2]. Floats print so they parse back exactly.
  std::string str() const;
};

}  // namespace reprokit
