// Example: item() inside a compiled function is a graph break. The graph before it is compiled
// and run, the value steers the C++ code, and tracing goes on in a second graph.
#include <cmath>
#include <cstdio>

#include "reprokit/capture/api.h"
#include "reprokit/runtime/tensor.h"

using namespace reprokit;
namespace rk = reprokit::api;

static std::vector<rk::Var> normalise_if_large(const std::vector<rk::Var>& in) {
  rk::Var x = rk::tanh(in[0]);
  double total = rk::item(rk::sum(rk::mul(x, x), {0, 1}));  // graph break
  rk::Var y = total > 1.0 ? rk::mul(x, 1.0 / std::sqrt(total)) : rk::add(x, 1.0);
  return {rk::exp(y)};
}

int main() {
  Tensor x = Tensor::zeros(DType::f32, {4, 8});
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, std::cos(static_cast<double>(i)));
  rk::CompiledFunction f = rk::compile(normalise_if_large);
  Tensor out = f({x})[0];
  Tensor eager = normalise_if_large({rk::Var(x)})[0].value();
  double worst = 0;
  for (int64_t i = 0; i < out.numel(); ++i) worst = std::max(worst, std::fabs(out.get(i) - eager.get(i)));
  std::printf("graph_break: %d graph break(s), %d graphs compiled, compiled vs eager max |diff| = %.3g\n", f.stats().graph_breaks, f.stats().compiles,
              worst);
  for (auto& g : f.stats().graphs) std::printf("%s", g.c_str());
  return worst < 1e-5 && f.stats().graph_breaks == 1 ? 0 : 1;
}
