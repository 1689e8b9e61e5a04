// The gradient test graphs of the aot tests (see op_graphs.h).
#include "op_graphs.h"

namespace reprokit::testing {

// One graph per differentiable op (some ops in several forms: broadcasting, scalars, attributes).
// Inputs of log/sqrt/... are shifted away from the points where the op is not smooth.
const std::vector<std::string>& differentiable_op_graphs() {
  static const std::vector<std::string> graphs = {
      "graph t(%x: f32[3, 4] grad) { %y = neg(%x)\n return (%y) }",
      "graph t(%x: f32[3, 4] grad) { %y = abs(%x)\n return (%y) }",
      "graph t(%x: f32[3, 4] grad) { %y = exp(%x)\n return (%y) }",
      "graph t(%x: f32[3, 4] grad) { %a = abs(%x)\n %p = add(%a, 0.5)\n %y = log(%p)\n return (%y) }",
      "graph t(%x: f32[3, 4] grad) { %a = abs(%x)\n %p = add(%a, 0.5)\n %y = sqrt(%p)\n return (%y) }",
      "graph t(%x: f32[3, 4] grad) { %a = abs(%x)\n %p = add(%a, 0.5)\n %y = rsqrt(%p)\n return (%y) }",
      "graph t(%x: f32[3, 4] grad) { %a = abs(%x)\n %p = add(%a, 0.5)\n %y = reciprocal(%p)\n return (%y) }",
      "graph t(%x: f32[3, 4] grad) { %y = sin(%x)\n return (%y) }",
      "graph t(%x: f32[3, 4] grad) { %y = cos(%x)\n return (%y) }",
      "graph t(%x: f32[3, 4] grad) { %y = tanh(%x)\n return (%y) }",
      "graph t(%x: f32[3, 4] grad) { %y = sigmoid(%x)\n return (%y) }",
      "graph t(%x: f32[3, 4] grad) { %y = relu(%x)\n return (%y) }",
      "graph t(%x: f32[3, 4] grad) { %y = gelu(%x)\n return (%y) }",
      "graph t(%x: f32[3, 4] grad) { %y = gelu(%x, approximate=\"tanh\")\n return (%y) }",
      "graph t(%x: f32[3, 4] grad) { %y = silu(%x)\n return (%y) }",
      "graph t(%x: f32[3, 4] grad) { %y = erf(%x)\n return (%y) }",
      "graph t(%x: f32[3, 4] grad, %z: f32[4] grad) { %y = add(%x, %z)\n return (%y) }",
      "graph t(%x: f32[3, 1] grad, %z: f32[1, 4] grad) { %y = sub(%x, %z)\n %w = sub(2.0, %y)\n return (%w) }",
      "graph t(%x: f32[3, 4] grad, %z: f32[3, 4] grad) { %y = mul(%x, %z)\n %w = mul(%y, 3.0)\n return (%w) }",
      "graph t(%x: f32[3, 4] grad, %z: f32[4] grad) { %a = abs(%z)\n %p = add(%a, 0.5)\n %y = div(%x, %p)\n %w = div(1.5, %p)\n return (%y, %w) }",
      "graph t(%x: f32[3, 4] grad, %z: f32[3, 4] grad) { %a = abs(%x)\n %p = add(%a, 0.5)\n %y = pow(%p, %z)\n return (%y) }",
      "graph t(%x: f32[3, 4] grad) { %y = pow(%x, 3.0)\n %w = pow(2.0, %x)\n return (%y, %w) }",
      "graph t(%x: f32[3, 4] grad, %z: f32[4] grad) { %y = maximum(%x, %z)\n %w = maximum(%x, 0.1)\n return (%y, %w) }",
      "graph t(%x: f32[3, 4] grad, %z: f32[3, 4] grad) { %y = minimum(%x, %z)\n return (%y) }",
      "graph t(%x: f32[3, 4] grad, %z: f32[4] grad) { %c = gt(%x, 0.0)\n %y = where(%c, %x, %z)\n %w = where(%c, 1.0, %x)\n return (%y, %w) }",
      "graph t(%x: f32[3, 4] grad) { %y = to(%x, dtype=f32)\n %z = clone(%y)\n %w = contiguous(%z)\n return (%w) }",
      "graph t(%x: f32[3, 4, 2] grad) { %y = sum(%x, dims=[1])\n %z = mul(%y, %y)\n return (%z) }",
      "graph t(%x: f32[3, 4] grad) { %y = sum(%x)\n %z = sin(%y)\n return (%z) }",
      "graph t(%x: f32[3, 4, 2] grad) { %y = mean(%x, dims=[0, 2], keepdim=true)\n %z = mul(%y, %y)\n return (%z) }",
      "graph t(%x: f32[3, 4] grad) { %y = var(%x, dims=[1])\n %z = var(%x, correction=0)\n return (%y, %z) }",
      "graph t(%x: f32[3, 4] grad) { %y = amax(%x, dims=[1])\n %z = amin(%x)\n %w = mul(%y, %y)\n return (%w, %z) }",
      "graph t(%x: f32[3, 4] grad) { %y = softmax(%x, dim=1)\n %z = mul(%y, %x)\n return (%z) }",
      "graph t(%x: f32[3, 4] grad) { %y = log_softmax(%x, dim=0)\n %z = mul(%y, %x)\n return (%z) }",
      "graph t(%x: f32[2, 3, 4] grad, %w: f32[4] grad, %b: f32[4] grad) { %y = layer_norm(%x, %w, %b, normalized_shape=[4])\n %z = mul(%y, %x)\n "
      "return (%z) }",
      "graph t(%x: f32[2, 3, 4] grad) { %y = layer_norm(%x, normalized_shape=[3, 4], eps=0.1)\n %z = mul(%y, %x)\n return (%z) }",
      "graph t(%a: f32[2, 3, 4] grad, %b: f32[4, 5] grad) { %y = matmul(%a, %b)\n %z = mul(%y, %y)\n return (%z) }",
      "graph t(%x: f32[2, 3, 4] grad, %w: f32[5, 4] grad, %b: f32[5] grad) { %y = linear(%x, %w, %b)\n %z = mul(%y, %y)\n return (%z) }",
      "graph t(%x: f32[4] grad, %w: f32[5, 4] grad) { %y = linear(%x, %w)\n %z = mul(%y, %y)\n return (%z) }",
      "graph t(%x: f32[3, 4] grad) { %y = reshape(%x, shape=[2, -1])\n %z = mul(%y, %y)\n %s = slice(%z, dim=1, start=1, end=6, step=2)\n return "
      "(%s) }",
      "graph t(%x: f32[2, 3, 4] grad) { %y = permute(%x, dims=[2, 0, 1])\n %s = slice(%y, dim=0, start=1, end=3)\n %z = mul(%s, %s)\n return (%z) }",
      "graph t(%x: f32[2, 3] grad) { %y = transpose(%x, dim0=0, dim1=1)\n %s = slice(%y, dim=-1, start=-1, end=2)\n %z = mul(%s, %y)\n return (%z) }",
      "graph t(%x: f32[3, 1] grad) { %y = expand(%x, shape=[2, 3, 4])\n %z = mul(%y, %y)\n return (%z) }",
      "graph t(%x: f32[7] grad) { %s = slice(%x, dim=0, start=1, end=7, step=3)\n %z = mul(%s, %s)\n return (%z) }",
      "graph t(%x: f32[3, 2] grad, %z: f32[3, 4] grad) { %y = cat(%x, %z, %x, dim=1)\n %w = mul(%y, %y)\n return (%w) }",
      "graph t(%x: f32[3, 1] grad) { %y = squeeze(%x, dim=1)\n %z = unsqueeze(%y, dim=0)\n %w = mul(%z, %z)\n return (%w) }",
      "graph t(%e: f32[6, 3] grad, %i: i64[2, 4]) { %y = embedding(%e, %i)\n %z = mul(%y, %y)\n return (%z) }",
      "graph t(%x: f32[3, 5] grad, %i: i64[2, 4]) { %y = gather(%x, %i, dim=1)\n %z = mul(%y, %y)\n return (%z) }",
      "graph t(%x: f32[4, 3] grad, %i: i64[2, 3]) { %y = gather(%x, %i, dim=0)\n %z = mul(%y, %y)\n return (%z) }",
      // (src of the index's shape: PyTorch 2.13's and 1.13's autograd refuse a larger one.)
      "graph t(%x: f32[3, 5] grad, %i: i64[2, 3], %s: f32[2, 3] grad) { %y = scatter_add(%x, %i, %s, dim=1)\n %z = mul(%y, %y)\n return (%z) }",
      "graph t(%x: f32[3, 4] grad) { %y = clamp(%x, min=-0.5, max=0.7)\n %z = clamp(%x, max=0.1)\n return (%y, %z) }",
      "graph t(%x: f32[2, 3] grad) { %y = pad(%x, pads=[1, 2, 0, 1], value=0.5)\n %z = mul(%y, %y)\n return (%z) }",
      "graph t(%x: f32[2, 4, 5, 6] grad, %w: f32[6, 2, 3, 2] grad, %b: f32[6] grad) {"
      " %y = conv2d(%x, %w, %b, stride=[2, 1], padding=[1, 0], dilation=[1, 2], groups=2)\n return (%y) }",
      "graph t(%x: f32[1, 3, 6, 5] grad, %w: f32[3, 1, 3, 3] grad) { %y = conv2d(%x, %w, stride=[2, 2], padding=[2, 1], groups=3)\n return (%y) }",
      "graph t(%x: f32[2, 2, 4, 4] grad, %w: f32[3, 2, 1, 1] grad) { %y = conv2d(%x, %w)\n return (%y) }",
      "graph t(%x: f32[1, 2, 5, 5] grad) { %y = max_pool2d(%x, kernel=[3, 3], stride=[2, 2], padding=[1, 1], ceil_mode=true)\n return (%y) }",
      "graph t(%x: f32[1, 2, 6, 7] grad) { %y = max_pool2d(%x, kernel=[2, 3], dilation=[2, 1])\n return (%y) }",
      "graph t(%x: f32[1, 2, 5, 5] grad) { %y = avg_pool2d(%x, kernel=[3, 2], stride=[2, 2], padding=[1, 1], ceil_mode=true, "
      "count_include_pad=false)\n"
      " %z = avg_pool2d(%x, kernel=[2, 2], padding=[1, 1])\n return (%y, %z) }",
      "graph t(%x: f32[1, 2, 3, 4, 4] grad, %w: f32[2, 1, 2, 2, 3] grad, %b: f32[2] grad) {"
      " %y = conv3d(%x, %w, %b, stride=[1, 2, 1], padding=[1, 0, 1], dilation=[1, 1, 2], groups=2)\n return (%y) }",
      "graph t(%x: f32[1, 2, 4, 3, 4] grad) { %y = max_pool3d(%x, kernel=[2, 2, 2], stride=[2, 1, 2], padding=[1, 0, 1], ceil_mode=true)\n return "
      "(%y) }",
      "graph t(%x: f32[1, 2, 4, 3, 4] grad) { %y = avg_pool3d(%x, kernel=[2, 2, 3], stride=[2, 1, 2], padding=[1, 1, 1], count_include_pad=false)\n"
      " %z = avg_pool3d(%x, kernel=[2, 2, 2])\n return (%y, %z) }",
      "graph t(%x: f32[1, 4, 3, 4] grad, %w: f32[4, 2, 3, 2] grad, %b: f32[4] grad) {"
      " %y = conv_transpose2d(%x, %w, %b, stride=[2, 3], padding=[1, 1], output_padding=[1, 0], dilation=[1, 2], groups=2)\n return (%y) }",
      "graph t(%x: f32[1, 2, 3, 3] grad, %w: f32[2, 3, 2, 3] grad) { %y = conv_transpose2d(%x, %w, padding=[0, 1])\n return (%y) }",
      "graph t(%x: f32[1, 2, 2, 3, 2] grad, %w: f32[2, 1, 2, 2, 2] grad, %b: f32[2] grad) {"
      " %y = conv_transpose3d(%x, %w, %b, stride=[2, 1, 2], padding=[1, 0, 0], output_padding=[1, 0, 1], groups=2)\n return (%y) }",
      "graph t(%x: f32[1, 2, 4, 6] grad) { %y = adaptive_avg_pool2d(%x, output_size=[1, 1])\n %z = adaptive_avg_pool2d(%x, output_size=[2, 3])\n"
      " return (%y, %z) }",
      "graph t(%x: f32[2, 3, 2, 2] grad, %m: f32[3], %v: f32[3], %w: f32[3] grad, %b: f32[3] grad) {"
      " %a = abs(%v)\n %p = add(%a, 0.5)\n %y = batch_norm(%x, %m, %p, %w, %b, eps=0.001)\n return (%y) }",
      "graph t(%x: f32[3, 4] grad) { %y = cumsum(%x, dim=1)\n %z = cumsum(%x, dim=0)\n %w = mul(%y, %z)\n return (%w) }",
      "graph t(%x: f32[2, 4, 3] grad) { %y = cumprod(%x, dim=1)\n %z = cumprod(%x, dim=-1)\n return (%y, %z) }",
      // A zero in the line: the backward rule divides by nothing.
      "graph t(%x: f32[5] grad) { %m = full(shape=[5], value=0.0, dtype=f32)\n %k = slice(%m, dim=0, start=0, end=1)\n"
      " %s = slice(%x, dim=0, start=1, end=5)\n %c = cat(%k, %s, dim=0)\n %y = cumprod(%c, dim=0)\n return (%y) }",
      "graph t(%x: f32[3, 5] grad) { %y = sort(%x, dim=1, descending=true)\n %w = mul(%y, %y)\n return (%w) }",
      "graph t(%x: f32[4, 3] grad) { %y = sort(%x, dim=0)\n %z = topk(%x, k=2, dim=0, largest=false)\n %w = mul(%z, %z)\n return (%y, %w) }",
      "graph t(%x: f32[3, 5] grad) { %y = topk(%x, k=3)\n %w = mul(%y, %y)\n return (%w) }",
      "graph t(%x: f32[2, 4, 3] grad, %w: f32[4] grad, %b: f32[4] grad) { %y = group_norm(%x, %w, %b, num_groups=2)\n %z = mul(%y, %x)\n return (%z) "
      "}",
      "graph t(%x: f32[2, 2, 2, 2] grad) { %y = group_norm(%x, num_groups=1, eps=0.1)\n %z = mul(%y, %x)\n return (%z) }",
      "graph t(%x: f32[2, 3, 4] grad, %w: f32[3] grad, %b: f32[3] grad) { %y = instance_norm(%x, %w, %b)\n %z = mul(%y, %x)\n return (%z) }",
      "graph t(%x: f32[1, 2, 2, 3] grad) { %y = instance_norm(%x, eps=0.01)\n %z = mul(%y, %x)\n return (%z) }",
      "graph t(%x: f32[1, 8, 2, 3] grad) { %y = pixel_shuffle(%x, upscale_factor=2)\n %w = slice(%y, 3, 0, 5)\n %z = mul(%w, %w)\n return (%z) }",
      "graph t(%a: f32[2, 3, 4] grad, %b: f32[2, 4, 5] grad) { %y = einsum(%a, %b, equation=\"bij,bjk->bik\")\n %z = mul(%y, %y)\n return (%z) }",
      "graph t(%a: f32[2, 3] grad, %b: f32[3, 4] grad, %c: f32[4] grad) { %y = einsum(%a, %b, %c, equation=\"ij,jk,k->ki\")\n %z = mul(%y, %y)\n "
      "return (%z) }",
      "graph t(%a: f32[2, 3] grad, %b: f32[2] grad) { %y = einsum(%a, %b, equation=\"ij,i\")\n %z = mul(%y, %y)\n return (%z) }",
      "graph t(%x: f32[2, 4, 6] grad) { %y = pixel_unshuffle(%x, downscale_factor=2)\n %w = slice(%y, 0, 1, 5)\n %z = mul(%w, %w)\n return (%z) }",
      "graph t(%x: f32[2, 2, 3, 4] grad, %g: f32[2, 3, 2, 2] grad) { %y = grid_sample(%x, %g)\n %z = mul(%y, %y)\n return (%z) }",
      "graph t(%x: f32[1, 2, 4, 3] grad, %g: f32[1, 2, 3, 2] grad) { %s = mul(%g, 1.7)\n"
      " %y = grid_sample(%x, %s, padding_mode=\"reflection\", align_corners=true)\n %z = mul(%y, %y)\n return (%z) }",
      "graph t(%x: f32[1, 2, 3, 4] grad, %g: f32[1, 3, 2, 2] grad) { %s = mul(%g, 1.3)\n"
      " %y = grid_sample(%x, %s, padding_mode=\"border\")\n %z = mul(%y, %y)\n return (%z) }",
      "graph t(%x: f32[1, 2, 3, 4] grad, %g: f32[1, 3, 2, 2]) { %y = grid_sample(%x, %g, mode=\"nearest\")\n %z = mul(%y, %y)\n return (%z) }",
      "graph t(%t: f32[2, 2, 3] grad, %x: f32[2, 1, 4, 5] grad) { %s = mul(%t, 0.5)\n %g = affine_grid(%s, size=[2, 1, 3, 4])\n"
      " %y = grid_sample(%x, %g)\n %z = mul(%y, %y)\n return (%z, %g) }",
  };
  return graphs;
}

}  // namespace reprokit::testing
