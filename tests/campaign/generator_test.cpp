// The graph generator: valid graphs (they print and parse back), deterministic per seed, every
// op of the table reachable, and input values that keep the float64 reference finite.
#include <gtest/gtest.h>

#include <cmath>

#include "reprokit/campaign/graph_generator.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/runtime/interpreter.h"

using namespace reprokit;

TEST(GraphGenerator, GraphsAreValidDeterministicAndFinite) {
  GeneratorOptions o;
  int made = 0;
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    auto c = generate_case(seed, o);
    if (!c) continue;
    ++made;
    const std::string text = print_graph(c->graph);
    Graph back = parse_graph(text, "generated.rk");  // verifies
    EXPECT_EQ(print_graph(back), text);
    auto again = generate_case(seed, o);
    ASSERT_TRUE(again);
    EXPECT_EQ(print_graph(again->graph), text) << "seed " << seed;
    ASSERT_EQ(c->inputs.size(), static_cast<size_t>(c->graph.num_inputs()));
    InterpretOptions f64;
    f64.cast_to_f64 = true;
    for (const Tensor& t : interpret(c->graph, c->inputs, f64))
      for (double v : t.to_doubles()) EXPECT_TRUE(std::isfinite(v)) << text;
    EXPECT_GE(c->graph.num_ops(), 1);
    EXPECT_LE(c->graph.num_ops(), o.max_nodes);
  }
  EXPECT_GE(made, 100);  // most seeds give a case
}

// Generation follows the op table: restricted to any one op, some seed yields a graph of it.
TEST(GraphGenerator, EveryOpOfTheTableIsGenerated) {
  for (const OpSchema& s : op_table()) {
    GeneratorOptions o;
    o.ops = {s.op};
    o.max_nodes = 1;
    bool found = false;
    for (uint64_t seed = 1; seed <= 300 && !found; ++seed)
      if (auto c = generate_case(seed, o))
        for (auto& n : c->graph.nodes) found |= n.op == s.op;
    EXPECT_TRUE(found) << s.name;
  }
}

TEST(GraphGenerator, TrainingGraphsHaveGradInputs) {
  GeneratorOptions o;
  o.train = true;
  int made = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    auto c = generate_case(seed, o);
    if (!c) continue;
    ++made;
    bool grad = false;
    for (int i = 0; i < c->graph.num_inputs(); ++i) grad |= c->graph.node(i).type.requires_grad;
    EXPECT_TRUE(grad) << print_graph(c->graph);
  }
  EXPECT_GE(made, 20);
}

// Found by fuzzing ONNX Runtime: integer pow with a negative exponent (0 ** -3) or a wrapped
// result (16 ** 16) has no answer every compiler agrees on. Generated values keep every integer
// result exact: what the op gives on the same numbers in float64.
TEST(GraphGenerator, IntegerResultsAreExact) {
  GeneratorOptions o;
  o.ops = {Op::pow, Op::mul, Op::add, Op::sum};
  o.max_nodes = 4;
  int integer_nodes = 0;
  for (uint64_t seed = 0; seed < 400; ++seed) {
    auto c = generate_case(seed, o);
    if (!c) continue;
    const Graph& g = c->graph;
    std::vector<Tensor> all = interpret_all(g, c->inputs);
    for (int i = g.num_inputs(); i < g.size(); ++i) {
      const Node& n = g.node(i);
      if (is_floating(n.type.dtype) || n.type.dtype == DType::boolean) continue;
      std::vector<Tensor> ops;
      bool integer_operands = true;
      for (const Operand& x : n.operands) {
        if (!x.is_value()) {
          ops.emplace_back();
          continue;
        }
        integer_operands = integer_operands && !is_floating(all[static_cast<size_t>(x.value)].dtype());
        ops.push_back(all[static_cast<size_t>(x.value)].to(DType::f64));
      }
      if (!integer_operands) continue;
      ++integer_nodes;
      Node real = n;
      real.type.dtype = DType::f64;
      EXPECT_EQ(run_reference_kernel(real, ops, true).to_doubles(), all[static_cast<size_t>(i)].to_doubles())
          << "seed " << seed << ", node %" << n.name << "\n"
          << print_graph(g);
    }
  }
  EXPECT_GT(integer_nodes, 50);
}
