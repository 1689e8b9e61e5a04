// Example: an MLP written with reprokit's C++ tensor API, run eagerly and compiled with
// reprokit::api::compile (cpp backend); the results agree. Under REPRO_AFTER=... the harness
// wraps the compiled graph exactly as it does for `reprokit run`.
#include <cmath>
#include <cstdio>

#include "reprokit/capture/api.h"
#include "reprokit/harness/harness.h"
#include "reprokit/support/errors.h"
#include "reprokit/runtime/tensor.h"

using namespace reprokit;
namespace rk = reprokit::api;

static Tensor filled(Shape shape, double scale) {
  Tensor t = Tensor::zeros(DType::f32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, std::sin(static_cast<double>(i) * 0.37) * scale);
  return t;
}

static std::vector<rk::Var> mlp(const std::vector<rk::Var>& in) {
  rk::Var h = rk::gelu(rk::linear(in[0], in[1], in[2]), "tanh");
  rk::Var o = rk::softmax(rk::linear(h, in[3]), -1);
  return {rk::mul(o, 2.0)};
}

int main() {
  std::vector<Tensor> inputs = {filled({8, 16}, 1.0), filled({32, 16}, 0.3), filled({32}, 0.1), filled({4, 32}, 0.3)};
  std::vector<rk::Var> eager_in;
  for (auto& t : inputs) eager_in.emplace_back(t);
  Tensor eager = mlp(eager_in)[0].value();
  rk::CompileSpec spec;
  spec.compile.backend = "cpp";
  rk::CompiledFunction compiled = rk::compile(mlp, spec);
  try {
    Tensor out = compiled(inputs)[0];
    compiled(inputs);  // second call: the compiled graph is reused
    double worst = 0;
    for (int64_t i = 0; i < out.numel(); ++i) worst = std::max(worst, std::fabs(out.get(i) - eager.get(i)));
    std::printf("traced_mlp: compiled vs eager max |diff| = %.3g; %d compile(s), %d cache hit(s)\n", worst, compiled.stats().compiles,
                compiled.stats().cache_hits);
    std::printf("%s", compiled.stats().graphs.at(0).c_str());
    return worst < 1e-5 ? 0 : 1;
  } catch (const StackFailure& e) {
    std::fprintf(stderr, "traced_mlp: the compiled model failed: %s\n", e.what());
    return 1;
  } catch (const UserError& e) {
    std::fprintf(stderr, "traced_mlp: %s\n", e.what());
    return 2;
  }
}
