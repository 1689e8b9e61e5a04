// Reference kernels against independent, hand-computed values: at least one case per op.
#include <fmt/core.h>
#include <gtest/gtest.h>
#include "reprokit/runtime/input_gen.h"

#include <cmath>
#include <set>

#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/runtime/interpreter.h"

using namespace reprokit;

namespace {

struct Case {
  const char* op;     // the op this case covers
  const char* graph;  // .rk text
  std::vector<std::vector<double>> inputs;
  std::vector<double> expected;  // of the first output
  double tol = 1e-6;
};

std::vector<double> run_case(const Case& c, bool f64 = false) {
  Graph g = parse_graph(c.graph);
  std::vector<Tensor> ins;
  for (int i = 0; i < g.num_inputs(); ++i)
    ins.push_back(Tensor::from_doubles(g.node(i).type.dtype, g.node(i).type.shape, c.inputs.at(static_cast<size_t>(i))));
  InterpretOptions o;
  o.cast_to_f64 = f64;
  return interpret(g, ins, o).at(0).to_doubles();
}

const double kNan = std::nan("");

const std::vector<Case>& cases() {
  static const std::vector<Case> cs = {
      {"neg", "graph t(%x: f32[3]) { %y = neg(%x)\n return (%y) }", {{1, -2, 0}}, {-1, 2, 0}},
      {"abs", "graph t(%x: f32[3]) { %y = abs(%x)\n return (%y) }", {{1, -2, 0}}, {1, 2, 0}},
      {"exp", "graph t(%x: f64[2]) { %y = exp(%x)\n return (%y) }", {{0, 1}}, {1, 2.718281828459045}},
      {"log", "graph t(%x: f64[2]) { %y = log(%x)\n return (%y) }", {{1, 2.718281828459045}}, {0, 1}},
      {"sqrt", "graph t(%x: f32[2]) { %y = sqrt(%x)\n return (%y) }", {{4, 2.25}}, {2, 1.5}},
      {"rsqrt", "graph t(%x: f32[2]) { %y = rsqrt(%x)\n return (%y) }", {{4, 0.25}}, {0.5, 2}},
      {"reciprocal", "graph t(%x: f32[2]) { %y = reciprocal(%x)\n return (%y) }", {{4, -0.5}}, {0.25, -2}},
      {"sin", "graph t(%x: f64[2]) { %y = sin(%x)\n return (%y) }", {{0, M_PI / 2}}, {0, 1}},
      {"cos", "graph t(%x: f64[2]) { %y = cos(%x)\n return (%y) }", {{0, M_PI}}, {1, -1}},
      {"tanh", "graph t(%x: f64[2]) { %y = tanh(%x)\n return (%y) }", {{0, 0.5}}, {0, 0.46211715726000974}},
      {"sigmoid", "graph t(%x: f64[2]) { %y = sigmoid(%x)\n return (%y) }", {{0, 2}}, {0.5, 0.8807970779778823}},
      {"relu", "graph t(%x: f32[3]) { %y = relu(%x)\n return (%y) }", {{-1, 0, 3}}, {0, 0, 3}},
      {"gelu", "graph t(%x: f64[2]) { %y = gelu(%x)\n return (%y) }", {{1, -1}}, {0.8413447460685429, -0.15865525393145707}},
      {"gelu", "graph t(%x: f64[1]) { %y = gelu(%x, approximate=\"tanh\")\n return (%y) }", {{1}}, {0.8411919906082768}},
      {"silu", "graph t(%x: f64[2]) { %y = silu(%x)\n return (%y) }", {{0, 1}}, {0, 0.7310585786300049}},
      {"erf", "graph t(%x: f64[2]) { %y = erf(%x)\n return (%y) }", {{0, 1}}, {0, 0.8427007929497149}},
      {"add", "graph t(%x: f32[2, 2], %y: f32[2]) { %z = add(%x, %y)\n return (%z) }", {{1, 2, 3, 4}, {10, 20}}, {11, 22, 13, 24}},
      {"sub", "graph t(%x: f32[2, 1], %y: f32[3]) { %z = sub(%x, %y)\n return (%z) }", {{1, 2}, {1, 2, 3}}, {0, -1, -2, 1, 0, -1}},
      {"mul", "graph t(%x: i32[3]) { %z = mul(%x, 3)\n return (%z) }", {{1, -2, 5}}, {3, -6, 15}},
      {"div", "graph t(%x: i64[3], %y: i64[3]) { %z = div(%x, %y)\n return (%z) }", {{1, 7, -3}, {2, 2, 2}}, {0.5, 3.5, -1.5}},
      {"pow", "graph t(%x: f32[3]) { %z = pow(%x, 2.0)\n return (%z) }", {{3, -2, 0.5}}, {9, 4, 0.25}},
      {"maximum", "graph t(%x: f32[3], %y: f32[3]) { %z = maximum(%x, %y)\n return (%z) }", {{1, 5, kNan}, {2, 3, 0}}, {2, 5, kNan}},
      {"minimum", "graph t(%x: f32[3], %y: f32[3]) { %z = minimum(%x, %y)\n return (%z) }", {{1, 5, 0}, {2, 3, 0}}, {1, 3, 0}},
      {"eq", "graph t(%x: f32[3]) { %z = eq(%x, 1.0)\n return (%z) }", {{1, 2, 1}}, {1, 0, 1}},
      {"ne", "graph t(%x: f32[3]) { %z = ne(%x, 1.0)\n return (%z) }", {{1, 2, 1}}, {0, 1, 0}},
      {"lt", "graph t(%x: i32[3]) { %z = lt(%x, 2)\n return (%z) }", {{1, 2, 3}}, {1, 0, 0}},
      {"le", "graph t(%x: i32[3]) { %z = le(%x, 2)\n return (%z) }", {{1, 2, 3}}, {1, 1, 0}},
      {"gt", "graph t(%x: i32[3]) { %z = gt(%x, 2)\n return (%z) }", {{1, 2, 3}}, {0, 0, 1}},
      {"ge", "graph t(%x: i32[3]) { %z = ge(%x, 2)\n return (%z) }", {{1, 2, 3}}, {0, 1, 1}},
      {"where", "graph t(%c: bool[3], %x: f32[3]) { %z = where(%c, %x, -1.0)\n return (%z) }", {{1, 0, 1}, {5, 6, 7}}, {5, -1, 7}},
      {"to", "graph t(%x: f32[3]) { %z = to(%x, dtype=i32)\n return (%z) }", {{1.7, -2.7, 0.2}}, {1, -2, 0}},
      {"clone", "graph t(%x: f32[2]) { %z = clone(%x)\n return (%z) }", {{1, 2}}, {1, 2}},
      {"sum", "graph t(%x: f32[2, 3]) { %z = sum(%x, dims=[1])\n return (%z) }", {{1, 2, 3, 4, 5, 6}}, {6, 15}},
      {"sum", "graph t(%x: bool[4]) { %z = sum(%x)\n return (%z) }", {{1, 0, 1, 1}}, {3}},
      {"mean", "graph t(%x: f32[2, 3]) { %z = mean(%x, dims=[0], keepdim=true)\n return (%z) }", {{1, 2, 3, 4, 5, 6}}, {2.5, 3.5, 4.5}},
      {"amax", "graph t(%x: f32[2, 3]) { %z = amax(%x, dims=[1])\n return (%z) }", {{1, 9, 3, 4, 5, -6}}, {9, 5}},
      {"amin", "graph t(%x: f32[2, 3]) { %z = amin(%x)\n return (%z) }", {{1, 9, 3, 4, 5, -6}}, {-6}},
      {"var", "graph t(%x: f64[4]) { %z = var(%x)\n return (%z) }", {{1, 2, 3, 4}}, {1.6666666666666667}},
      {"var", "graph t(%x: f64[4]) { %z = var(%x, correction=0)\n return (%z) }", {{1, 2, 3, 4}}, {1.25}},
      {"argmax", "graph t(%x: f32[2, 3]) { %z = argmax(%x, dim=1)\n return (%z) }", {{1, 9, 9, 4, 5, -6}}, {1, 1}},
      {"argmax", "graph t(%x: f32[2, 2]) { %z = argmax(%x)\n return (%z) }", {{1, 2, 7, 3}}, {2}},
      {"softmax", "graph t(%x: f64[2]) { %z = softmax(%x, dim=0)\n return (%z) }", {{0, std::log(3.0)}}, {0.25, 0.75}},
      {"log_softmax", "graph t(%x: f64[2]) { %z = log_softmax(%x, dim=-1)\n return (%z) }", {{0, std::log(3.0)}}, {std::log(0.25), std::log(0.75)}},
      {"layer_norm",
       "graph t(%x: f64[1, 2], %w: f64[2], %b: f64[2]) { %z = layer_norm(%x, %w, %b, normalized_shape=[2], eps=0.0)\n return (%z) }",
       {{1, 3}, {2, 1}, {0, 10}},
       {-2, 11}},
      {"matmul", "graph t(%a: f32[2, 2], %b: f32[2, 1]) { %z = matmul(%a, %b)\n return (%z) }", {{1, 2, 3, 4}, {5, 6}}, {17, 39}},
      {"matmul", "graph t(%a: f32[2, 1, 2], %b: f32[2, 1]) { %z = matmul(%a, %b)\n return (%z) }", {{1, 2, 3, 4}, {1, 1}}, {3, 7}},
      {"linear",
       "graph t(%x: f32[1, 2], %w: f32[3, 2], %b: f32[3]) { %z = linear(%x, %w, %b)\n return (%z) }",
       {{1, 2}, {1, 0, 0, 1, 1, 1}, {0, 10, 100}},
       {1, 12, 103}},
      {"reshape", "graph t(%x: f32[2, 3]) { %z = reshape(%x, shape=[3, -1])\n return (%z) }", {{1, 2, 3, 4, 5, 6}}, {1, 2, 3, 4, 5, 6}},
      {"permute", "graph t(%x: f32[2, 3]) { %z = permute(%x, dims=[1, 0])\n return (%z) }", {{1, 2, 3, 4, 5, 6}}, {1, 4, 2, 5, 3, 6}},
      {"transpose", "graph t(%x: f32[1, 2, 2]) { %z = transpose(%x, 1, 2)\n return (%z) }", {{1, 2, 3, 4}}, {1, 3, 2, 4}},
      {"expand", "graph t(%x: f32[2, 1]) { %z = expand(%x, shape=[2, 3])\n return (%z) }", {{1, 2}}, {1, 1, 1, 2, 2, 2}},
      {"slice", "graph t(%x: f32[2, 4]) { %z = slice(%x, dim=1, start=1, end=100, step=2)\n return (%z) }", {{1, 2, 3, 4, 5, 6, 7, 8}}, {2, 4, 6, 8}},
      {"cat", "graph t(%x: f32[2, 1], %y: f32[2, 2]) { %z = cat(%x, %y, dim=1)\n return (%z) }", {{1, 2}, {3, 4, 5, 6}}, {1, 3, 4, 2, 5, 6}},
      {"squeeze", "graph t(%x: f32[2, 1]) { %z = squeeze(%x, 1)\n return (%z) }", {{1, 2}}, {1, 2}},
      {"unsqueeze", "graph t(%x: f32[2]) { %z = unsqueeze(%x, 0)\n return (%z) }", {{1, 2}}, {1, 2}},
      {"contiguous", "graph t(%x: f32[2, 2] strides=[1, 2]) { %z = contiguous(%x)\n return (%z) }", {{1, 2, 3, 4}}, {1, 2, 3, 4}},
      {"embedding", "graph t(%w: f32[3, 2], %i: i64[2]) { %z = embedding(%w, %i)\n return (%z) }", {{1, 2, 3, 4, 5, 6}, {2, 0}}, {5, 6, 1, 2}},
      {"gather",
       "graph t(%x: f32[2, 3], %i: i64[2, 2]) { %z = gather(%x, %i, dim=1)\n return (%z) }",
       {{1, 2, 3, 4, 5, 6}, {2, 0, 1, 1}},
       {3, 1, 5, 5}},
      {"full", "graph t() { %z = full(shape=[2], value=2.5, dtype=f32)\n return (%z) }", {}, {2.5, 2.5}},
      {"clamp", "graph t(%x: f32[3]) { %z = clamp(%x, min=0, max=2.0)\n return (%z) }", {{-1, 0.5, 3}}, {0, 0.5, 2}},
      {"clamp", "graph t(%x: i64[2]) { %z = clamp(%x, min=2, max=1)\n return (%z) }", {{0, 5}}, {1, 1}},  // min > max: max
      {"batch_norm",
       "graph t(%x: f64[1, 2, 1, 2], %m: f64[2], %v: f64[2], %w: f64[2], %b: f64[2]) { %z = batch_norm(%x, %m, %v, %w, %b, eps=0.0)\n return (%z) }",
       {{1, 3, 2, 4}, {1, 2}, {4, 1}, {1, 2}, {0, 1}},
       {0, 1, 1, 5}},
      // group_norm: groups {c0, c1} = {0, 2, 0, 2} (mean 1, var 1) and {c2, c3} = {1, 1, 3, 3} (mean 2, var 1).
      {"group_norm",
       "graph t(%x: f64[1, 4, 2], %w: f64[4], %b: f64[4]) { %z = group_norm(%x, %w, %b, num_groups=2, eps=0.0)\n return (%z) }",
       {{0, 2, 0, 2, 1, 1, 3, 3}, {1, 2, 3, 4}, {0, 0, 0, 1}},
       {-1, 1, -2, 2, -3, -3, 5, 5}},
      {"group_norm", "graph t(%x: f64[2, 2, 1]) { %z = group_norm(%x, num_groups=1, eps=0.0)\n return (%z) }", {{1, 3, 10, 14}}, {-1, 1, -1, 1}},
      {"instance_norm",
       "graph t(%x: f64[1, 2, 2], %w: f64[2], %b: f64[2]) { %z = instance_norm(%x, %w, %b, eps=0.0)\n return (%z) }",
       {{0, 2, 5, 7}, {2, 1}, {1, 0}},
       {-1, 3, -1, 1}},
      {"instance_norm",
       "graph t(%x: f64[1, 1, 2, 2]) { %z = instance_norm(%x, eps=1.0)\n return (%z) }",
       {{0, 0, 2, 2}},
       {-std::sqrt(0.5), -std::sqrt(0.5), std::sqrt(0.5), std::sqrt(0.5)}},
      // no channels: nothing to normalize (and no groups to divide them into)
      {"instance_norm", "graph t(%x: f64[2, 0, 3]) { %z = instance_norm(%x)\n return (%z) }", {{}}, {}},
      // pixel_shuffle: channel k = i * 2 + j of [4, 1, 2] lands at row i, column w * 2 + j.
      {"pixel_shuffle",
       "graph t(%x: f32[1, 4, 1, 2]) { %z = pixel_shuffle(%x, upscale_factor=2)\n return (%z) }",
       {{0, 1, 10, 11, 20, 21, 30, 31}},
       {0, 10, 1, 11, 20, 30, 21, 31}},
      {"pixel_shuffle", "graph t(%x: i64[4, 1, 1]) { %z = pixel_shuffle(%x, upscale_factor=2)\n return (%z) }", {{1, 2, 3, 4}}, {1, 2, 3, 4}},
      {"pixel_unshuffle",
       "graph t(%x: f32[1, 1, 2, 4]) { %z = pixel_unshuffle(%x, downscale_factor=2)\n return (%z) }",
       {{0, 10, 1, 11, 20, 30, 21, 31}},
       {0, 1, 10, 11, 20, 21, 30, 31}},
      {"einsum",
       "graph t(%a: f64[2, 2], %b: f64[2, 3]) { %z = einsum(%a, %b, equation=\"ij,jk->ik\")\n return (%z) }",
       {{1, 2, 3, 4}, {1, 0, 2, 0, 1, 3}},
       {1, 2, 8, 3, 4, 18}},
      {"einsum", "graph t(%a: f64[2, 3]) { %z = einsum(%a, equation=\"ij -> ji\")\n return (%z) }", {{1, 2, 3, 4, 5, 6}}, {1, 4, 2, 5, 3, 6}},
      {"einsum", "graph t(%a: f64[3], %b: f64[3]) { %z = einsum(%a, %b, equation=\"i,i\")\n return (%z) }", {{1, 2, 3}, {4, 5, 6}}, {32}},
      // implicit output "i" (the letter used once): sum over j, k of a[i, j] b[k, j] c[k] = 1 + 20 + 300.
      {"einsum",
       "graph t(%a: f64[1, 2], %b: f64[3, 2], %c: f64[3]) { %z = einsum(%a, %b, %c, equation=\"ij,kj,k\")\n return (%z) }",
       {{1, 2}, {1, 0, 0, 1, 1, 1}, {1, 10, 100}},
       {321}},
      // grid_sample and affine_grid: the expected values are PyTorch 2.13's F.grid_sample and
      // F.affine_grid on the same float64 tensors. x is 1..6 as [1, 1, 2, 3].
      {"grid_sample",
       "graph t(%x: f64[1, 1, 2, 3], %g: f64[1, 1, 4, 2]) { %z = grid_sample(%x, %g)\n return (%z) }",
       {{1, 2, 3, 4, 5, 6}, {-1, -1, 0.1, 0.3, 0.9, -0.7, 1.2, 0.0}},
       {0.25, 4.55, 1.56, 0.9}},
      // Nearest with align_corners: 1.5 rounds to 2 and 0.5 to 0 (halves to even); zeros padding
      // drops the point outside, border padding clamps it.
      {"grid_sample",
       "graph t(%x: f64[1, 1, 2, 3], %g: f64[1, 1, 4, 2]) { %z = grid_sample(%x, %g, mode=\"nearest\", padding_mode=\"border\", "
       "align_corners=true)\n return (%z) }",
       {{1, 2, 3, 4, 5, 6}, {0.5, 0.0, -0.5, 1.0, 1.5, -3.0, -0.2, 0.6}},
       {3, 4, 3, 5}},
      {"grid_sample",
       "graph t(%x: f64[1, 1, 2, 3], %g: f64[1, 1, 4, 2]) { %z = grid_sample(%x, %g, mode=\"nearest\", align_corners=true)\n return (%z) }",
       {{1, 2, 3, 4, 5, 6}, {0.5, 0.0, -0.5, 1.0, 1.5, -3.0, -0.2, 0.6}},
       {3, 4, 0, 5}},
      {"grid_sample",
       "graph t(%x: f64[1, 1, 2, 3], %g: f64[1, 1, 3, 2]) { %z = grid_sample(%x, %g, padding_mode=\"reflection\")\n return (%z) }",
       {{1, 2, 3, 4, 5, 6}, {1.7, -2.3, -1.4, 0.2, 3.1, 0.9}},
       {4.85, 3.2, 4.0}},
      {"grid_sample",
       "graph t(%x: f64[1, 1, 2, 3], %g: f64[1, 1, 3, 2]) { %z = grid_sample(%x, %g, padding_mode=\"reflection\", align_corners=true)\n return (%z) "
       "}",
       {{1, 2, 3, 4, 5, 6}, {1.7, -2.3, -1.4, 0.2, 3.1, 0.9}},
       {4.25, 3.2, 3.95}},
      {"affine_grid",
       "graph t(%t: f64[1, 2, 3]) { %z = affine_grid(%t, size=[1, 1, 2, 3])\n return (%z) }",
       {{1, 0.5, 0.25, -0.5, 2, 1}},
       {-2.0 / 3, 1.0 / 3, 0, 0, 2.0 / 3, -1.0 / 3, -1.0 / 6, 7.0 / 3, 0.5, 2, 7.0 / 6, 5.0 / 3}},
      {"affine_grid",
       "graph t(%t: f64[1, 2, 3]) { %z = affine_grid(%t, size=[1, 1, 2, 3], align_corners=true)\n return (%z) }",
       {{1, 0.5, 0.25, -0.5, 2, 1}},
       {-1.25, -0.5, -0.25, -1, 0.75, -1.5, -0.25, 3.5, 0.75, 3, 1.75, 2.5}},
      // One row: its y is 0, not -1 (torch.linspace's single step).
      {"affine_grid",
       "graph t(%t: f64[1, 2, 3]) { %z = affine_grid(%t, size=[1, 1, 1, 3], align_corners=true)\n return (%z) }",
       {{1, 0.5, 0.25, -0.5, 2, 1}},
       {-0.75, 1.5, 0.25, 1, 1.25, 0.5}},
      {"conv2d",
       "graph t(%x: f32[1, 1, 3, 3], %w: f32[1, 1, 2, 2], %b: f32[1]) { %z = conv2d(%x, %w, %b)\n return (%z) }",
       {{1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 0, 0, 1}, {10}},
       {16, 18, 22, 24}},
      {"conv2d",
       "graph t(%x: f32[1, 2, 2, 2], %w: f32[2, 1, 1, 1]) { %z = conv2d(%x, %w, groups=2)\n return (%z) }",
       {{1, 2, 3, 4, 5, 6, 7, 8}, {2, 3}},
       {2, 4, 6, 8, 15, 18, 21, 24}},
      {"conv2d",
       "graph t(%x: f32[1, 1, 3, 3], %w: f32[1, 1, 1, 1]) { %z = conv2d(%x, %w, stride=[2, 2], padding=[1, 1])\n return (%z) }",
       {{1, 2, 3, 4, 5, 6, 7, 8, 9}, {1}},
       {0, 0, 0, 0, 5, 0, 0, 0, 0}},
      {"max_pool2d",
       "graph t(%x: f32[1, 1, 3, 3]) { %z = max_pool2d(%x, kernel=[2, 2], stride=[1, 1])\n return (%z) }",
       {{1, 2, 3, 4, 5, 6, 7, 8, 9}},
       {5, 6, 8, 9}},
      {"max_pool2d",
       "graph t(%x: f32[1, 1, 3, 3]) { %z = max_pool2d(%x, kernel=[2, 2], ceil_mode=true)\n return (%z) }",
       {{1, 2, 3, 4, 5, 6, 7, 8, 9}},
       {5, 6, 8, 9}},
      {"avg_pool2d",
       "graph t(%x: f32[1, 1, 3, 3]) { %z = avg_pool2d(%x, kernel=[2, 2], padding=[1, 1])\n return (%z) }",
       {{1, 2, 3, 4, 5, 6, 7, 8, 9}},
       {0.25, 1.25, 2.75, 7}},
      {"avg_pool2d",
       "graph t(%x: f32[1, 1, 3, 3]) { %z = avg_pool2d(%x, kernel=[2, 2], padding=[1, 1], count_include_pad=false)\n return (%z) }",
       {{1, 2, 3, 4, 5, 6, 7, 8, 9}},
       {1, 2.5, 5.5, 7}},
      {"adaptive_avg_pool2d",
       "graph t(%x: f32[1, 1, 3, 3]) { %z = adaptive_avg_pool2d(%x, output_size=[2, 2])\n return (%z) }",
       {{1, 2, 3, 4, 5, 6, 7, 8, 9}},
       {3, 4, 6, 7}},
      {"max_pool2d_backward",
       "graph t(%g: f32[1, 1, 2, 2], %x: f32[1, 1, 3, 3]) { %z = max_pool2d_backward(%g, %x, kernel=[2, 2], stride=[1, 1])\n return (%z) }",
       {{1, 2, 3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9}},
       {0, 0, 0, 0, 1, 2, 0, 3, 4}},
      {"avg_pool2d_backward",
       "graph t(%g: f32[1, 1, 2, 2], %x: f32[1, 1, 3, 3]) { %z = avg_pool2d_backward(%g, %x, kernel=[2, 2], stride=[1, 1])\n return (%z) }",
       {{4, 4, 4, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9}},
       {1, 2, 1, 2, 4, 2, 1, 2, 1}},
      {"conv3d",
       "graph t(%x: f32[1, 1, 2, 2, 2], %w: f32[1, 1, 2, 2, 2], %b: f32[1]) { %z = conv3d(%x, %w, %b)\n return (%z) }",
       {{1, 2, 3, 4, 5, 6, 7, 8}, {1, 0, 0, 0, 0, 0, 0, 1}, {10}},
       {19}},
      {"conv3d",
       "graph t(%x: f32[1, 1, 2, 2, 2], %w: f32[1, 1, 1, 2, 1]) { %z = conv3d(%x, %w, padding=[0, 1, 0])\n return (%z) }",
       {{1, 2, 3, 4, 5, 6, 7, 8}, {1, 1}},
       {1, 2, 4, 6, 3, 4, 5, 6, 12, 14, 7, 8}},
      {"conv3d",
       "graph t(%x: f32[1, 2, 1, 1, 2], %w: f32[2, 1, 1, 1, 1]) { %z = conv3d(%x, %w, stride=[1, 1, 2], groups=2)\n return (%z) }",
       {{1, 2, 3, 4}, {2, 3}},
       {2, 9}},
      {"max_pool3d",
       "graph t(%x: f32[1, 1, 2, 2, 3]) { %z = max_pool3d(%x, kernel=[2, 2, 2], stride=[1, 1, 1])\n return (%z) }",
       {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
       {11, 12}},
      {"max_pool3d",
       "graph t(%x: f32[1, 1, 2, 2, 3]) { %z = max_pool3d(%x, kernel=[1, 2, 2], ceil_mode=true)\n return (%z) }",
       {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
       {5, 6, 11, 12}},
      {"avg_pool3d",
       "graph t(%x: f32[1, 1, 2, 2, 2]) { %z = avg_pool3d(%x, kernel=[2, 2, 2], padding=[1, 0, 0])\n return (%z) }",
       {{1, 2, 3, 4, 5, 6, 7, 8}},
       {1.25, 3.25}},
      {"avg_pool3d",
       "graph t(%x: f32[1, 1, 2, 2, 2]) { %z = avg_pool3d(%x, kernel=[2, 2, 2], padding=[1, 0, 0], count_include_pad=false)\n return (%z) }",
       {{1, 2, 3, 4, 5, 6, 7, 8}},
       {2.5, 6.5}},
      {"max_pool3d_backward",
       "graph t(%g: f32[1, 1, 1, 1, 2], %x: f32[1, 1, 2, 2, 3]) { %z = max_pool3d_backward(%g, %x, kernel=[2, 2, 2], stride=[1, 1, 1])\n return (%z) "
       "}",
       {{1, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
       {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2}},
      {"avg_pool3d_backward",
       "graph t(%g: f32[1, 1, 1, 1, 2], %x: f32[1, 1, 2, 2, 3]) { %z = avg_pool3d_backward(%g, %x, kernel=[2, 2, 2], stride=[1, 1, 1])\n return (%z) "
       "}",
       {{8, 16}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
       {1, 3, 2, 1, 3, 2, 1, 3, 2, 1, 3, 2}},
      // index [[2, 0], [-1, 2]] along dim 1 (-1 is the last): src's third column is not read, two
      // adds land on [1][2]; as torch.scatter_add with the index normalized.
      {"scatter_add",
       "graph t(%x: f32[2, 3], %i: i64[2, 2], %s: f32[2, 3]) { %z = scatter_add(%x, %i, %s, dim=1)\n return (%z) }",
       {{1, 2, 3, 4, 5, 6}, {2, 0, -1, 2}, {10, 20, 30, 40, 50, 60}},
       {21, 2, 13, 4, 5, 96}},
      // A convolution's gradients, as torch.ops.aten.convolution_backward gives them (float64).
      {"conv2d_input_grad",
       "graph t(%g: f32[1, 1, 2, 2], %x: f32[1, 1, 3, 3], %w: f32[1, 1, 2, 2]) { %z = conv2d_input_grad(%g, %x, %w)\n return (%z) }",
       {{1, 2, 3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 0, 0, -1}},
       {1, 2, 0, 3, 3, -2, 0, -3, -4}},
      {"conv2d_weight_grad",
       "graph t(%g: f32[1, 1, 2, 2], %x: f32[1, 1, 3, 3], %w: f32[1, 1, 2, 2]) { %z = conv2d_weight_grad(%g, %x, %w)\n return (%z) }",
       {{1, 2, 3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 0, 0, -1}},
       {37, 47, 67, 77}},
      {"conv2d_input_grad",  // stride, padding and groups; a row of x no output reads gets zeros
       "graph t(%g: f32[1, 2, 2, 2], %x: f32[1, 2, 3, 2], %w: f32[2, 1, 2, 1]) { %z = conv2d_input_grad(%g, %x, %w, stride=[2, 1], padding=[1, 0], "
       "groups=2)\n return (%z) }",
       {{1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {1, 2, 3, 4}},
       {2, 4, 3, 4, 6, 8, 20, 24, 21, 24, 28, 32}},
      {"conv2d_weight_grad",
       "graph t(%g: f32[1, 2, 2, 2], %x: f32[1, 2, 3, 2], %w: f32[2, 1, 2, 1]) { %z = conv2d_weight_grad(%g, %x, %w, stride=[2, 1], padding=[1, 0], "
       "groups=2)\n return (%z) }",
       {{1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {1, 2, 3, 4}},
       {25, 44, 143, 256}},
      {"conv3d_input_grad",
       "graph t(%g: f32[1, 1, 1, 2, 2], %x: f32[1, 1, 2, 2, 2], %w: f32[1, 1, 2, 1, 1]) { %z = conv3d_input_grad(%g, %x, %w)\n return (%z) }",
       {{1, 2, 3, 4}, {1, 2, 3, 4, 5, 6, 7, 8}, {1, -1}},
       {1, 2, 3, 4, -1, -2, -3, -4}},
      {"conv3d_weight_grad",
       "graph t(%g: f32[1, 1, 1, 2, 2], %x: f32[1, 1, 2, 2, 2], %w: f32[1, 1, 2, 1, 1]) { %z = conv3d_weight_grad(%g, %x, %w)\n return (%z) }",
       {{1, 2, 3, 4}, {1, 2, 3, 4, 5, 6, 7, 8}, {1, -1}},
       {30, 70}},
      // Each input element adds its value times the kernel at its strided place.
      {"conv_transpose2d",
       "graph t(%x: f32[1, 1, 1, 2], %w: f32[1, 1, 1, 2], %b: f32[1]) { %z = conv_transpose2d(%x, %w, %b, stride=[1, 3])\n return (%z) }",
       {{1, 2}, {1, 10}, {0.5}},
       {1.5, 10.5, 0.5, 2.5, 20.5}},
      {"conv_transpose2d",
       "graph t(%x: f32[1, 1, 1, 2], %w: f32[1, 1, 1, 3]) { %z = conv_transpose2d(%x, %w, padding=[0, 1], output_padding=[0, 1], stride=[1, 2])\n "
       "return (%z) }",
       {{1, 2}, {1, 2, 3}},
       {2, 3 + 2, 4, 6}},
      {"conv_transpose2d",
       "graph t(%x: f32[1, 2, 1, 1], %w: f32[2, 2, 1, 1]) { %z = conv_transpose2d(%x, %w, groups=2)\n return (%z) }",
       {{1, 2}, {1, 2, 3, 4}},
       {1, 2, 6, 8}},
      {"conv_transpose2d",
       "graph t(%x: f32[1, 1, 2, 1], %w: f32[1, 1, 2, 1]) { %z = conv_transpose2d(%x, %w, dilation=[2, 1])\n return (%z) }",
       {{1, 2}, {1, 10}},
       {1, 2, 10, 20}},
      {"conv_transpose3d",
       "graph t(%x: f32[1, 1, 2, 1, 1], %w: f32[1, 1, 2, 1, 1]) { %z = conv_transpose3d(%x, %w, stride=[2, 1, 1])\n return (%z) }",
       {{1, 2}, {1, 10}},
       {1, 10, 2, 20}},
      {"pad", "graph t(%x: f32[2, 2]) { %z = pad(%x, pads=[1, 0, 0, 1], value=9.0)\n return (%z) }", {{1, 2, 3, 4}}, {9, 1, 2, 9, 3, 4, 9, 9, 9}},
      // Scans along a middle dim (lines of 3 with inner stride 2), the last dim, integers and 0-d.
      {"cumsum", "graph t(%x: f32[1, 3, 2]) { %z = cumsum(%x, dim=1)\n return (%z) }", {{1, 10, 2, 20, 3, 30}}, {1, 10, 3, 30, 6, 60}},
      {"cumsum", "graph t(%x: f32[2, 3]) { %z = cumsum(%x, dim=-1)\n return (%z) }", {{1, 2, kNan, 4, -4, 0.5}}, {1, 3, kNan, 4, 0, 0.5}},
      {"cumsum", "graph t(%x: i32[3]) { %z = cumsum(%x, dim=0)\n return (%z) }", {{2147483647, 1, -5}}, {2147483647, 2147483648.0, 2147483643}},
      {"cumsum", "graph t(%x: bool[3]) { %z = cumsum(%x, dim=0)\n return (%z) }", {{1, 0, 1}}, {1, 1, 2}},
      {"cumsum", "graph t(%x: f32[]) { %z = cumsum(%x, dim=-1)\n return (%z) }", {{2.5}}, {2.5}},
      {"cumprod", "graph t(%x: f32[1, 3, 2]) { %z = cumprod(%x, dim=1)\n return (%z) }", {{2, -1, 3, 0, 0.5, 7}}, {2, -1, 6, 0, 3, 0}},
      {"cumprod", "graph t(%x: i64[4]) { %z = cumprod(%x, dim=0)\n return (%z) }", {{-3, 2, 5, 0}}, {-3, -6, -30, 0}},
      // Ties keep their order (stable); NaN is the largest value.
      {"sort", "graph t(%x: f32[2, 4]) { %z = sort(%x)\n return (%z) }", {{3, kNan, -1, 3, 0, 2, 2, -5}}, {-1, 3, 3, kNan, -5, 0, 2, 2}},
      {"sort",
       "graph t(%x: f32[2, 4]) { %z = sort(%x, dim=1, descending=true)\n return (%z) }",
       {{3, kNan, -1, 3, 0, 2, 2, -5}},
       {kNan, 3, 3, -1, 2, 2, 0, -5}},
      {"sort", "graph t(%x: i64[3, 2]) { %z = sort(%x, dim=0)\n return (%z) }", {{5, 1, -2, 1, 7, 0}}, {-2, 0, 5, 1, 7, 1}},
      {"argsort", "graph t(%x: f32[2, 4]) { %z = argsort(%x)\n return (%z) }", {{3, kNan, -1, 3, 0, 2, 2, -5}}, {2, 0, 3, 1, 3, 0, 1, 2}},
      {"argsort",
       "graph t(%x: f32[2, 4]) { %z = argsort(%x, descending=true)\n return (%z) }",
       {{3, kNan, -1, 3, 0, 2, 2, -5}},
       {1, 0, 3, 2, 1, 2, 0, 3}},
      {"argsort", "graph t(%x: i32[3, 2]) { %z = argsort(%x, dim=0, descending=true)\n return (%z) }", {{5, 1, -2, 1, 7, 0}}, {2, 0, 0, 1, 1, 2}},
      {"topk", "graph t(%x: f32[2, 4]) { %z = topk(%x, k=2)\n return (%z) }", {{3, kNan, -1, 3, 0, 2, 2, -5}}, {kNan, 3, 2, 2}},
      {"topk", "graph t(%x: f32[2, 4]) { %z = topk(%x, k=3, largest=false)\n return (%z) }", {{3, kNan, -1, 3, 0, 2, 2, -5}}, {-1, 3, 3, -5, 0, 2}},
      {"topk", "graph t(%x: f32[3, 2]) { %z = topk(%x, k=1, dim=0)\n return (%z) }", {{5, 1, -2, 1, 7, 0}}, {7, 1}},
      {"topk_indices", "graph t(%x: f32[2, 4]) { %z = topk_indices(%x, k=2)\n return (%z) }", {{3, kNan, -1, 3, 0, 2, 2, -5}}, {1, 0, 1, 2}},
      {"topk_indices",
       "graph t(%x: f32[2, 4]) { %z = topk_indices(%x, k=3, largest=false)\n return (%z) }",
       {{3, kNan, -1, 3, 0, 2, 2, -5}},
       {2, 0, 3, 3, 0, 1}},
      {"topk_indices",
       "graph t(%x: i64[3, 2]) { %z = topk_indices(%x, k=2, dim=0, largest=false)\n return (%z) }",
       {{5, 1, -2, 1, 7, 0}},
       {1, 2, 0, 0}},
  };
  return cs;
}

}  // namespace

TEST(ReferenceKernels, EveryOpHasAHandComputedCase) {
  std::set<std::string> covered;
  for (auto& c : cases()) covered.insert(c.op);
  for (auto& s : op_table()) EXPECT_TRUE(covered.count(s.name)) << "no hand-computed case for " << s.name;
}

TEST(ReferenceKernels, MatchHandComputedValues) {
  for (auto& c : cases()) {
    SCOPED_TRACE(c.graph);
    auto got = run_case(c);
    ASSERT_EQ(got.size(), c.expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(c.expected[i])) EXPECT_TRUE(std::isnan(got[i])) << "element " << i;
      else EXPECT_NEAR(got[i], c.expected[i], c.tol * std::max(1.0, std::fabs(c.expected[i]))) << "element " << i;
    }
  }
}

TEST(ReferenceKernels, LowPrecisionRoundsOnStore) {
  // 1 + 2^-11 is not representable in f16 (ties to even -> 1); bf16 keeps 8 bits of mantissa.
  Case h{"add", "graph t(%x: f16[1]) { %z = add(%x, 0.00048828125)\n return (%z) }", {{1}}, {1}};
  EXPECT_EQ(run_case(h)[0], 1.0);
  Case b{"mul", "graph t(%x: bf16[1]) { %z = mul(%x, 1.0)\n return (%z) }", {{1.00390625}}, {1}};
  EXPECT_EQ(run_case(b)[0], 1.0);                                                       // 1 + 2^-8 rounds to even in bf16 already on input
  EXPECT_EQ(round_to_dtype(65520.0, DType::f16), INFINITY);                             // overflow past f16's max
  EXPECT_EQ(round_to_dtype(5.960464477539063e-08, DType::f16), 5.960464477539063e-08);  // smallest subnormal
  Case f64{"add", "graph t(%x: f16[1]) { %z = add(%x, 0.00048828125)\n return (%z) }", {{1}}, {1}};
  EXPECT_EQ(run_case(f64, true)[0], 1.00048828125);  // float64 mode keeps it
}

TEST(ReferenceKernels, IndexOutOfRangeNamesTheNode) {
  Case c{"embedding", "graph t(%w: f32[3, 2], %i: i64[1]) { %bad = embedding(%w, %i)\n return (%bad) }", {{1, 2, 3, 4, 5, 6}, {7}}, {}};
  try {
    run_case(c);
    FAIL();
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("node %bad = embedding: index 7 is out of range"), std::string::npos) << e.what();
  }
}

TEST(Interpreter, RejectsInputsOfTheWrongType) {
  Graph g = parse_graph("graph t(%x: f32[2]) { %y = neg(%x)\n return (%y) }");
  try {
    interpret(g, {Tensor::zeros(DType::f64, {2})});
    FAIL();
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("input %x of graph t must be f32[2], got f64[2]"), std::string::npos) << e.what();
  }
}

// Regression: the interpreter computed i64 through double, so add(a, 0) of 2^53 + 1 gave 2^53 and
// 2^63 - 1 gave -2^63: level 4 then reported false accuracy bugs against correct cpp output.
TEST(ReferenceKernels, IntegersAreExactAndWrapAsPyTorch) {
  Graph g = parse_graph("graph t(%a: i64[3]) {\n  %b = add(%a, 0)\n  %c = add(%a, 1)\n  %d = mul(%a, %a)\n  return (%b, %c, %d)\n}");
  const int64_t big = 9007199254740993, max = INT64_MAX;
  Tensor a = Tensor::from_int64s(DType::i64, {3}, {big, max, -7});
  auto out = interpret(g, {a});
  EXPECT_EQ(out[0].to_int64s(), (std::vector<int64_t>{big, max, -7}));
  EXPECT_EQ(out[1].to_int64s(), (std::vector<int64_t>{big + 1, INT64_MIN, -6}));  // 2^63 - 1 + 1 wraps
  EXPECT_EQ(out[2].get_int(2), 49);
  EXPECT_EQ(out[2].get_int(0), static_cast<int64_t>(static_cast<uint64_t>(big) * static_cast<uint64_t>(big)));
  // Reductions and data movement stay exact too.
  Graph r = parse_graph("graph t(%a: i64[3]) {\n  %s = sum(%a)\n  %m = amax(%a)\n  %p = slice(%a, dim=0, start=0, end=2)\n  return (%s, %m, %p)\n}");
  auto ro = interpret(r, {Tensor::from_int64s(DType::i64, {3}, {big, 1, -1})});
  EXPECT_EQ(ro[0].get_int(0), big);
  EXPECT_EQ(ro[1].get_int(0), big);
  EXPECT_EQ(ro[2].to_int64s(), (std::vector<int64_t>{big, 1}));
  // i32 wraps at 32 bits; float -> int casts give the x86 result for NaN and out-of-range values.
  Graph c = parse_graph("graph t(%a: i32[1], %f: f32[2]) {\n  %w = add(%a, 1)\n  %i = to(%f, dtype=i64)\n  return (%w, %i)\n}");
  auto co = interpret(c, {Tensor::from_int64s(DType::i32, {1}, {INT32_MAX}), Tensor::from_doubles(DType::f32, {2}, {NAN, -2.7})});
  EXPECT_EQ(co[0].get_int(0), INT32_MIN);
  EXPECT_EQ(co[1].to_int64s(), (std::vector<int64_t>{INT64_MIN, -2}));
}

// Found by `reprokit generate`: a reduction of a 0-d tensor over dims=[0] (or [-1], which torch
// accepts) wrote past the end of the kernel's dim mask (SIGSEGV). It reduces nothing.
TEST(ReferenceKernels, ReductionOfAZeroDimTensorOverItsOnlyDim) {
  for (const char* op : {"sum", "amax", "amin", "mean"})
    for (const char* dims : {"[0]", "[-1]"}) {
      Case c{op, "", {{2.5}}, {2.5}};
      const std::string text = fmt::format("graph t(%x: f32[]) {{ %r = {}(%x, dims={})\n return (%r) }}", op, dims);
      c.graph = text.c_str();
      EXPECT_EQ(run_case(c), std::vector<double>{2.5}) << text;
      EXPECT_EQ(run_case(c, true), std::vector<double>{2.5}) << text;
    }
}

// Found by `reprokit generate`: gather of a 0-d input never checked its index in the reference
// (any index read the element) and input generation died of out_of_range (exit 3).
TEST(ReferenceKernels, GatherOfAZeroDimInput) {
  Case ok{"gather", "graph t(%x: f32[], %i: i64[]) { %r = gather(%x, %i, dim=0)\n return (%r) }", {{2.5}, {0}}, {2.5}};
  EXPECT_EQ(run_case(ok), std::vector<double>{2.5});
  Case bad{"gather", "graph t(%x: f32[], %i: i64[]) { %bad = gather(%x, %i, dim=0)\n return (%bad) }", {{2.5}, {5}}, {}};
  EXPECT_THROW(run_case(bad), std::exception);
  Graph g = parse_graph("graph t(%x: f32[], %i: i64[]) { %r = gather(%x, %i, dim=-1)\n return (%r) }");
  EXPECT_EQ(generate_inputs(g, 7).at(1).get_int(0), 0);
}

// Found by fuzzing ONNX Runtime: with dilation, a max-pool window can hold only padding. PyTorch
// gives -inf there (and no gradient); the reference read the input at index -1.
TEST(ReferenceKernels, MaxPoolWindowOfOnlyPaddingIsMinusInfinity) {
  reprokit::Graph g = reprokit::parse_graph(
      "graph p(%x: f32[1, 1, 2, 1], %g: f32[1, 1, 1, 1]) {\n"
      "  %v = max_pool2d(%x, kernel=[2, 1], padding=[1, 0], dilation=[3, 3])\n"
      "  %b = max_pool2d_backward(%g, %x, kernel=[2, 1], padding=[1, 0], dilation=[3, 3])\n"
      "  return (%v, %b)\n}\n",
      "p.rk");
  auto x = reprokit::Tensor::from_doubles(reprokit::DType::f32, {1, 1, 2, 1}, {5, 7});
  auto gr = reprokit::Tensor::from_doubles(reprokit::DType::f32, {1, 1, 1, 1}, {1});
  auto out = reprokit::interpret(g, {x, gr});
  EXPECT_EQ(out[0].to_doubles(), std::vector<double>{-INFINITY});
  EXPECT_EQ(out[1].to_doubles(), (std::vector<double>{0, 0}));
}
