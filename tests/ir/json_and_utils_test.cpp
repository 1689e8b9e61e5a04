// JSON round trips and the graph utilities (users, DCE, extraction, rebuild, hashing).
#include <gtest/gtest.h>

#include "all_ops.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/graph_utils.h"
#include "reprokit/ir/json_format.h"
#include "reprokit/ir/names.h"
#include "reprokit/ir/text_format.h"

using namespace reprokit;

TEST(Json, EveryOpRoundTripsIdentically) {
  Graph g = parse_graph(kAllOpsGraph);
  auto j = graph_to_json(g);
  Graph back = graph_from_json(j);
  EXPECT_EQ(graph_to_json(back), j);
  EXPECT_EQ(print_graph(back), print_graph(g));
  auto reparsed = graph_from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(graph_to_json(reparsed), j);
}

TEST(Json, MalformedJsonIsAUserError) {
  EXPECT_THROW(graph_from_json(nlohmann::json::parse(R"({"name": "g"})")), UserError);
  EXPECT_THROW(graph_from_json(nlohmann::json::parse(
                   R"({"name": "g", "inputs": [], "nodes": [{"name": "a", "op": "neg", "operands": [{"value": "zz"}]}], "outputs": ["a"]})")),
               UserError);
  EXPECT_THROW(graph_from_json(
                   nlohmann::json::parse(R"({"name": "g", "inputs": [{"name": "x", "dtype": "f99", "shape": [1]}], "nodes": [], "outputs": ["x"]})")),
               UserError);
}

static const char* kChain = R"(graph c(%x: f32[4], %unused: f32[2]) {
  %a = exp(%x)
  %b = neg(%a)
  %dead = sin(%a)
  %c = mul(%b, %a)
  return (%c)
})";

TEST(GraphUtils, UsersAndDeadCode) {
  Graph g = parse_graph(kChain);
  auto users = compute_users(g);
  EXPECT_EQ(users[static_cast<size_t>(g.find("a"))], (std::vector<int>{g.find("b"), g.find("dead"), g.find("c")}));
  Graph d = eliminate_dead_code(g);
  EXPECT_EQ(d.find("dead"), -1);
  EXPECT_NE(d.find("unused"), -1);
  Graph p = prune_unused_inputs(g);
  EXPECT_EQ(p.find("unused"), -1);
  EXPECT_EQ(p.num_inputs(), 1);
}

TEST(GraphUtils, ExtractSubgraphTurnsCutNodesIntoInputs) {
  Graph g = parse_graph(kChain);
  Graph s = extract_subgraph(g, {g.find("c")}, {g.find("a")});
  EXPECT_EQ(print_graph(s), "graph c(%a: f32[4]) {\n  %b = neg(%a)\n  %c = mul(%b, %a)\n  return (%c)\n}\n");
}

TEST(GraphUtils, RebuildBypassesANode) {
  Graph g = parse_graph(kChain);
  std::vector<int> remap;
  for (int i = 0; i < g.size(); ++i) remap.push_back(i);
  std::vector<bool> keep(static_cast<size_t>(g.size()), true);
  remap[static_cast<size_t>(g.find("b"))] = g.find("a");  // c = mul(a, a)
  keep[static_cast<size_t>(g.find("b"))] = false;
  Graph r = rebuild_graph(g, remap, keep);
  EXPECT_NE(print_graph(r).find("%c = mul(%a, %a)"), std::string::npos) << print_graph(r);
}

TEST(GraphUtils, StructuralHashIgnoresNamesOnly) {
  Graph a = parse_graph("graph a(%x: f32[4]) {\n  %y = exp(%x)\n  return (%y)\n}");
  Graph b = parse_graph("graph b(%in: f32[4]) {\n  %out = exp(%in)\n  return (%out)\n}");
  Graph c = parse_graph("graph a(%x: f32[4]) {\n  %y = log(%x)\n  return (%y)\n}");
  Graph d = parse_graph("graph a(%x: f32[5]) {\n  %y = exp(%x)\n  return (%y)\n}");
  EXPECT_EQ(structural_hash(a), structural_hash(b));
  EXPECT_NE(structural_hash(a), structural_hash(c));
  EXPECT_NE(structural_hash(a), structural_hash(d));
}

TEST(GraphUtils, AddInputRenumbersTheBody) {
  Graph g = parse_graph(kChain);
  int c = g.find("c");
  TensorType extra;
  extra.shape = {4};
  int id = g.add_input("extra", extra);
  EXPECT_EQ(id, 2);
  EXPECT_EQ(g.find("c"), c + 1);
  EXPECT_EQ(g.outputs[0], c + 1);
  int n = g.add_node(g.fresh_name("a"), Op::add, {Operand::of(g.find("c")), Operand::of(id)});
  EXPECT_EQ(g.node(n).name, "a_1");
  EXPECT_EQ(g.node(n).type.str(), "f32[4]");
}

TEST(Examples, EveryExampleModelParses) {
  for (auto name : {"mlp", "attention", "embedding_classifier", "mixed_precision"}) {
    Module m = load_module_file(std::string(REPROKIT_SOURCE_DIR) + "/examples/" + name + ".rk");
    EXPECT_EQ(m.entry().name, name);
    EXPECT_EQ(print_graph(parse_graph(print_graph(m.entry()))), print_graph(m.entry()));
  }
}

// One rule for names everywhere: JSON (bundles) rejects what the text format cannot spell.
TEST(Names, JsonRejectsNamesOutsideTheRuleAndGeneratedCodeEscapesText) {
  for (std::string bad : std::vector<std::string>{"a\nb", "%s%n", "../x", "/tmp/x", "1abc", std::string(201, 'a'), ""}) {
    nlohmann::json j = {
        {"name", "g"}, {"inputs", {{{"name", bad}, {"dtype", "f32"}, {"shape", {2}}}}}, {"nodes", nlohmann::json::array()}, {"outputs", {bad}}};
    EXPECT_THROW(graph_from_json(j), UserError) << printable(bad);
  }
  EXPECT_TRUE(is_valid_name("layer.0_out"));
  EXPECT_EQ(c_string_literal("a\"b\n%s\\"), "\"a\\042b\\012\\045s\\134\"");
  EXPECT_EQ(utf8_safe("ok\xe2\x80\x98", 3), "ok");  // never half a character
  EXPECT_EQ(utf8_safe("a\xff"), "a?");
}
