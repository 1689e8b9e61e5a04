// Which units of the generated C++ hold pointwise loops only (cpp_codegen.h: pointwise_units):
// those compile without partial redundancy elimination (cpp_toolchain.cpp), every other unit with
// the full -O3, so a unit holding a window or a library call must never be counted pointwise.
#include <gtest/gtest.h>

#include <string>

#include "../../src/codegen/cpp_codegen.h"
#include "reprokit/codegen/lowering.h"
#include "reprokit/ir/text_format.h"

using namespace reprokit;

namespace {

// The C++ the cpp backend renders for the graph: after its decompositions and passes (fusion).
CppSource rendered(const std::string& text) {
  CompileOptions options;
  options.backend = "cpp";
  return render_cpp(lower_for_codegen(parse_graph(text), options, nullptr), {});
}

// The generated units (after the kernels units), each with whether it counts as pointwise.
std::vector<std::pair<std::string, bool>> generated_units(const CppSource& s) {
  EXPECT_EQ(s.pointwise_units.size(), s.units.size());
  std::vector<std::pair<std::string, bool>> out;
  for (size_t i = s.library_units; i < s.units.size() && i < s.pointwise_units.size(); ++i) out.emplace_back(s.units[i], s.pointwise_units[i]);
  return out;
}

TEST(CppPointwiseUnits, AChainOfElementwiseOpsIsPointwiseThroughout) {
  std::string text = "graph chain(%x: f32[16]) {\n";
  const char* ops[] = {"neg", "relu", "abs", "sin", "cos", "tanh"};
  for (int i = 0; i < 3000; ++i) text += "  %n" + std::to_string(i) + " = " + ops[i % 6] + "(%" + (i ? "n" + std::to_string(i - 1) : "x") + ")\n";
  text += "  return (%n2999)\n}\n";
  const CppSource s = rendered(text);
  EXPECT_EQ(s.library_units, 0u);
  const auto units = generated_units(s);
  ASSERT_GT(units.size(), 1u);  // long enough for several units
  for (const auto& [unit, pointwise] : units) EXPECT_TRUE(pointwise) << unit.substr(s.prelude.size(), 400);
}

TEST(CppPointwiseUnits, AUnitWithAConvAReductionOrAWindowIsNot) {
  // Each graph's one unit holds a kernel that is not a pointwise loop, beside pointwise ones.
  const char* graphs[] = {
      "graph g(%x: f32[1, 8, 9, 9], %w: f32[8, 8, 3, 3]) {\n  %y = conv2d(%x, %w, padding=[1, 1])\n  %z = relu(%y)\n  %e = exp(%x)\n"
      "  return (%z, %e)\n}",
      "graph g(%x: f32[4, 32]) {\n  %e = exp(%x)\n  %s = sum(%e, dims=[1], keepdim=true)\n  %d = div(%e, %s)\n  return (%d)\n}",
      "graph g(%x: f32[1, 4, 8, 8]) {\n  %n = neg(%x)\n  %p = max_pool2d(%n, kernel=[2, 2], stride=[2, 2])\n  return (%p)\n}",
      "graph g(%a: f32[8, 16], %b: f32[16, 8]) {\n  %c = matmul(%a, %b)\n  %t = tanh(%c)\n  return (%t)\n}",
  };
  for (const char* text : graphs) {
    const CppSource s = rendered(text);
    const auto units = generated_units(s);
    ASSERT_FALSE(units.empty()) << text;
    bool any_other = false;
    for (const auto& u : units) any_other = any_other || !u.second;
    EXPECT_TRUE(any_other) << text;
    for (size_t i = 0; i < s.library_units; ++i) EXPECT_FALSE(s.pointwise_units[i]) << "kernels unit " << i << " of " << text;
  }
}

}  // namespace
