// Shape and dtype inference: broadcasting and PyTorch's type promotion, checked op by op.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "all_ops.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/text_format.h"

using namespace reprokit;

static std::string type_of(const Graph& g, const char* name) { return g.node(g.find(name)).type.str(); }

TEST(Inference, EveryOpOfTheAllOpsGraph) {
  Graph g = parse_graph(kAllOpsGraph);
  struct {
    const char* name;
    const char* type;
  } expect[] = {{"neg", "f32[2, 3] grad"},     {"add", "f32[2, 3] grad"},     {"mul", "f32[2, 3] grad"},       {"eq", "bool[2, 3]"},
                {"where", "f32[2, 3] grad"},   {"to", "f16[2, 3] grad"},      {"sum", "f32[2, 1] grad"},       {"sumall", "i64[]"},
                {"mean", "f32[3] grad"},       {"amax", "f32[2] grad"},       {"amin", "f32[] grad"},          {"var", "f32[2] grad"},
                {"argmax", "i64[2]"},          {"ln", "f32[2, 3] grad"},      {"mm", "f32[2, 4] grad"},        {"lin", "f32[3, 10]"},
                {"reshape", "f32[3, 2] grad"}, {"permute", "f32[3, 2] grad"}, {"transpose", "f32[3, 2] grad"}, {"expand", "f32[4, 3]"},
                {"slice", "f32[2, 2] grad"},   {"cat", "f32[4, 3] grad"},     {"squeeze", "f32[2] grad"},      {"unsqueeze", "f32[1, 3]"},
                {"emb", "f32[5, 4]"},          {"gather", "f32[2, 3] grad"},  {"full", "f64[2, 2]"},           {"hh", "f16[2, 3]"},
                {"cumsum", "f32[2, 3] grad"},  {"icumsum", "i64[2, 3]"},      {"cumprod", "f32[2, 3] grad"},   {"sort", "f32[2, 3] grad"},
                {"argsort", "i64[2, 3]"},      {"topk", "f32[2, 2] grad"},    {"topki", "i64[1, 3]"}};
  for (auto& e : expect) EXPECT_EQ(type_of(g, e.name), e.type) << "node %" << e.name;
}

TEST(Inference, ScansAndSortsCheckTheirDimAndK) {
  auto error = [](const char* body) {
    try {
      parse_graph(fmt::format("graph t(%x: f32[2, 3], %s: f32[]) {{\n  {}\n  return (%y)\n}}", body));
    } catch (const std::exception& e) { return std::string(e.what()); }
    return std::string("(no error)");
  };
  EXPECT_NE(error("%y = cumsum(%x, dim=2)").find("dim 2 is out of range for rank 2"), std::string::npos);
  EXPECT_NE(error("%y = topk(%x, k=4)").find("node %y = topk: k = 4 is out of range for a dim of size 3"), std::string::npos)
      << error("%y = topk(%x, k=4)");
  EXPECT_NE(error("%y = topk_indices(%x, k=-1, dim=0)").find("k = -1 is out of range for a dim of size 2"), std::string::npos);
  EXPECT_NE(error("%y = topk(%s, k=0)").find("k = 0 for a 0-d input (it takes k = 1)"), std::string::npos);
  EXPECT_EQ(error("%y = topk(%s, k=1)"), "(no error)");
  EXPECT_EQ(error("%y = topk(%x, k=0, dim=0)"), "(no error)");
  EXPECT_EQ(error("%y = argsort(%s)"), "(no error)");
}

TEST(Inference, PromotionFollowsPyTorch) {
  Graph g = parse_graph(R"(graph p(%h: f16[2], %b: bf16[2], %f: f32[2], %i: i32[2], %l: i64[2], %q: bool[2]) {
  %hb = add(%h, %b)
  %hf = add(%h, %f)
  %il = add(%i, %l)
  %ih = mul(%i, %h)
  %i2 = mul(%i, 2)
  %i25 = mul(%i, 2.5)
  %h25 = mul(%h, 2.5)
  %qi = add(%q, 1)
  %div = div(%i, %l)
  %ex = exp(%i)
  %ab = abs(%i)
  %si = sum(%i)
  return (%hb, %hf, %il, %ih, %i2, %i25, %h25, %qi, %div, %ex, %ab, %si)
})");
  EXPECT_EQ(type_of(g, "hb"), "f32[2]");
  EXPECT_EQ(type_of(g, "hf"), "f32[2]");
  EXPECT_EQ(type_of(g, "il"), "i64[2]");
  EXPECT_EQ(type_of(g, "ih"), "f16[2]");
  EXPECT_EQ(type_of(g, "i2"), "i32[2]");
  EXPECT_EQ(type_of(g, "i25"), "f32[2]");
  EXPECT_EQ(type_of(g, "h25"), "f16[2]");
  EXPECT_EQ(type_of(g, "qi"), "i64[2]");
  EXPECT_EQ(type_of(g, "div"), "f32[2]");
  EXPECT_EQ(type_of(g, "ex"), "f32[2]");
  EXPECT_EQ(type_of(g, "ab"), "i32[2]");
  EXPECT_EQ(type_of(g, "si"), "i64[]");
}

// A 0-d tensor promotes a tensor with dimensions only across categories (torch.result_type):
// maximum(f32[1, 1], f64[]) is f32, which a generated graph through Inductor showed.
TEST(Inference, AZeroDimTensorPromotesOnlyAcrossCategories) {
  Graph g = parse_graph(R"(graph z(%f: f32[2], %i: i32[2], %d: f64[], %h: f16[], %l: i64[], %q: bool[2]) {
  %fd = maximum(%f, %d)
  %id = add(%i, %d)
  %il = add(%i, %l)
  %ql = mul(%q, %l)
  %dh = add(%d, %h)
  %lt = lt(%f, %d)
  %fd2 = where(%q, %f, %d)
  return (%fd, %id, %il, %ql, %dh, %lt, %fd2)
})");
  EXPECT_EQ(type_of(g, "fd"), "f32[2]");
  EXPECT_EQ(type_of(g, "id"), "f64[2]");
  EXPECT_EQ(type_of(g, "il"), "i32[2]");
  EXPECT_EQ(type_of(g, "ql"), "i64[2]");
  EXPECT_EQ(type_of(g, "dh"), "f64[]");
  EXPECT_EQ(type_of(g, "lt"), "bool[2]");
  EXPECT_EQ(type_of(g, "fd2"), "f32[2]");
}

TEST(Inference, BatchedMatmulBroadcastsBatchDims) {
  Graph g = parse_graph("graph m(%a: f32[5, 1, 2, 3], %b: f32[4, 3, 7]) {\n  %c = matmul(%a, %b)\n  return (%c)\n}");
  EXPECT_EQ(type_of(g, "c"), "f32[5, 4, 2, 7]");
}

TEST(Inference, SliceClampsLikePython) {
  Graph g = parse_graph(
      "graph s(%x: f32[10]) {\n  %a = slice(%x, dim=0, start=-3, end=100)\n  %b = slice(%x, dim=0, start=8, end=2)\n  %c = slice(%x, dim=0, start=1, "
      "end=10, step=3)\n  return (%a, %b, %c)\n}");
  EXPECT_EQ(type_of(g, "a"), "f32[3]");
  EXPECT_EQ(type_of(g, "b"), "f32[0]");
  EXPECT_EQ(type_of(g, "c"), "f32[3]");
}

TEST(Inference, PromoteTypesTable) {
  EXPECT_EQ(promote_types(DType::boolean, DType::i32), DType::i32);
  EXPECT_EQ(promote_types(DType::i64, DType::f16), DType::f16);
  EXPECT_EQ(promote_types(DType::bf16, DType::f16), DType::f32);
  EXPECT_EQ(promote_types(DType::f32, DType::f64), DType::f64);
  EXPECT_EQ(promote_with_scalar(DType::boolean, ScalarKind::integer), DType::i64);
  EXPECT_EQ(promote_with_scalar(DType::bf16, ScalarKind::floating), DType::bf16);
}

// An extremum over an empty dim has no value; over a non-empty dim of an empty tensor it is an
// empty result (as in PyTorch), which a pooling gradient's export of a batch of 0 needs.
TEST(Inference, AnExtremumIsRefusedOnlyOverAnEmptyDim) {
  auto error = [](const char* body) {
    try {
      parse_graph(fmt::format("graph t(%e: f32[2, 0, 3]) {{\n  {}\n  return (%y)\n}}", body));
    } catch (const std::exception& e) { return std::string(e.what()); }
    return std::string("(no error)");
  };
  EXPECT_NE(error("%y = argmax(%e, dim=1)").find("node %y = argmax: argmax over dim 1, which is empty"), std::string::npos)
      << error("%y = argmax(%e, dim=1)");
  EXPECT_NE(error("%y = argmax(%e)").find("argmax over dim 1, which is empty"), std::string::npos);
  EXPECT_NE(error("%y = amax(%e, dims=[0, 1])").find("amax over dim 1, which is empty"), std::string::npos);
  EXPECT_NE(error("%y = amin(%e)").find("amin over dim 1, which is empty"), std::string::npos);
  EXPECT_EQ(error("%y = argmax(%e, dim=2)"), "(no error)");
  EXPECT_EQ(error("%y = amax(%e, dims=[0, 2])"), "(no error)");
  EXPECT_EQ(type_of(parse_graph("graph t(%e: f32[2, 0, 3]) {\n  %y = argmax(%e, dim=2)\n  return (%y)\n}"), "y"), "i64[2, 0]");
}
