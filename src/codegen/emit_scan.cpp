// Scan and sort kernels, one loop iteration per line along the op's dim: cumsum and cumprod
// (floating values accumulate in double, as PyTorch's CPU kernels do; integers in wrapping
// int64), argsort and topk_indices (a stable insertion into the result's line, keeping the first
// k; NaN sorts as the largest value). sort and topk are decomposed into these and a gather.
#include <fmt/format.h>

#include "codegen.h"
#include "reprokit/ir/op_registry.h"
#include "reprokit/ir/op_semantics.h"

namespace reprokit::codegen_detail {

std::string Codegen::scan_kernel(int id) {
  const Node& n = g_.node(id);
  int x = n.operands[0].value;
  const TensorType& xt = g_.node(x).type;
  ScanLines l = scan_lines(n, xt.shape);
  const int64_t lines = l.outer * l.inner;
  const bool indices = n.op == Op::argsort || n.op == Op::topk_indices;
  const int64_t keep = n.op == Op::topk_indices ? topk_k(n, xt.shape) : l.length;
  const char* xct = compute_type(xt.dtype);
  // Element j of the input's line: flat index (o * length + j) * inner + i.
  auto at = [&](const std::string& j) { return fmt::format("(rk_o * {} + {}) * {} + rk_i", l.length, j, l.inner); };
  std::string s =
      loop("rk_l", lines, l.length * (indices ? keep : 1)) + fmt::format(" {{\n    const int64_t rk_o = rk_l / {0}, rk_i = rk_l % {0};\n", l.inner);
  if (!indices) {
    const bool product = n.op == Op::cumprod, floating = is_floating(n.type.dtype);
    // Unsigned: integer overflow wraps, as in PyTorch (spelled without <cstdint>, which NVRTC lacks).
    const char* acc = floating ? "double" : "unsigned long long";
    std::string term = floating ? std::string("(double)rk_v") : "(unsigned long long)(int64_t)rk_v";
    std::string v = floating ? fmt::format("({})rk_acc", compute_type(n.type.dtype)) : "(int64_t)rk_acc";
    if (perturbs(id)) v = perturb_open(id) + v + ")";
    s += fmt::format("    {} rk_acc = {};\n", acc, product ? "1" : "0");
    s += fmt::format("    for (int64_t rk_j = 0; rk_j < {}; ++rk_j) {{\n", l.length);
    s += fmt::format("      const int64_t rk_f = {};\n", at("rk_j"));
    s += fmt::format("      const {} rk_v = {};\n", xct, load(x, xct, xt.shape, "rk_f"));
    s += fmt::format("      rk_acc = rk_acc {} {};\n", product ? "*" : "+", term);
    s += fmt::format("      {}[rk_f] = {};\n    }}\n  }}\n", buf(id), store_value(n.type.dtype, v));
    return s;
  }
  // Whether a sorts strictly before b: ascending puts NaN last, descending first.
  const bool descending = orders_descending(n), floating = is_floating(xt.dtype);
  auto before = [&](const char* a, const char* b) {
    if (descending) std::swap(a, b);
    return floating ? fmt::format("(!({0} != {0}) && (({1} != {1}) || {0} < {1}))", a, b) : fmt::format("({} < {})", a, b);
  };
  // Element p of the result's line.
  const std::string out = fmt::format("{}[(rk_o * {} + rk_p) * {} + rk_i]", buf(id), keep, l.inner);
  const std::string out_prev = fmt::format("{}[(rk_o * {} + rk_p - 1) * {} + rk_i]", buf(id), keep, l.inner);
  s += "    int64_t rk_kept = 0;\n";
  s += fmt::format("    for (int64_t rk_j = 0; rk_j < {}; ++rk_j) {{\n", l.length);
  s += fmt::format("      const int64_t rk_f = {};\n", at("rk_j"));
  s += fmt::format("      const {} rk_v = {};\n", xct, load(x, xct, xt.shape, "rk_f"));
  s += fmt::format("      int64_t rk_p = rk_kept;\n");
  s += "      while (rk_p > 0) {\n";
  s += fmt::format("        const int64_t rk_q = {};\n", out_prev);
  s += fmt::format("        const int64_t rk_g = {};\n", at("rk_q"));
  s += fmt::format("        const {} rk_w = {};\n", xct, load(x, xct, xt.shape, "rk_g"));
  s += fmt::format("        if (!{}) break;\n", before("rk_v", "rk_w"));
  s += fmt::format("        if (rk_p < {}) {} = rk_q;\n", keep, out);
  s += "        --rk_p;\n      }\n";
  s += fmt::format("      if (rk_p < {}) {} = rk_j;\n", keep, out);
  s += fmt::format("      if (rk_kept < {}) ++rk_kept;\n    }}\n  }}\n", keep);
  return s;
}

}  // namespace reprokit::codegen_detail
