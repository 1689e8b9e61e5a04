// The pass table (pipeline order) and the pass manager: limits, injections, verification after
// each pass, and a Halide-style log line per pass.
#include "reprokit/codegen/passes/pass_manager.h"

#include <fmt/core.h>

#include <chrono>

#include "passes.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/ir/verifier.h"

namespace reprokit {

bool RewriteBudget::allow() {
  ++wanted_;
  if (limit_ >= 0 && applied_ >= limit_) return false;
  ++applied_;
  return true;
}

const std::vector<PassInfo>& pass_table() {
  static const std::vector<PassInfo> table = {
      {"dce", "dead-code elimination: removes nodes no output depends on", run_dce},
      {"cse", "common-subexpression elimination: merges nodes with the same op, operands and attributes", run_cse},
      {"constant-folding", "evaluates nodes whose operands are all constants (full or literals) into a full", run_constant_folding},
      {"algebraic-simplification", "rewrites identities: x*1, x+0, x-0, x/1, neg(neg(x)), pow(x,1), no-op casts and views",
       run_algebraic_simplification},
      {"reshape-hoisting", "computes a pointwise op in the shape of the reshape after it, so it fuses with the reshape's users",
       run_reshape_hoisting},
      {"permute-hoisting", "computes a pointwise op in the order of the permute after it, so it writes what the permute's users read",
       run_permute_hoisting},
      {"conv-scale-folding", "multiplies a conv's weights by the channel scale of its input (a squeeze-excite gate) where they are the smaller",
       run_conv_scale_folding},
      {"pointwise-fusion", "groups chains of same-shape pointwise ops into one loop (attribute group)", run_pointwise_fusion},
      {"pointwise-duplication", "computes a one-instruction pointwise op read by several kernels again in each of them (joins their groups)",
       run_pointwise_duplication},
      {"reduction-fusion", "fuses a reduction into the pointwise group that produces its input", run_reduction_fusion},
  };
  return table;
}

const PassInfo* find_pass(const std::string& name) {
  for (auto& p : pass_table())
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<PassRecord> run_passes(Graph& g, const CompileOptions& options) {
  for (auto& [name, limit] : options.pass_limits)
    if (!find_pass(name)) throw UserError(fmt::format("unknown pass '{}' in a pass limit (`reprokit passes` lists them)", name));
  for (auto& name : options.disabled_passes)
    if (!find_pass(name)) throw UserError(fmt::format("unknown pass '{}' (`reprokit passes` lists them)", name));
  for (auto& inj : options.pass_injections)
    if (!find_pass(inj.pass)) throw UserError(fmt::format("unknown pass '{}' in --inject-pass (`reprokit passes` lists them)", inj.pass));
  std::vector<PassRecord> records;
  if (!options.run_passes) return records;
  for (auto& pass : pass_table()) {
    if (options.disabled_passes.count(pass.name)) continue;
    int64_t limit = -1, inject_at = 0;
    if (auto it = options.pass_limits.find(pass.name); it != options.pass_limits.end()) limit = it->second;
    for (auto& inj : options.pass_injections)
      if (inj.pass == pass.name) inject_at = inj.n;
    RewriteBudget budget(pass.name, limit, inject_at);
    auto t0 = std::chrono::steady_clock::now();
    std::vector<TensorType> before;
    for (int o : g.outputs) before.push_back(g.node(o).type);
    bool changed = pass.run(g, budget);
    verify(g);  // every pass hands on a valid graph, its outputs of the dtypes and shapes they had
    for (size_t k = 0; k < before.size(); ++k) {
      const TensorType& after = g.node(g.outputs[k]).type;
      if (after.dtype != before[k].dtype || after.shape != before[k].shape)
        throw InternalError(fmt::format("pass {} changed output {} of graph {} from {} to {}", pass.name, k, g.name, before[k].str(), after.str()));
    }
    PassRecord r{pass.name, budget.applied(), budget.wanted(),
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(), changed};
    if (options.verbose)
      fmt::print(stderr, "[reprokit] pass {:<26} {}  ({:.2f} ms, {} nodes)\n", pass.name,
                 changed ? fmt::format("{} rewrite{}", r.rewrites, r.rewrites == 1 ? "" : "s") : std::string("(unchanged)"), r.ms, g.num_ops());
    records.push_back(r);
  }
  return records;
}

}  // namespace reprokit
