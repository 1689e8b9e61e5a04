// The accuracy rule (see accuracy.h).
#include "reprokit/harness/accuracy.h"

#include <fmt/format.h>

#include <cmath>

#include "reprokit/runtime/interpreter.h"

namespace reprokit {

double default_tolerance(DType t) { return t == DType::f16 || t == DType::bf16 ? 1e-2 : 1e-3; }

namespace {
double rmse(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  size_t n = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::isfinite(a[i]) && std::isfinite(b[i])) { s += (a[i] - b[i]) * (a[i] - b[i]); ++n; }
  return n ? std::sqrt(s / static_cast<double>(n)) : 0;
}
}  // namespace

std::string compare_output(const std::string& name, const Tensor& compiled, const Tensor& eager, const Tensor& reference, double tol) {
  if (compiled.dtype() != eager.dtype())
    return fmt::format("output %{}: dtype {} differs from eager's {}", name, dtype_name(compiled.dtype()), dtype_name(eager.dtype()));
  if (compiled.shape() != eager.shape()) return fmt::format("output %{}: shape differs from eager's", name);
  if (!is_floating(compiled.dtype())) {
    auto c = compiled.to_int64s(), e = eager.to_int64s();
    size_t bad = 0;
    for (size_t i = 0; i < c.size(); ++i) bad += c[i] != e[i];
    return bad ? fmt::format("output %{} ({}): {} of {} elements differ from eager (integer and bool outputs must match exactly)", name,
                             dtype_name(compiled.dtype()), bad, c.size())
               : "";
  }
  auto c = compiled.to_doubles(), e = eager.to_doubles(), r = reference.to_doubles();
  for (size_t i = 0; i < c.size(); ++i) {
    bool rn = std::isnan(r[i]) || std::isnan(e[i]);
    if (std::isnan(c[i]) != rn) return fmt::format("output %{}: element {} is {} where eager is {}", name, i, c[i], e[i]);
    if (std::isinf(e[i]) && c[i] != e[i]) return fmt::format("output %{}: element {} is {} where eager is {}", name, i, c[i], e[i]);
  }
  bool close = true;
  for (size_t i = 0; i < c.size() && close; ++i)
    if (std::isfinite(c[i]) && !(std::fabs(c[i] - e[i]) <= tol + tol * std::fabs(e[i]))) close = false;
  if (close) return "";
  double k = compiled.dtype() == DType::f16 || compiled.dtype() == DType::bf16 ? 3 : 2;
  double rc = rmse(c, r), re = rmse(e, r);
  if (rc <= k * re + tol / 10) return "";
  return fmt::format("output %{}: compiled RMSE against float64 {:.3g} exceeds {} x eager's {:.3g} + {:.3g}", name, rc, k, re, tol / 10);
}

Failure check_accuracy(const Graph& g, const std::vector<Tensor>& inputs, const std::vector<Tensor>& compiled, std::optional<double> tolerance) {
  auto eager = interpret(g, inputs);
  InterpretOptions f64;
  f64.cast_to_f64 = true;
  auto ref = interpret(g, inputs, f64);
  Failure f;
  bool float_fail = false;
  std::string msgs;
  int failing = 0;
  for (size_t k = 0; k < g.outputs.size() && k < compiled.size(); ++k) {
    const Node& out = g.node(g.outputs[k]);
    double tol = tolerance ? *tolerance : default_tolerance(out.type.dtype);
    std::string m = compare_output(out.name, compiled[k], eager[k], ref[k], tol);
    if (m.empty()) continue;
    float_fail |= is_floating(out.type.dtype);
    if (++failing <= 3) msgs += (msgs.empty() ? "" : "; ") + m;  // the first few say enough
  }
  if (failing > 3) msgs += fmt::format("; and {} more outputs", failing - 3);
  if (compiled.size() != g.outputs.size()) msgs = fmt::format("compiled graph returned {} outputs, expected {}", compiled.size(), g.outputs.size());
  if (msgs.empty()) return f;
  f.kind = FailureKind::accuracy;
  f.message = "accuracy check failed: " + msgs;
  f.signature = float_fail || compiled.size() != g.outputs.size() ? "accuracy" : "accuracy-integer";
  return f;
}

}  // namespace reprokit
