// The .rk text format: round trips of every op and the parser's error messages.
#include <gtest/gtest.h>

#include <set>

#include "all_ops.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/text_format.h"

using namespace reprokit;

TEST(TextFormat, EveryOpRoundTrips) {
  Graph g = parse_graph(kAllOpsGraph, "all_ops.rk");
  std::set<std::string> seen;
  for (auto& n : g.nodes) seen.insert(std::string(op_name(n.op)));
  for (auto& s : op_table()) EXPECT_TRUE(seen.count(s.name)) << "the all-ops graph misses " << s.name;
  std::string once = print_graph(g);
  std::string twice = print_graph(parse_graph(once));
  EXPECT_EQ(once, twice);
}

TEST(TextFormat, PositionalAttributesPrintByName) {
  Graph g = parse_graph("graph g(%x: f32[2, 3]) {\n  %t = transpose(%x, 0, 1)\n  %s = softmax(%t, -1)\n  return (%s)\n}\n");
  EXPECT_EQ(print_graph(g), "graph g(%x: f32[2, 3]) {\n  %t = transpose(%x, dim0=0, dim1=1)\n  %s = softmax(%t, dim=-1)\n  return (%s)\n}\n");
}

TEST(TextFormat, InputTypesKeepStridesDeviceAndGrad) {
  const char* src = "graph g(%x: f16[2, 3] strides=[1, 2] grad, %y: f32[] @cuda) {\n  %z = mul(%x, 2.0)\n  return (%z)\n}\n";
  Graph g = parse_graph(src);
  EXPECT_EQ(g.node(0).type.strides, (Shape{1, 2}));
  EXPECT_TRUE(g.node(0).type.requires_grad);
  EXPECT_EQ(g.node(1).type.device, Device::cuda);
  EXPECT_EQ(g.node(1).type.rank(), 0);
  EXPECT_EQ(print_graph(g), src);
}

TEST(TextFormat, FloatsPrintExactly) {
  Graph g = parse_graph(
      "graph g(%x: f64[2]) {\n  %a = mul(%x, 0.1)\n  %b = add(%a, 1e-30)\n  %c = mul(%b, 3)\n  %d = maximum(%c, -inf)\n  return (%d)\n}\n");
  std::string s = print_graph(g);
  EXPECT_NE(s.find("mul(%x, 0.1)"), std::string::npos) << s;
  EXPECT_NE(s.find("add(%a, 1e-30)"), std::string::npos) << s;
  EXPECT_NE(s.find("mul(%b, 3)"), std::string::npos) << s;
  EXPECT_NE(s.find("-inf"), std::string::npos) << s;
  EXPECT_EQ(print_graph(parse_graph(s)), s);
}

TEST(TextFormat, SeveralGraphsFirstIsEntry) {
  Module m = parse_module("graph a(%x: f32[1]) { return (%x) }\ngraph b(%x: f32[2]) {\n %y = neg(%x)\n return %y\n}\n");
  ASSERT_EQ(m.graphs.size(), 2u);
  EXPECT_EQ(m.entry().name, "a");
  EXPECT_EQ(m.get("b").num_ops(), 1);
  EXPECT_THROW(m.get("zz"), UserError);
}

// Graph names may hold '.' (DESIGN.md's pattern; ONNX graphs are often named so): the printer's
// text parses back ("expected '(' after the graph name").
TEST(TextFormat, GraphNamesWithDotsRoundTrip) {
  for (std::string name : {"my.graph", "a.", "a..b", "torch_jit.v1.2"}) {
    Graph g = parse_graph("graph " + name + "(%x: f32[2]) {\n  %y.z = neg(%x)\n  return (%y.z)\n}\n");
    EXPECT_EQ(g.name, name);
    std::string once = print_graph(g);
    EXPECT_EQ(parse_graph(once).name, name);
    EXPECT_EQ(print_graph(parse_graph(once)), once);
  }
  Module m = parse_module("graph a.b(%x: f32[1]) { return (%x) }\ngraph a(%x: f32[2]) { return (%x) }\n");
  EXPECT_EQ(m.entry().name, "a.b");
  EXPECT_EQ(m.get("a").name, "a");
}

struct BadCase {
  const char* text;
  const char* message;  // expected substring, including the line:col
};

class ParseErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(ParseErrors, NameLineColumnAndWhatWasExpected) {
  try {
    parse_module(GetParam().text, "bad.rk");
    FAIL() << "parsed without error: " << GetParam().text;
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(GetParam().message), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << GetParam().message;
    EXPECT_EQ(std::string(e.what()).rfind("bad.rk:", 0), 0u) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, ParseErrors,
    ::testing::Values(
        BadCase{"", "bad.rk:1:1: error: expected 'graph', got end of file"}, BadCase{"grap g() {}", "1:1: error: expected 'graph', got 'grap'"},
        BadCase{"graph (%x: f32[1]) { return (%x) }", "1:7: error: expected a graph name, got '('"},
        BadCase{"graph g(%x f32[1]) { return (%x) }", "1:12: error: expected ':' after the input name, got 'f32'"},
        BadCase{"graph g(%x: f31[1]) { return (%x) }", "1:13: error: unknown dtype 'f31'"},
        BadCase{"graph g(%x: f32[1, a]) { return (%x) }", "1:20: error: expected an integer, got 'a'"},
        BadCase{"graph g(%x: f32[2]) {\n  %y = frob(%x)\n  return (%y)\n}", "2:8: error: unknown op 'frob'"},
        BadCase{"graph g(%x: f32[2]) {\n  %y = neg(%z)\n  return (%y)\n}", "2:12: error: use of undefined value %z"},
        BadCase{"graph g(%x: f32[2]) {\n  %x = neg(%x)\n  return (%x)\n}", "2:3: error: duplicate value name %x"},
        BadCase{"graph g(%x: f32[2]) {\n  %y = neg(%x\n  return (%y)\n}", "3:3: error: expected ',' or ')' in the arguments of neg, got 'return'"},
        BadCase{"graph g(%x: f32[2]) {\n  %y = neg(%x)\n}", "3:1: error: graph g has no return statement"},
        BadCase{"graph g(%x: f32[2]) {\n  %y = neg(%x)\n  return (%y)\n", "4:1: error: expected '}' to close graph g, got end of file"},
        BadCase{"graph g(%x: f32[2]) {\n  %y = gelu(%x, approximate=\"tanh)\n  return (%y)\n}", "2:29: error: unterminated string"},
        BadCase{"graph g(%x: f32[2]) {\n  %y = neg(%x)\n  return (%q)\n}", "3:11: error: return of undefined value %q"},
        BadCase{"graph g(%x: f32[2]) {\n  %y = add(%x, 1.2.3)\n  return (%y)\n}", "2:16: error: malformed number '1.2.3'"},
        BadCase{"graph g(%x: f32[2]) {\n  %y = softmax(%x, dim=0, dim=0)\n  return (%y)\n}", "2:27: error: attribute 'dim' given twice"},
        BadCase{"graph g(%x: f32[2]) {\n  %y = neg(%x) $\n  return (%y)\n}", "2:16: error: unexpected character '$'"},
        BadCase{"graph g(%x: f32[2] @tpu) { return (%x) }", "1:21: error: unknown device 'tpu'"},
        BadCase{"graph g(%x: f32[2, 3] strides=[1]) { return (%x) }", "1:9: error: input %x has 1 strides for rank 2"},
        BadCase{"graph g(%x: f32[2]) { return (%x) }\ngraph g(%y: f32[2]) { return (%y) }", "2:7: error: duplicate graph name 'g'"},
        BadCase{"graph g(%x: f32[2]) {\n  %y = neg(%x, dim=wat)\n  return (%y)\n}", "2:20: error: expected a value"},
        BadCase{"graph g(%x: f32[2]) {\n  %y = neg(%x)\n  return (%y)\n}\n}", "5:1: error: expected 'graph', got '}'"},
        BadCase{"graph g(%: f32[2]) { return (%x) }", "1:9: error: expected a value name after '%'"}));

TEST(TextFormat, MissingFileNamesThePath) {
  try {
    load_module_file("/nonexistent/model.rk");
    FAIL();
  } catch (const UserError& e) { EXPECT_NE(std::string(e.what()).find("/nonexistent/model.rk"), std::string::npos); }
}
