// The reference convolution (conv2d, conv3d) computed in tiles: a few output channels by eight
// output positions at a time, over the positions' input taps gathered once into a panel
// (im2col). Each output element still adds its taps one by one in (input channel, kernel index)
// order, in double or in the noise floor's accumulation orders (accumulation.h), so the result is
// the direct loops' bit for bit; only the loops around that sum change, for the caches' sake.
// A graph's float64 reference and its noise floor run every convolution a dozen times: on a
// CNN this is most of a check's time.
#pragma once
#include <cstdint>
#include <vector>

#include "kernel_util.h"

namespace reprokit::kernels {

// Whether the tiles give the direct loops' result: a padding tap reads 0 and adds weight * 0,
// which is 0 only for a finite weight (the direct loops skip padding taps).
bool conv_tiles_apply(const Values& weight);

// The vector instructions a tile runs on; the result is the same on each.
enum class TileIsa { baseline, avx2, avx512 };
std::vector<TileIsa> tile_isas_here();  // those this machine has, the widest last

// conv2d/conv3d of node n over operands a (x, weight[, bias]) into `out`: the values the direct
// loops give. Without `isa`, the machine's widest.
std::vector<double> conv_tiled(const Node& n, const std::vector<Values>& a, const Shape& out, AccumulationOrder order);
std::vector<double> conv_tiled(const Node& n, const std::vector<Values>& a, const Shape& out, AccumulationOrder order, TileIsa isa);

// The direct loops: one output plane at a time, one tap after another. Used where the tiles do
// not apply, and the tiles' check.
std::vector<double> conv_direct(const Node& n, const std::vector<Values>& a, const Shape& out, AccumulationOrder order);

}  // namespace reprokit::kernels
