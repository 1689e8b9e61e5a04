// Window kernels (NCHW, NCDHW for the 3-D pools): max/avg pooling and their backward ops (per (batch, channel) plane, so
// overlapping windows never race), adaptive average pooling, and constant padding. All follow
// PyTorch's CPU kernels: the first maximum wins, NaN wins, avg divisors as avg_pool2d's.
#include <fmt/format.h>

#include "codegen.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/op_semantics.h"

namespace reprokit::codegen_detail {

// Index of element (b, c, y, x) of 4-D value v through its strides.
std::string Codegen::at4(int v, const std::string& b, const std::string& c, const std::string& y, const std::string& x) const {
  Access a = access(v);
  const Shape& st = a.strides;
  return fmt::format("{} + ({}) * {} + ({}) * {} + ({}) * {} + ({}) * {}", a.offset, b, st[0], c, st[1], y, st[2], x, st[3]);
}
std::string Codegen::load4(int v, const char* ct, const std::string& b, const std::string& c, const std::string& y, const std::string& x) const {
  return fmt::format("({}){}", ct, load_expr(g_.node(v).type.dtype, ptr(access(v)), at4(v, b, c, y, x)));
}

// Index of the element of value v at `index` (one expression per dim) through its strides.
std::string Codegen::at_n(int v, const std::vector<std::string>& index) const {
  Access a = access(v);
  std::string s = std::to_string(a.offset);
  for (size_t d = 0; d < index.size(); ++d) s += fmt::format(" + ({}) * {}", index[d], a.strides[d]);
  return s;
}
std::string Codegen::load_n(int v, const char* ct, const std::vector<std::string>& index) const {
  return fmt::format("({}){}", ct, load_expr(g_.node(v).type.dtype, ptr(access(v)), at_n(v, index)));
}

// The loops over one window of a pool, at output (oy, ox) (3-D: (oz, oy, ox)) of plane
// (nb, ch): `body` runs for each element inside the input, with y and xx (and z) set; divisors
// as PyTorch's avg_pool2d.
std::string Codegen::window_loops(const Window& win, const Shape& in, const std::string& body, bool declare) const {
  const int y = win.rank - 2, x = win.rank - 1;  // the window's dims of H and W
  const size_t iy = static_cast<size_t>(y) + 2, ix = static_cast<size_t>(x) + 2;
  const bool deep = win.rank == 3;
  std::string s;
  if (declare && deep) s += fmt::format("      const int64_t z0 = oz * {} - {};\n", win.stride[0], win.padding[0]);
  if (declare)
    s += fmt::format("      const int64_t y0 = oy * {} - {}, x0 = ox * {} - {};\n", win.stride[y], win.padding[y], win.stride[x], win.padding[x]);
  if (declare) {
    s += fmt::format("      const int64_t padded = {}(rk_min<int64_t>(y0 + {}, {}) - y0) * (rk_min<int64_t>(x0 + {}, {}) - x0);\n",
                     deep ? fmt::format("(rk_min<int64_t>(z0 + {}, {}) - z0) * ", win.kernel[0], in[2] + win.padding[0]) : "", win.kernel[y],
                     in[iy] + win.padding[y], win.kernel[x], in[ix] + win.padding[x]);
    s += "      int64_t valid = 0;\n";
  }
  if (deep)
    s += fmt::format("      for (int64_t l = 0; l < {}; ++l) {{\n        const int64_t z = z0 + l * {}; if (z < 0 || z >= {}) continue;\n",
                     win.kernel[0], win.dilation[0], in[2]);
  s += fmt::format("      for (int64_t i = 0; i < {}; ++i) {{\n        const int64_t y = y0 + i * {}; if (y < 0 || y >= {}) continue;\n",
                   win.kernel[y], win.dilation[y], in[iy]);
  s += fmt::format("        for (int64_t j = 0; j < {}; ++j) {{\n          const int64_t xx = x0 + j * {}; if (xx < 0 || xx >= {}) continue;\n",
                   win.kernel[x], win.dilation[x], in[ix]);
  s += (declare ? "          ++valid;\n" : "") + body + "        }\n      }\n";
  if (deep) s += "      }\n";
  if (declare) s += "      (void)padded;\n";
  return s;
}

namespace {
// The spatial index variables of a pool's window loops (window_loops) and of its output.
std::vector<std::string> window_index(const Window& win) {
  return win.rank == 3 ? std::vector<std::string>{"nb", "ch", "z", "y", "xx"} : std::vector<std::string>{"nb", "ch", "y", "xx"};
}
std::vector<std::string> output_index(const Window& win) {
  return win.rank == 3 ? std::vector<std::string>{"nb", "ch", "oz", "oy", "ox"} : std::vector<std::string>{"nb", "ch", "oy", "ox"};
}
// The loops over a plane's outputs: (oy, ox), or (oz, oy, ox).
std::string output_loops(const Shape& os) {
  if (os.size() == 5)
    return fmt::format("    for (int64_t oz = 0; oz < {}; ++oz) for (int64_t oy = 0; oy < {}; ++oy) for (int64_t ox = 0; ox < {}; ++ox) {{\n", os[2],
                       os[3], os[4]);
  return fmt::format("    for (int64_t oy = 0; oy < {}; ++oy) for (int64_t ox = 0; ox < {}; ++ox) {{\n", os[2], os[3]);
}
// The flat index within a plane of window element (z,) y, xx, and of output (oz,) oy, ox.
std::string plane_at(const Shape& s, bool output) {
  const char *z = output ? "oz" : "z", *y = output ? "oy" : "y", *x = output ? "ox" : "xx";
  if (s.size() == 5) return fmt::format("({} * {} + {}) * {} + {}", z, s[3], y, s[4], x);
  return fmt::format("{} * {} + {}", y, s[3], x);
}
int64_t plane_size(const Shape& s) {
  int64_t p = 1;
  for (size_t d = 2; d < s.size(); ++d) p *= s[d];
  return p;
}
int64_t window_size(const Window& win) {
  int64_t p = 1;
  for (int d = 0; d < win.rank; ++d) p *= win.kernel[d];
  return p;
}
}  // namespace

std::string Codegen::pool_kernel(int id) {
  const Node& n = g_.node(id);
  int x = n.operands[0].value;
  const Shape &in = g_.node(x).type.shape, &os = n.type.shape;
  Window win = window_of(n);
  const char* ct = compute_type(n.type.dtype);
  bool is_max = n.op == Op::max_pool2d || n.op == Op::max_pool3d;
  if (is_max && win.rank == 2 && target_.openmp && os[3] <= 4096) {  // a row of accumulators on the stack
    if (!max_pool_vectors(id)) return max_pool_rows(id);
    // The prelude's kernel where the machine has AVX-512 or AVX2 (cpp_pool.h), the rows below elsewhere.
    const Access xa = access(x);
    std::string s = "#if defined(RK_POOL_VECTORS)\n  {\n" + window_constant(x, win, os, os[1]);
    s += fmt::format("    if (rk_max_pool_f32({}, (const float*){} + {}, {}, &window, (float*){})) {}\n  }}\n", os[0], ptr(xa), xa.offset,
                     xa.strides[0], buf(id), fail(fmt::format("{}: the max pool kernel does not take this window", n.name)));
    return s + "#else\n" + max_pool_rows(id) + "#endif\n";
  }
  std::string s = loop("nc", os[0] * os[1], plane_size(os) * window_size(win)) + " {\n";
  s += fmt::format("    const int64_t nb = nc / {0}, ch = nc % {0};\n", os[1]);
  s += output_loops(os);
  // A max over a window with no element (all of it padding) is -inf, as PyTorch's.
  s += fmt::format("      {} acc = ({}){};{}\n", ct, ct, is_max ? "-INFINITY" : "0", is_max ? " bool any = false;" : "");
  std::string v = load_n(x, ct, window_index(win));
  // max: the first maximum, NaN winning (PyTorch); avg: the sum, then the divisor.
  std::string body = is_max ? fmt::format("          {{ {} v = {}; if (!any || (acc == acc && (v != v || v > acc))) acc = v; any = true; }}\n", ct, v)
                            : fmt::format("          acc += {};\n", v);
  s += window_loops(win, in, body);
  if (!is_max) s += fmt::format("      acc = acc / ({})({});\n", ct, attr_bool(n, "count_include_pad") ? "padded" : "valid");
  std::string r = perturbs(id) ? perturb_open(id) + "acc)" : "acc";
  s += fmt::format("      {}[nc * {} + {}] = {};\n    }}\n  }}\n", buf(id), plane_size(os), plane_at(os, true), store_value(n.type.dtype, r));
  return s;
}

// Float 2-D max pools whose input the prelude's kernel can address (rows of unit stride, strides
// not negative) and whose window it takes (no dilation, stride 1 or 2 along a row, 16 columns and
// rows of 256 outputs at most) run on it on AVX-512 and AVX2 (rk_max_pool_f32, cpp_pool.h). A pool a fault is
// injected into stays on the generated rows.
bool Codegen::max_pool_vectors(int id) const {
  const Node& n = g_.node(id);
  const int x = n.operands[0].value;
  const Access xa = access(x);
  const Window win = window_of(n);
  const Shape& os = n.type.shape;
  if (!target_.blas || n.type.dtype != DType::f32 || xa.dtype != DType::f32 || perturbs(id) || win.rank != 2) return false;
  for (int64_t st : xa.strides)
    if (st < 0) return false;
  return xa.strides[3] == 1 && win.dilation[0] == 1 && win.dilation[1] == 1 && (win.stride[1] == 1 || win.stride[1] == 2) && win.kernel[1] <= 16 &&
         os[3] >= 1 && os[3] <= 256 && os[2] >= 1 && os[0] * os[1] >= 1;
}

// Max pooling on the CPU, an output row at a time: the row starts at -inf (a window all
// padding stays -inf, as PyTorch's) and each tap folds its valid span of input in with one
// vectorised loop. Taps go in window order and a later tap wins only if greater, so the first
// maximum and the first NaN win as before.
std::string Codegen::max_pool_rows(int id) {
  const Node& n = g_.node(id);
  int x = n.operands[0].value;
  const Shape &in = g_.node(x).type.shape, &os = n.type.shape;
  const Window win = window_of(n);
  const char* ct = compute_type(n.type.dtype);
  Access xa = access(x);
  std::string s = loop("row", os[0] * os[1] * os[2], os[3] * win.kernel[0] * win.kernel[1]) + " {\n";
  s += fmt::format("    const int64_t nc = row / {0}, oy = row % {0}, nb = nc / {1}, ch = nc % {1};\n", os[2], os[1]);
  s += fmt::format("    {0} acc[{1}];\n    for (int64_t ox = 0; ox < {1}; ++ox) acc[ox] = ({0})-INFINITY;\n", ct, os[3]);
  s += fmt::format("    for (int64_t i = 0; i < {}; ++i) {{\n", win.kernel[0]);
  s += fmt::format("      const int64_t y = oy * {} - {} + i * {}; if (y < 0 || y >= {}) continue;\n", win.stride[0], win.padding[0], win.dilation[0],
                   in[2]);
  s += fmt::format("      const int64_t base = {} + nb * {} + ch * {} + y * {};\n", xa.offset, xa.strides[0], xa.strides[1], xa.strides[2]);
  s += fmt::format("      for (int64_t j = 0; j < {}; ++j) {{\n", win.kernel[1]);
  s += "        " + valid_columns(win, in[3], os[3]);
  s += "        #pragma omp simd\n";
  s += fmt::format(
      "        for (int64_t ox = lo; ox < hi; ++ox) {{ const {} v = ({}){}, a = acc[ox]; acc[ox] = (a == a && (v != v || v > a)) ? v : a; }}\n", ct,
      ct, load_expr(xa.dtype, ptr(xa), fmt::format("base + (ox * {} + off) * {}", win.stride[1], xa.strides[3])));
  s += "      }\n    }\n";
  std::string r = perturbs(id) ? perturb_open(id) + "acc[ox])" : "acc[ox]";
  s += fmt::format("    for (int64_t ox = 0; ox < {}; ++ox) {}[row * {} + ox] = {};\n  }}\n", os[3], buf(id), os[3], store_value(n.type.dtype, r));
  return s;
}

// The pools' backward: per (batch, channel) plane, so overlapping windows never race.
std::string Codegen::pool_backward_kernel(int id) {
  const Node& n = g_.node(id);
  int gr = n.operands[0].value, x = n.operands[1].value;
  const Shape &in = g_.node(x).type.shape, &gs = g_.node(gr).type.shape;
  Window win = window_of(n);
  const char* ct = compute_type(n.type.dtype);
  bool is_max = n.op == Op::max_pool2d_backward || n.op == Op::max_pool3d_backward;
  const int64_t plane = plane_size(in);
  const std::string acc = local("acc_", id);
  std::string s = scratch(acc, ct, n.type.numel());
  s += loop("nc", in[0] * in[1], plane_size(gs) * window_size(win)) + " {\n";
  s += fmt::format("    const int64_t nb = nc / {0}, ch = nc % {0};\n", in[1]);
  s += fmt::format("    {}* plane = {} + nc * {};\n", ct, acc, plane);
  s += fmt::format("    for (int64_t k = 0; k < {}; ++k) plane[k] = ({})0;\n", plane, ct);
  s += output_loops(gs);
  std::string gv = load_n(gr, ct, output_index(win));
  if (is_max) {
    s += fmt::format("      {} best = ({})0; int64_t at = -1; bool any = false;\n", ct, ct);
    std::string v = load_n(x, ct, window_index(win));
    s += window_loops(
        win, in,
        fmt::format("          {{ {} v = {}; if (!any || (best == best && (v != v || v > best))) {{ best = v; at = {}; }} any = true; }}\n", ct, v,
                    plane_at(in, false)));
    s += fmt::format("      if (at >= 0) plane[at] += {};\n", gv);
  } else {
    s += window_loops(win, in, "");  // counts the divisor
    s += fmt::format("      const {} share = {} / ({})({});\n", ct, gv, ct, attr_bool(n, "count_include_pad") ? "padded" : "valid");
    s += window_loops(win, in, fmt::format("          plane[{}] += share;\n", plane_at(in, false)), false);
  }
  s += "    }\n";
  std::string r = perturbs(id) ? perturb_open(id) + "plane[k])" : "plane[k]";
  s += fmt::format("    for (int64_t k = 0; k < {}; ++k) {}[nc * {} + k] = {};\n  }}\n", plane, buf(id), plane, store_value(n.type.dtype, r));
  return s;
}

std::string Codegen::adaptive_pool_kernel(int id) {
  const Node& n = g_.node(id);
  int x = n.operands[0].value;
  const Shape &in = g_.node(x).type.shape, &os = n.type.shape;
  const char* ct = compute_type(n.type.dtype);
  std::string s = loop("o", numel(os), in[2] * in[3] / (os[2] * os[3]) + 1) + " {\n";
  s += fmt::format("    const int64_t ox = o % {0}, oy = (o / {0}) % {1}, ch = (o / {2}) % {3}, nb = o / {4};\n", os[3], os[2], os[2] * os[3], os[1],
                   os[1] * os[2] * os[3]);
  s += fmt::format("    const int64_t y0 = (oy * {0}) / {1}, y1 = ((oy + 1) * {0} + {1} - 1) / {1};\n", in[2], os[2]);
  s += fmt::format("    const int64_t x0 = (ox * {0}) / {1}, x1 = ((ox + 1) * {0} + {1} - 1) / {1};\n", in[3], os[3]);
  s += fmt::format("    {} acc = ({})0;\n    for (int64_t y = y0; y < y1; ++y) for (int64_t xx = x0; xx < x1; ++xx) acc += {};\n", ct, ct,
                   load4(x, ct, "nb", "ch", "y", "xx"));
  std::string r = fmt::format("acc / ({})((y1 - y0) * (x1 - x0))", ct);
  if (perturbs(id)) r = perturb_open(id) + r + ")";
  s += fmt::format("    {}[o] = {};\n  }}\n", buf(id), store_value(n.type.dtype, r));
  return s;
}

std::string Codegen::pad_kernel(int id) {
  const Node& n = g_.node(id);
  int x = n.operands[0].value;
  const TensorType& xt = g_.node(x).type;
  auto amounts = pad_amounts(n, xt.rank());
  const Shape& os = n.type.shape;
  Access xa = access(x);
  Shape ostr = contiguous_strides(os), xstr = xa.strides;
  const char* ct = compute_type(n.type.dtype);
  std::string inside = "true", src = std::to_string(xa.offset);
  for (size_t d = 0; d < os.size(); ++d) {
    std::string c = fmt::format("((i / {}) % {} - {})", ostr[d], os[d], amounts[d].first);
    inside += fmt::format(" && {0} >= 0 && {0} < {1}", c, xt.shape[d]);
    src += fmt::format(" + {} * {}", c, xstr[d]);
  }
  std::string v = fmt::format("(({}) ? ({}){} : {})", inside, ct, load_expr(xt.dtype, ptr(xa), "rk_max<int64_t>(" + src + ", 0)"),
                              literal(AttrValue(attr_float(n, "value")), ct));
  if (perturbs(id)) v = perturb_open(id) + v + ")";
  return loop("i", n.type.numel(), 1) + fmt::format(" {}[i] = {};\n", buf(id), store_value(n.type.dtype, v));
}

}  // namespace reprokit::codegen_detail
