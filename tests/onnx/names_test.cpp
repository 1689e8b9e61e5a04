// Foreign names mapped into reprokit's name rule: valid, deterministic, collision-free.
#include <gtest/gtest.h>

#include <set>

#include "onnx_test_util.h"
#include "reprokit/ir/names.h"
#include "reprokit/onnx/onnx_names.h"

namespace reprokit::testing {
namespace {

TEST(OnnxNames, SanitizesForeignNames) {
  EXPECT_EQ(sanitize_foreign_name("/layer.0/Add_output_0"), "_layer.0_Add_output_0");
  EXPECT_EQ(sanitize_foreign_name("onnx::Gemm_12"), "onnx__Gemm_12");
  EXPECT_EQ(sanitize_foreign_name("input.1"), "input.1");
  EXPECT_EQ(sanitize_foreign_name("0"), "v_0");
  EXPECT_EQ(sanitize_foreign_name(".x"), "v_.x");
  EXPECT_EQ(sanitize_foreign_name(""), "v_");
  EXPECT_EQ(sanitize_foreign_name("a b\xc3\xa9"), "a_b__");
  std::string longname(500, 'x');
  EXPECT_EQ(sanitize_foreign_name(longname).size(), kMaxNameLength);
  for (const std::string& s : std::vector<std::string>{"/layer.0/Add_output_0", "onnx::Gemm_12", "0", "", "9abc", "\n\t", std::string(300, '/')})
    EXPECT_TRUE(is_valid_name(sanitize_foreign_name(s))) << s;
}

TEST(OnnxNames, CollisionFreeAndDeterministic) {
  auto map_all = [](const std::vector<std::string>& names) {
    NameSet taken;
    taken.reserve("taken");
    ForeignNames f(taken);
    std::vector<std::string> out;
    for (const auto& n : names) out.push_back(f.map(n));
    EXPECT_EQ(f.map(names[0]), out[0]);  // mapped once
    return out;
  };
  std::string long_a = std::string(250, 'a') + "1", long_b = std::string(250, 'a') + "2";
  std::vector<std::string> names = {"a/b", "a:b", "a_b", "a.b", "taken", "a b", long_a, long_b, "0", "v_0"};
  auto first = map_all(names);
  EXPECT_EQ(first, map_all(names));
  std::set<std::string> distinct(first.begin(), first.end());
  EXPECT_EQ(distinct.size(), names.size());
  for (const auto& n : first) EXPECT_TRUE(is_valid_name(n)) << n;
  EXPECT_EQ(first[0], "a_b");
  EXPECT_EQ(first[1], "a_b_1");
  EXPECT_EQ(first[4], "taken_1");
}

TEST(OnnxNames, ImportedGraphUsesMappedNames) {
  ModelBuilder b(17, "my model/v1");
  b.input("input.1", F32, {2}).output("/out:0", F32);
  b.node("Relu", {"input.1"}, {"onnx::Relu_1"});
  b.node("Neg", {"onnx::Relu_1"}, {"/out:0"});
  ImportedModel m = b.import();
  EXPECT_EQ(m.graph.name, "my_model_v1");
  EXPECT_EQ(m.graph.node(0).name, "input.1");
  EXPECT_EQ(m.graph.node(1).name, "onnx__Relu_1");
  EXPECT_EQ(m.graph.node(m.graph.outputs[0]).name, "_out_0");
  EXPECT_EQ(m.output_sources, std::vector<std::string>{"/out:0"});
  EXPECT_EQ(m.input_sources, std::vector<std::string>{"input.1"});
}

}  // namespace
}  // namespace reprokit::testing
