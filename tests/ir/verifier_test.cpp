// Verifier errors name the graph and the node, and say what is wrong.
#include <gtest/gtest.h>

#include "reprokit/support/errors.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/ir/verifier.h"

using namespace reprokit;

struct VerifyCase {
  const char* body;  // nodes and return, inside graph g(%x: f32[2, 3], %y: f32[4], %i: i64[2, 3])
  const char* message;
};

class VerifyErrors : public ::testing::TestWithParam<VerifyCase> {};

TEST_P(VerifyErrors, NameTheNode) {
  std::string src = std::string("graph g(%x: f32[2, 3], %y: f32[4], %i: i64[2, 3]) {\n") + GetParam().body + "\n}\n";
  try {
    parse_graph(src, "v.rk");
    FAIL() << "verified: " << src;
  } catch (const UserError& e) { EXPECT_NE(std::string(e.what()).find(GetParam().message), std::string::npos) << e.what(); }
}

INSTANTIATE_TEST_SUITE_P(
    Bad, VerifyErrors,
    ::testing::Values(
        VerifyCase{"%a = add(%x, %y)\nreturn (%a)", "node %a = add: shapes [2, 3] and [4] do not broadcast"},
        VerifyCase{"%a = neg(%x, %y)\nreturn (%a)", "node %a = neg: expected 1 operand, got 2"},
        VerifyCase{"%a = add(%x)\nreturn (%a)", "node %a = add: expected 2 operands, got 1"},
        VerifyCase{"%a = matmul(%x, %x)\nreturn (%a)", "node %a = matmul: inner dimensions differ: [2, 3] @ [2, 3]"},
        VerifyCase{"%a = reshape(%x, shape=[5, -1])\nreturn (%a)", "node %a = reshape: cannot reshape [2, 3] into [5, -1]"},
        VerifyCase{"%a = softmax(%x, dim=2)\nreturn (%a)", "node %a = softmax: dim 2 is out of range for rank 2"},
        VerifyCase{"%a = softmax(%x)\nreturn (%a)", "node %a = softmax: missing required attribute 'dim'"},
        VerifyCase{"%a = softmax(%x, dim=1, keepdim=true)\nreturn (%a)", "node %a = softmax: unknown attribute 'keepdim' (valid: dim)"},
        VerifyCase{"%a = sum(%x, dims=1.5)\nreturn (%a)", "node %a = sum: attribute 'dims' must be a list of ints, got 1.5"},
        VerifyCase{"%a = softmax(%i, dim=0)\nreturn (%a)", "node %a = softmax: input must be floating point, got i64"},
        // What PyTorch (and ONNX) refuse on bools, as torch.compile's graphs never hold them.
        VerifyCase{"%b = gt(%x, 0.0)\n%a = sub(%b, %b)\nreturn (%a)", "node %a = sub: sub of bool operands"},
        VerifyCase{"%b = gt(%x, 0.0)\n%a = neg(%b)\nreturn (%a)", "node %a = neg: neg of a bool tensor"},
        VerifyCase{"%b = gt(%x, 0.0)\n%a = relu(%b)\nreturn (%a)", "node %a = relu: relu of a bool tensor"},
        VerifyCase{"%b = gt(%x, 0.0)\n%a = abs(%b)\nreturn (%a)", "node %a = abs: abs of a bool tensor"},
        VerifyCase{"%s = sum(%x)\n%a = squeeze(%s, dim=3)\nreturn (%a)", "node %a = squeeze: dim 3 is out of range for a 0-d tensor"},
        VerifyCase{"%a = where(%x, %x, %x)\nreturn (%a)", "node %a = where: condition must be bool, got f32"},
        VerifyCase{"%w = reshape(%y, shape=[2, 2])\n%a = linear(%x, %w)\nreturn (%a)",
                   "node %a = linear: weight shape [2, 2] does not match input feature size 3"},
        VerifyCase{"%a = neg(2.0)\nreturn (%a)", "operand 1 (x) of neg must be a tensor value, got the literal 2.0"},
        VerifyCase{"%a = gather(%x, %x, dim=0)\nreturn (%a)", "node %a = gather: index must be i32 or i64, got f32"},
        VerifyCase{"%a = permute(%x, dims=[0, 0])\nreturn (%a)", "node %a = permute: dims [0, 0] is not a permutation"},
        VerifyCase{"%a = gelu(%x, approximate=\"fast\")\nreturn (%a)", "node %a = gelu: approximate must be \"none\" or \"tanh\""},
        VerifyCase{"%a = expand(%x, shape=[2, 4])\nreturn (%a)", "node %a = expand: cannot expand [2, 3] to [2, 4]"},
        VerifyCase{"%a = layer_norm(%x, normalized_shape=[2])\nreturn (%a)", "node %a = layer_norm: normalized_shape [2] is not a suffix"},
        VerifyCase{"%a = group_norm(%x, num_groups=2)\nreturn (%a)", "node %a = group_norm: 3 channels do not divide into 2 groups"},
        VerifyCase{"%a = group_norm(%x, num_groups=0)\nreturn (%a)", "node %a = group_norm: num_groups must be positive, got 0"},
        VerifyCase{"%a = group_norm(%y, num_groups=1)\nreturn (%a)", "node %a = group_norm: input must be [N, C, ...], got [4]"},
        VerifyCase{"%a = group_norm(%x, %y, num_groups=1)\nreturn (%a)", "node %a = group_norm: weight has shape [4], expected [3] (the channels)"},
        VerifyCase{"%a = instance_norm(%x)\nreturn (%a)", "node %a = instance_norm: input must be [N, C, D1, ...], got [2, 3]"},
        VerifyCase{"%a = scatter_add(%x, %i, %y, dim=1)\nreturn (%a)",
                   "node %a = scatter_add: index [2, 3] and src [4] must have the input's rank 2"},
        VerifyCase{"%a = scatter_add(%i, %i, %x, dim=1)\nreturn (%a)", "node %a = scatter_add: input must be floating"},
        VerifyCase{"%im = reshape(%x, shape=[1, 1, 2, 3])\n%w = reshape(%y, shape=[1, 1, 2, 2])\n%a = conv2d_input_grad(%im, %im, %w)\nreturn (%a)",
                   "node %a = conv2d_input_grad: grad has shape [1, 1, 2, 3], the convolution's output is [1, 1, 1, 2]"},
        VerifyCase{"%im = reshape(%x, shape=[1, 1, 2, 3])\n%w = reshape(%y, shape=[2, 2])\n%a = conv2d_weight_grad(%im, %im, %w)\nreturn (%a)",
                   "node %a = conv2d_weight_grad: weight must be 4-D [out, in / groups, kH, kW], got [2, 2]"},
        VerifyCase{"%a = pixel_shuffle(%x, upscale_factor=2)\nreturn (%a)",
                   "node %a = pixel_shuffle: input must be [*, C, H, W] (rank >= 3), got [2, 3]"},
        VerifyCase{"%r = reshape(%x, shape=[2, 3, 1])\n%a = pixel_shuffle(%r, upscale_factor=2)\nreturn (%a)",
                   "node %a = pixel_shuffle: 2 channels do not divide by upscale_factor^2 = 4"},
        VerifyCase{"%r = reshape(%x, shape=[1, 2, 3])\n%a = pixel_unshuffle(%r, downscale_factor=2)\nreturn (%a)",
                   "node %a = pixel_unshuffle: height 2 and width 3 do not divide by downscale_factor 2"},
        VerifyCase{"%a = einsum(%x, %x, equation=\"ij,jk->ik\")\nreturn (%a)",
                   "node %a = einsum: equation \"ij,jk->ik\": 'j' is 2 in operand 2 but 3 in an earlier operand"},
        VerifyCase{"%a = einsum(%x, equation=\"ij,jk->ik\")\nreturn (%a)", "node %a = einsum: equation \"ij,jk->ik\": 2 terms for 1 operands"},
        VerifyCase{"%r = reshape(%x, shape=[1, 1, 2, 3])\n%g = reshape(%x, shape=[1, 1, 2, 3])\n%a = grid_sample(%r, %g)\nreturn (%a)",
                   "node %a = grid_sample: grid must be [N, H_out, W_out, 2], got [1, 1, 2, 3]"},
        VerifyCase{
            "%r = reshape(%x, shape=[1, 1, 2, 3])\n%g = reshape(%x, shape=[1, 1, 3, 2])\n%a = grid_sample(%r, %g, mode=\"bicubic\")\nreturn (%a)",
            "node %a = grid_sample: mode \"bicubic\" is not supported (bilinear or nearest)"},
        VerifyCase{"%r = reshape(%x, shape=[1, 1, 2, 3])\n%g = reshape(%x, shape=[1, 1, 3, 2])\n%a = grid_sample(%r, %g, "
                   "padding_mode=\"wrap\")\nreturn (%a)",
                   "node %a = grid_sample: padding_mode must be one of zeros, border, reflection, got \"wrap\""},
        VerifyCase{"%g = reshape(%x, shape=[1, 1, 3, 2])\n%a = grid_sample(%x, %g)\nreturn (%a)",
                   "node %a = grid_sample: input must be 4-D [N, C, H, W], got [2, 3]"},
        VerifyCase{"%r = reshape(%x, shape=[2, 1, 1, 3])\n%g = reshape(%x, shape=[1, 1, 3, 2])\n%a = grid_sample(%r, %g)\nreturn (%a)",
                   "node %a = grid_sample: grid has batch 1, input has 2"},
        VerifyCase{"%a = affine_grid(%x, size=[1, 1, 4, 4])\nreturn (%a)", "node %a = affine_grid: theta must be [N, 2, 3], got [2, 3]"},
        VerifyCase{"%r = reshape(%x, shape=[1, 2, 3])\n%a = affine_grid(%r, size=[2, 1, 4, 4])\nreturn (%a)",
                   "node %a = affine_grid: size has batch 2, theta has 1"},
        VerifyCase{"%r = reshape(%x, shape=[1, 2, 3])\n%a = affine_grid(%r, size=[1, 1, 2, 4, 4])\nreturn (%a)",
                   "node %a = affine_grid: size must be [N, C, H, W] (2-D), got [1, 1, 2, 4, 4]"},
        VerifyCase{"%a = einsum(%x, equation=\"i->i\")\nreturn (%a)",
                   "node %a = einsum: equation \"i->i\": term 'i' has 1 subscripts, operand 1 has rank 2"},
        VerifyCase{"%a = einsum(%x, equation=\"i1->i\")\nreturn (%a)", "node %a = einsum: equation \"i1->i\": '1' is not a subscript"},
        VerifyCase{"%a = einsum(%x, equation=\"ij->i->j\")\nreturn (%a)", "node %a = einsum: equation \"ij->i->j\": more than one ->"},
        VerifyCase{"%a = einsum(%x, equation=\"ij->k\")\nreturn (%a)",
                   "node %a = einsum: equation \"ij->k\": output subscript 'k' is in no operand's term"},
        VerifyCase{"%a = einsum(%x, equation=\"...j->j\")\nreturn (%a)",
                   "node %a = einsum: equation \"...j->j\": an ellipsis (...) is not supported"},
        VerifyCase{"%a = einsum(%i, equation=\"ij\")\nreturn (%a)", "node %a = einsum: operand 1 must be floating point, got i64"},
        VerifyCase{"%r = reshape(%x, shape=[1, 2, 3])\n%a = pixel_unshuffle(%r, downscale_factor=0)\nreturn (%a)",
                   "node %a = pixel_unshuffle: downscale_factor must be in [1, 2^20], got 0"},
        // Found by `reprokit generate`: the pool backward's inference read the channel dim of an
        // input of rank < 2 (SIGSEGV in `reprokit print`).
        VerifyCase{"%a = avg_pool2d_backward(%y, %y, kernel=[1, 1])\nreturn (%a)", "node %a = avg_pool2d_backward: input must be 4-D"},
        VerifyCase{"%s = sum(%y)\n%a = max_pool2d_backward(%y, %s, kernel=[1, 1])\nreturn (%a)", "node %a = max_pool2d_backward: input must be 4-D"},
        // Found by `reprokit generate`: cat of 0-d tensors wrote past the end of its shape.
        VerifyCase{"%s = sum(%y)\n%a = cat(%s, %s)\nreturn (%a)", "node %a = cat: zero-dimensional tensors cannot be concatenated"}));

TEST(Verifier, UseBeforeDefinitionAndCycles) {
  Graph g = parse_graph("graph g(%x: f32[2]) {\n  %a = neg(%x)\n  %b = neg(%a)\n  return (%b)\n}\n");
  g.node(1).operands[0] = Operand::of(2);  // %a now uses %b, which uses %a: a cycle
  try {
    verify(g);
    FAIL();
  } catch (const VerifyError& e) {
    EXPECT_NE(std::string(e.what()).find("node %a = neg: operand 1 is used before it is defined"), std::string::npos) << e.what();
  }
}

TEST(Verifier, DuplicateNamesAndInputsAfterBody) {
  Graph g = parse_graph("graph g(%x: f32[2]) {\n  %a = neg(%x)\n  return (%a)\n}\n");
  g.node(1).name = "x";
  EXPECT_THROW(verify(g), VerifyError);
  Graph h = parse_graph("graph g(%x: f32[2]) {\n  %a = neg(%x)\n  return (%a)\n}\n");
  h.nodes.push_back(h.node(0));
  h.nodes.back().name = "late";
  try {
    verify(h);
    FAIL();
  } catch (const VerifyError& e) { EXPECT_NE(std::string(e.what()).find("input %late: inputs must come before the body"), std::string::npos); }
}

TEST(Verifier, GradOnlyOnFloats) { EXPECT_THROW(parse_graph("graph g(%i: i64[2] grad) { return (%i) }"), UserError); }

// Found by `reprokit generate`: transpose of a 0-d tensor and a keepdim reduction of one indexed
// past the end of their (empty) shapes. Both are the tensor itself, as in torch.
TEST(Verifier, ZeroDimTransposeAndKeepdimReduction) {
  Graph g = parse_graph("graph g(%x: f32[]) {\n %t = transpose(%x, dim0=0, dim1=-1)\n %s = sum(%x, dims=[0], keepdim=true)\n return (%t, %s)\n}\n");
  EXPECT_TRUE(g.node(g.outputs[0]).type.shape.empty());
  EXPECT_TRUE(g.node(g.outputs[1]).type.shape.empty());
}
