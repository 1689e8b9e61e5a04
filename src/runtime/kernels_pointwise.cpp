// Reference kernels of the pointwise ops: unary, binary (broadcasting), where, to, clone.
#include <cmath>

#include "kernel_util.h"
#include "reprokit/ir/op_registry.h"

namespace reprokit::kernels {

namespace {

Kernel unary(double (*f)(double)) {
  return [f](const Node&, const std::vector<Arg>& a, const Shape&) {
    std::vector<double> out(a[0].v.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = f(a[0].v[i]);
    return out;
  };
}

Kernel binary(double (*f)(double, double)) {
  return [f](const Node&, const std::vector<Arg>& a, const Shape& out_shape) {
    auto ia = broadcast_map(out_shape, a[0].shape), ib = broadcast_map(out_shape, a[1].shape);
    std::vector<double> out(ia.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = f(a[0].v[static_cast<size_t>(ia[i])], a[1].v[static_cast<size_t>(ib[i])]);
    return out;
  };
}

double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// NaN-propagating max/min, as torch.maximum / torch.minimum.
double nan_max(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
double nan_min(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }

}  // namespace

KernelList pointwise_kernels() {
  KernelList k = {
      {"neg", unary([](double x) { return -x; })},
      {"abs", unary([](double x) { return std::fabs(x); })},
      {"exp", unary([](double x) { return std::exp(x); })},
      {"log", unary([](double x) { return std::log(x); })},
      {"sqrt", unary([](double x) { return std::sqrt(x); })},
      {"rsqrt", unary([](double x) { return 1.0 / std::sqrt(x); })},
      {"reciprocal", unary([](double x) { return 1.0 / x; })},
      {"sin", unary([](double x) { return std::sin(x); })},
      {"cos", unary([](double x) { return std::cos(x); })},
      {"tanh", unary([](double x) { return std::tanh(x); })},
      {"sigmoid", unary(sigmoid)},
      {"relu", unary([](double x) { return std::isnan(x) ? x : x > 0 ? x : 0.0; })},
      {"silu", unary([](double x) { return x * sigmoid(x); })},
      {"erf", unary([](double x) { return std::erf(x); })},
      {"add", binary([](double a, double b) { return a + b; })},
      {"sub", binary([](double a, double b) { return a - b; })},
      {"mul", binary([](double a, double b) { return a * b; })},
      {"div", binary([](double a, double b) { return a / b; })},
      {"pow", binary([](double a, double b) { return std::pow(a, b); })},
      {"maximum", binary(nan_max)},
      {"minimum", binary(nan_min)},
      {"eq", binary([](double a, double b) { return a == b ? 1.0 : 0.0; })},
      {"ne", binary([](double a, double b) { return a != b ? 1.0 : 0.0; })},
      {"lt", binary([](double a, double b) { return a < b ? 1.0 : 0.0; })},
      {"le", binary([](double a, double b) { return a <= b ? 1.0 : 0.0; })},
      {"gt", binary([](double a, double b) { return a > b ? 1.0 : 0.0; })},
      {"ge", binary([](double a, double b) { return a >= b ? 1.0 : 0.0; })},
  };
  k.push_back({"gelu", [](const Node& n, const std::vector<Arg>& a, const Shape&) {
                 bool tanh_approx = attr(n, "approximate").as_string() == "tanh";
                 std::vector<double> out(a[0].v.size());
                 for (size_t i = 0; i < out.size(); ++i) out[i] = tanh_approx ? gelu_tanh(a[0].v[i]) : gelu_erf(a[0].v[i]);
                 return out;
               }});
  k.push_back({"where", [](const Node&, const std::vector<Arg>& a, const Shape& out_shape) {
                 auto ic = broadcast_map(out_shape, a[0].shape), ia = broadcast_map(out_shape, a[1].shape),
                      ib = broadcast_map(out_shape, a[2].shape);
                 std::vector<double> out(ic.size());
                 for (size_t i = 0; i < out.size(); ++i)
                   out[i] = a[0].v[static_cast<size_t>(ic[i])] != 0 ? a[1].v[static_cast<size_t>(ia[i])] : a[2].v[static_cast<size_t>(ib[i])];
                 return out;
               }});
  auto copy = [](const Node&, const std::vector<Arg>& a, const Shape&) { return a[0].v; };
  k.push_back({"to", copy});
  k.push_back({"clone", copy});
  k.push_back({"contiguous", copy});
  return k;
}

}  // namespace reprokit::kernels
