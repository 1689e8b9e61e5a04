// The reference convolution in tiles (see conv_tiles.h).
#include "conv_tiles.h"

#include <algorithm>
#include <cmath>

#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/op_semantics.h"
#include "reprokit/support/parallel_for.h"

namespace reprokit::kernels {

namespace {

constexpr int kLanes = 8;                  // output positions per tile: one panel of the gathered taps
constexpr int kRows = 4;                   // output channels per tile
constexpr int64_t kPanelsPerItem = 4;      // panels one work item gathers and reuses
constexpr int64_t kChannelsPerItem = 128;  // output channels one work item computes
constexpr int kLevels = 48;                // pairwise partial sums: enough for 2^48 taps

struct Geometry {
  int rank = 2;
  int64_t batch = 0, in_c = 0, out_c = 0, cg = 0, og = 0, groups = 0;
  int64_t ktaps = 0, taps = 0;  // kernel positions; taps per output (cg * ktaps)
  int64_t in_plane = 0, out_plane = 0;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1}, pad[3] = {0, 0, 0}, dil[3] = {1, 1, 1};
};

Geometry geometry_of(const Node& n, const Values& x, const Values& w, const Shape& out) {
  Geometry g;
  const Window win = window_of(n, &w.shape[2]);
  g.rank = win.rank;
  g.batch = x.shape[0], g.in_c = x.shape[1], g.out_c = out[1];
  g.groups = attr_int(n, "groups");
  g.cg = g.in_c / g.groups, g.og = g.out_c / g.groups;
  g.ktaps = 1, g.in_plane = 1, g.out_plane = 1;
  for (int d = 0; d < g.rank; ++d) {
    const size_t sd = static_cast<size_t>(d) + 2;
    g.in[d] = x.shape[sd], g.out[d] = out[sd], g.kernel[d] = w.shape[sd];
    g.stride[d] = win.stride[d], g.pad[d] = win.padding[d], g.dil[d] = win.dilation[d];
    g.ktaps *= g.kernel[d], g.in_plane *= g.in[d], g.out_plane *= g.out[d];
  }
  g.taps = g.cg * g.ktaps;
  return g;
}

// Gathers the taps of output positions [first, first + count) (count <= kLanes) of batch b,
// group grp into panel[tap * kLanes + lane]: the input element the tap reads, 0 in the padding.
void gather_panel(const Geometry& g, const double* x, int64_t b, int64_t grp, int64_t first, int64_t count, double* panel) {
  int64_t base[kLanes][3] = {};  // each lane's window origin in the input, per spatial dim
  for (int64_t j = 0; j < count; ++j) {
    int64_t rest = first + j;
    for (int d = g.rank - 1; d >= 0; --d) {
      base[j][d] = rest % g.out[d] * g.stride[d] - g.pad[d];
      rest /= g.out[d];
    }
  }
  if (g.rank == 2) {                                                                          // the common case, without the loop over dims
    for (int64_t j = count; j < kLanes; ++j) base[j][0] = -g.in[0] - g.kernel[0] * g.dil[0];  // outside whatever the tap: reads 0
    for (int64_t ic = 0; ic < g.cg; ++ic) {
      const double* image = x + (b * g.in_c + grp * g.cg + ic) * g.in_plane;
      double* row = panel + ic * g.ktaps * kLanes;
      for (int64_t ky = 0; ky < g.kernel[0]; ++ky)
        for (int64_t kx = 0; kx < g.kernel[1]; ++kx, row += kLanes)
          for (int64_t j = 0; j < kLanes; ++j) {
            const int64_t y = base[j][0] + ky * g.dil[0], xx = base[j][1] + kx * g.dil[1];
            row[j] = y >= 0 && y < g.in[0] && xx >= 0 && xx < g.in[1] ? image[y * g.in[1] + xx] : 0.0;
          }
    }
    return;
  }
  for (int64_t ic = 0; ic < g.cg; ++ic) {
    const double* image = x + (b * g.in_c + grp * g.cg + ic) * g.in_plane;
    for (int64_t t = 0; t < g.ktaps; ++t) {
      int64_t k[3] = {0, 0, 0}, rest = t;
      for (int d = g.rank - 1; d >= 0; --d) {
        k[d] = rest % g.kernel[d];
        rest /= g.kernel[d];
      }
      double* row = panel + (ic * g.ktaps + t) * kLanes;
      for (int64_t j = 0; j < kLanes; ++j) {
        double v = 0;
        if (j < count) {
          int64_t at = 0;
          bool inside = true;
          for (int d = 0; d < g.rank && inside; ++d) {
            const int64_t y = base[j][d] + k[d] * g.dil[d];
            inside = y >= 0 && y < g.in[d];
            at = at * g.in[d] + y;
          }
          if (inside) v = image[at];
        }
        row[j] = v;
      }
    }
  }
}

using Tile = double[kRows][kLanes];

// A row of a tile, its eight lanes as vectors of W doubles each: W = the width of the ISA's
// vector (2 for the baseline's SSE2, 4 for AVX2, 8 for AVX-512), so that every sum stays in a
// register. Vector arithmetic is lane-wise IEEE arithmetic, the same additions and roundings as
// the scalar loops, written so that the compiler vectorises across lanes and not across taps
// (which would shuffle more than it adds). One eight-double vector a row for every ISA was
// compiled for AVX2 into sums kept on the stack and moved through general registers at each
// tap: resnet18 on the eager interpreter took 3.1x as long (710 against 229 ms, two threads).
typedef double D2 __attribute__((vector_size(16)));
typedef double D4 __attribute__((vector_size(32)));
typedef double D8 __attribute__((vector_size(64)));
typedef float F2 __attribute__((vector_size(8)));
typedef float F4 __attribute__((vector_size(16)));
typedef float F8 __attribute__((vector_size(32)));
template <int W> struct Vectors;  // W doubles, and W floats to round them through
template <> struct Vectors<2> {
  using D = D2;
  using F = F2;
};
template <> struct Vectors<4> {
  using D = D4;
  using F = F4;
};
template <> struct Vectors<8> {
  using D = D8;
  using F = F8;
};
template <int W> struct Row {
  using Vec = typename Vectors<W>::D;
  using VecF = typename Vectors<W>::F;
  static constexpr int kParts = kLanes / W;
  Vec v[kParts];

  inline __attribute__((always_inline)) static Row load(const double* p) {
    Row r;
    for (int h = 0; h < kParts; ++h) __builtin_memcpy(&r.v[h], p + h * W, sizeof(Vec));
    return r;
  }
  inline __attribute__((always_inline)) void store(double* p) const {
    for (int h = 0; h < kParts; ++h) __builtin_memcpy(p + h * W, &v[h], sizeof(Vec));
  }
  // w times each lane.
  inline __attribute__((always_inline)) static Row times(double w, const Row& c) {
    Row r;
    for (int h = 0; h < kParts; ++h) r.v[h] = w * c.v[h];
    return r;
  }
  // A partial sum rounded as a float32 kernel keeps it (a float64 result's: as it is).
  template <bool F64> static inline __attribute__((always_inline)) Row add_rounded(const Row& a, const Row& b) {
    Row r;
    for (int h = 0; h < kParts; ++h) {
      const Vec sum = a.v[h] + b.v[h];
      if constexpr (F64) r.v[h] = sum;
      else r.v[h] = __builtin_convertvector(__builtin_convertvector(sum, VecF), Vec);
    }
    return r;
  }
  inline __attribute__((always_inline)) void add(const Row& t) {
    for (int h = 0; h < kParts; ++h) v[h] += t.v[h];
  }
};

// One tile: rows w[i] (taps weights each) against a panel; the sums, as StepSum (accumulation.h)
// forms them, into `sum`.
template <AccumulationOrder O, bool F64, int W>
inline __attribute__((always_inline)) void tile(const double* const* w, int64_t taps, const double* panel, Tile& sum) {
  using R = Row<W>;
  R out[kRows] = {};
  if constexpr (O == AccumulationOrder::exact || O == AccumulationOrder::forward || O == AccumulationOrder::reversed) {
    for (int64_t it = 0; it < taps; ++it) {
      const int64_t s = O == AccumulationOrder::reversed ? taps - 1 - it : it;
      const R c = R::load(panel + s * kLanes);
      for (int i = 0; i < kRows; ++i) {
        const R t = R::times(w[i][s], c);
        if constexpr (O == AccumulationOrder::exact) out[i].add(t);
        else out[i] = R::template add_rounded<F64>(out[i], t);
      }
    }
  } else if constexpr (O == AccumulationOrder::blocked || O == AccumulationOrder::wide) {
    // Interleaved partial sums (8 or 32 SIMD lanes), then combined pairwise as a horizontal sum.
    constexpr int kSums = O == AccumulationOrder::wide ? 32 : 8;
    R parts[kSums][kRows] = {};
    for (int64_t s = 0; s < taps; ++s) {
      R* p = parts[s % kSums];
      const R c = R::load(panel + s * kLanes);
      for (int i = 0; i < kRows; ++i) p[i] = R::template add_rounded<F64>(p[i], R::times(w[i][s], c));
    }
    for (int width = kSums / 2; width >= 1; width /= 2)
      for (int l = 0; l < width; ++l)
        for (int i = 0; i < kRows; ++i) parts[l][i] = R::template add_rounded<F64>(parts[l][i], parts[l + width][i]);
    for (int i = 0; i < kRows; ++i) out[i] = parts[0][i];
  } else {
    // Pairwise: a binary counter of partial sums, level L holding the sum of 2^L consecutive taps
    // (a lone tap at level 0 unrounded, as StepSum keeps it).
    R levels[kLevels][kRows];
    uint64_t used = 0;
    for (int64_t s = 0; s < taps; ++s) {
      R carry[kRows];
      const R c = R::load(panel + s * kLanes);
      for (int i = 0; i < kRows; ++i) carry[i] = R::times(w[i][s], c);
      for (int level = 0;; ++level) {
        if (!(used >> level & 1)) {
          for (int i = 0; i < kRows; ++i) levels[level][i] = carry[i];
          used |= uint64_t{1} << level;
          break;
        }
        for (int i = 0; i < kRows; ++i) carry[i] = R::template add_rounded<F64>(carry[i], levels[level][i]);
        used &= ~(uint64_t{1} << level);
      }
    }
    for (int level = 0; level < kLevels; ++level)
      if (used >> level & 1)
        for (int i = 0; i < kRows; ++i) out[i] = R::template add_rounded<F64>(out[i], levels[level][i]);
  }
  for (int i = 0; i < kRows; ++i) out[i].store(sum[i]);
}

using TileFn = void (*)(const double* const*, int64_t, const double*, Tile&);

// The same tile for the machine's baseline and, on x86-64, for AVX2 and AVX-512 (two, four and
// eight doubles a vector): each element's additions are the same IEEE operations either way, so the result is too.
template <AccumulationOrder O, bool F64> void tile_baseline(const double* const* w, int64_t taps, const double* panel, Tile& sum) {
  tile<O, F64, 2>(w, taps, panel, sum);
}
#if defined(__x86_64__)
template <AccumulationOrder O, bool F64>
__attribute__((target("avx2"))) void tile_avx2(const double* const* w, int64_t taps, const double* panel, Tile& sum) {
  tile<O, F64, 4>(w, taps, panel, sum);
}
template <AccumulationOrder O, bool F64>
__attribute__((target("avx512f"))) void tile_avx512(const double* const* w, int64_t taps, const double* panel, Tile& sum) {
  tile<O, F64, 8>(w, taps, panel, sum);
}
#endif

template <AccumulationOrder O, bool F64> TileFn tile_fn(TileIsa isa) {
#if defined(__x86_64__)
  if (isa == TileIsa::avx512) return tile_avx512<O, F64>;
  if (isa == TileIsa::avx2) return tile_avx2<O, F64>;
#endif
  (void)isa;
  return tile_baseline<O, F64>;
}

template <bool F64> TileFn tile_for(AccumulationOrder o, TileIsa isa) {
  switch (o) {
    case AccumulationOrder::exact: return tile_fn<AccumulationOrder::exact, F64>(isa);
    case AccumulationOrder::forward: return tile_fn<AccumulationOrder::forward, F64>(isa);
    case AccumulationOrder::reversed: return tile_fn<AccumulationOrder::reversed, F64>(isa);
    case AccumulationOrder::pairwise: return tile_fn<AccumulationOrder::pairwise, F64>(isa);
    case AccumulationOrder::blocked: return tile_fn<AccumulationOrder::blocked, F64>(isa);
    case AccumulationOrder::wide: return tile_fn<AccumulationOrder::wide, F64>(isa);
  }
  return tile_fn<AccumulationOrder::exact, F64>(isa);
}

}  // namespace

std::vector<TileIsa> tile_isas_here() {
  std::vector<TileIsa> v = {TileIsa::baseline};
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2")) v.push_back(TileIsa::avx2);
  if (__builtin_cpu_supports("avx512f")) v.push_back(TileIsa::avx512);
#endif
  return v;
}

bool conv_tiles_apply(const Values& weight) {
  return std::all_of(weight.f.begin(), weight.f.end(), [](double v) { return std::isfinite(v); });
}

std::vector<double> conv_tiled(const Node& n, const std::vector<Values>& a, const Shape& out, AccumulationOrder order) {
  static const TileIsa best = tile_isas_here().back();
  return conv_tiled(n, a, out, order, best);
}

std::vector<double> conv_tiled(const Node& n, const std::vector<Values>& a, const Shape& out, AccumulationOrder order, TileIsa isa) {
  const Values &x = a[0], &wt = a[1];
  const Geometry g = geometry_of(n, x, wt, out);
  // As StepSum: partial sums rounded to the result's precision, float32 unless it is float64.
  const TileFn run = n.type.dtype == DType::f64 ? tile_for<true>(order, isa) : tile_for<false>(order, isa);
  const double* bias = a.size() > 2 ? a[2].f.data() : nullptr;
  std::vector<double> res(static_cast<size_t>(numel(out)), 0.0);
  const int64_t panels = (g.out_plane + kLanes - 1) / kLanes, chunks = (panels + kPanelsPerItem - 1) / kPanelsPerItem;
  const int64_t blocks = (g.og + kChannelsPerItem - 1) / kChannelsPerItem;
  const int64_t items = g.batch * g.groups * chunks * blocks;
  // Every output element is computed by one item alone, in the same order whichever thread runs it.
  parallel_for(items, numel(out) * g.taps > (int64_t{1} << 22), [&](int64_t item) {
    const int64_t block = item % blocks, chunk = item / blocks % chunks, grp = item / blocks / chunks % g.groups;
    const int64_t b = item / blocks / chunks / g.groups;
    const int64_t first_panel = chunk * kPanelsPerItem, panel_count = std::min(kPanelsPerItem, panels - first_panel);
    static thread_local std::vector<double> gathered;
    gathered.resize(static_cast<size_t>(panel_count * g.taps * kLanes));
    for (int64_t p = 0; p < panel_count; ++p) {
      const int64_t first = (first_panel + p) * kLanes;
      gather_panel(g, x.f.data(), b, grp, first, std::min<int64_t>(kLanes, g.out_plane - first), gathered.data() + p * g.taps * kLanes);
    }
    const int64_t oc_first = grp * g.og + block * kChannelsPerItem, oc_end = std::min(grp * g.og + g.og, oc_first + kChannelsPerItem);
    for (int64_t oc0 = oc_first; oc0 < oc_end; oc0 += kRows) {
      const int rows = static_cast<int>(std::min<int64_t>(kRows, oc_end - oc0));
      const double* w[kRows];
      for (int i = 0; i < kRows; ++i) w[i] = wt.f.data() + (oc0 + std::min(i, rows - 1)) * g.taps;  // spare rows repeat the last
      for (int64_t p = 0; p < panel_count; ++p) {
        Tile sum;
        run(w, g.taps, gathered.data() + p * g.taps * kLanes, sum);
        const int64_t first = (first_panel + p) * kLanes, count = std::min<int64_t>(kLanes, g.out_plane - first);
        for (int i = 0; i < rows; ++i) {
          double* dst = res.data() + (b * g.out_c + oc0 + i) * g.out_plane + first;
          for (int64_t j = 0; j < count; ++j) dst[j] = bias ? sum[i][j] + bias[oc0 + i] : sum[i][j];
        }
      }
    }
  });
  return res;
}

}  // namespace reprokit::kernels
