// Builder and Expr: graph construction as algebra, for decompositions, backward rules and the
// passes' injected rewrites. `(x - m) * rsqrt(v + eps)` appends sub, add, rsqrt and mul nodes to
// the builder's graph, each named `<base>.<op>` (made unique), with its type inferred.
#pragma once
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "reprokit/ir/graph.h"

namespace reprokit {

// Value names in use in a graph, with fresh names in O(1): the one way builders name new nodes.
class NameSet {
 public:
  NameSet() = default;
  explicit NameSet(const Graph& g) { add_all(g); }
  void add_all(const Graph& g);
  void reserve(const std::string& name) { taken_.insert(name); }
  bool contains(const std::string& name) const { return taken_.count(name) > 0; }
  // prefix itself when free, else prefix_1, prefix_2, ...; the result is reserved.
  std::string fresh(std::string_view prefix);

 private:
  std::unordered_set<std::string> taken_;
  std::unordered_map<std::string, int> next_;
};

class Builder;

// A value of the graph a Builder appends to.
class Expr {
 public:
  Expr() = default;
  Expr(Builder* b, int id) : b_(b), id_(id) {}
  int id() const { return id_; }
  Builder& builder() const { return *b_; }
  // By value: adding nodes may move the graph's storage, so a reference would dangle.
  TensorType type() const;
  Shape shape() const { return type().shape; }
  DType dtype() const { return type().dtype; }
  int64_t rank() const { return type().rank(); }

 private:
  Builder* b_ = nullptr;
  int id_ = -1;
};

// An operand: a value, or a scalar literal (the literal's kind is kept: 1 is an int, 1.0 a float).
struct Arg {
  Arg(Expr e) : operand(Operand::of(e.id())), builder(&e.builder()) {}
  Arg(double x) : operand(Operand::scalar(AttrValue(x))) {}
  Arg(int x) : operand(Operand::scalar(AttrValue(int64_t{x}))) {}
  Arg(int64_t x) : operand(Operand::scalar(AttrValue(x))) {}
  Arg(bool x) : operand(Operand::scalar(AttrValue(x))) {}
  Arg(const Operand& o, Builder& b) : operand(o), builder(&b) {}
  Operand operand;
  Builder* builder = nullptr;  // set for values
};

class Builder {
 public:
  // Appends to g; names are `<base>.<op>`, unique among `names` (which must know g's names).
  Builder(Graph& g, NameSet& names, std::string base) : g_(g), names_(names), base_(std::move(base)) {}
  Expr value(int id) { return Expr(this, id); }
  Expr value(const Operand& o) { return Expr(this, o.value); }
  Arg arg(const Operand& o) { return Arg(o, *this); }  // a value or a literal operand
  Expr op(Op op, const std::vector<Arg>& args, Attrs attrs = {});
  Graph& graph() { return g_; }
  NameSet& names() { return names_; }
  const std::string& base() const { return base_; }

 private:
  Graph& g_;
  NameSet& names_;
  std::string base_;
};

// ---- arithmetic (binary ops take a value or a literal on either side)
Expr operator+(const Arg& a, const Arg& b);
Expr operator-(const Arg& a, const Arg& b);
Expr operator*(const Arg& a, const Arg& b);
Expr operator/(const Arg& a, const Arg& b);
Expr operator-(Expr x);
Expr pow(const Arg& a, const Arg& b);
Expr maximum(const Arg& a, const Arg& b);
Expr minimum(const Arg& a, const Arg& b);
Expr eq(const Arg& a, const Arg& b);
Expr ne(const Arg& a, const Arg& b);
Expr lt(const Arg& a, const Arg& b);
Expr le(const Arg& a, const Arg& b);
Expr gt(const Arg& a, const Arg& b);
Expr ge(const Arg& a, const Arg& b);
Expr where(Expr cond, const Arg& a, const Arg& b);

// ---- unary
Expr abs(Expr x);
Expr exp(Expr x);
Expr log(Expr x);
Expr sqrt(Expr x);
Expr rsqrt(Expr x);
Expr reciprocal(Expr x);
Expr sin(Expr x);
Expr cos(Expr x);
Expr tanh(Expr x);
Expr erf(Expr x);
Expr relu(Expr x);
Expr sigmoid(Expr x);
Expr cast(Expr x, DType dtype);  // `to`; x itself when it already has the dtype

// ---- reductions (keepdim defaults to true: results broadcast back against x)
Expr sum(Expr x, const std::vector<int64_t>& dims, bool keepdim = true);
Expr sum_all(Expr x);
Expr amax(Expr x, const std::vector<int64_t>& dims, bool keepdim = true);

// ---- shape and linear algebra
Expr reshape(Expr x, const Shape& shape);  // x itself when the shape is already right
Expr expand(Expr x, const Shape& shape);
Expr transpose(Expr x, int64_t dim0, int64_t dim1);
Expr permute(Expr x, const std::vector<int64_t>& dims);
Expr unsqueeze(Expr x, int64_t dim);
Expr squeeze(Expr x, int64_t dim);
Expr slice(Expr x, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
Expr cat(const std::vector<Expr>& xs, int64_t dim);
Expr matmul(Expr a, Expr b);
Expr gather(Expr x, Expr index, int64_t dim);
Expr pad(Expr x, const std::vector<int64_t>& pads, double value = 0.0);  // torch.nn.functional.pad order
Expr conv2d(Expr x, Expr w, const std::vector<int64_t>& stride, const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
            int64_t groups);
Expr full(Builder& b, const Shape& shape, const AttrValue& value, DType dtype);

}  // namespace reprokit
