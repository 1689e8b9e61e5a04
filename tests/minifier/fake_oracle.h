// An in-process oracle for engine and strategy tests: a predicate on the candidate graph.
#pragma once
#include <functional>
#include <string>

#include <fmt/format.h>

#include "reprokit/ir/text_format.h"
#include "reprokit/minifier/oracle.h"
#include "reprokit/minifier/compiler_decisions.h"

namespace reprokit::testing {

class FakeOracle : public Oracle {
 public:
  explicit FakeOracle(std::function<bool(const Candidate&)> pred, int parallel = 1) : pred_(std::move(pred)), parallel_(parallel) {}
  std::vector<Verdict> judge(const std::vector<Candidate>& cs) override {
    std::vector<Verdict> out;
    for (auto& c : cs) {
      ++calls;
      Verdict v;
      v.interesting = pred_(c);
      out.push_back(v);
    }
    return out;
  }
  int parallelism() const override { return parallel_; }
  int calls = 0;

 private:
  std::function<bool(const Candidate&)> pred_;
  int parallel_;
};

// True when g computes node `name` with an op (a cut turns it into an input, which does not count).
inline bool has_op(const Graph& g, const std::string& name) {
  int id = g.find(name);
  return id >= 0 && !g.node(id).is_input();
}

// A chain of n unary ops over one input: %n0 = neg(%x), %n1 = relu(%n0), ...
inline Graph unary_chain(int n) {
  static const char* ops[] = {"neg", "relu", "abs", "sin", "cos", "tanh"};
  std::string s = "graph chain(%x: f32[4]) {\n";
  for (int i = 0; i < n; ++i) s += fmt::format("  %n{} = {}(%{})\n", i, ops[i % 6], i ? fmt::format("n{}", i - 1) : "x");
  s += fmt::format("  return (%n{})\n}}\n", n - 1);
  return parse_graph(s);
}

// The strategy of that name from the table.
inline const Strategy& strategy(const std::string& name) {
  for (auto& s : strategy_table())
    if (s.name == name) return s;
  throw std::runtime_error("no strategy " + name);
}

}  // namespace reprokit::testing
