// libFuzzer target: the state.json that `minify --resume` and `reduce --resume` read (it lies in a
// bundle a user may hand over, so it is untrusted). Each input is read as the best candidate and
// its inputs are cut from a real bundle written at start-up (windows, zeroed elements, fills, cut
// points): that works, or it is refused with a UserError. (A window start of 2^63-1 once read
// before the buffer here.)
#include "fuzz_target.h"
#include "reprokit/campaign/graph_generator.h"
#include "reprokit/harness/bundle.h"
#include "reprokit/minifier/candidate.h"
#include "reprokit/minifier/candidate_values.h"
#include "reprokit/minifier/compiler_decisions.h"

using namespace reprokit;
using namespace reprokit::fuzz;

namespace {
std::optional<Bundle> g_bundle;
}

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  const GeneratedCase c = first_generated_case(5);
  ReproSpec spec;
  spec.check_accuracy = true;
  g_bundle = load_bundle(write_bundle((scratch_dir() / "bundle").string(), c.graph, c.inputs, spec, 4, 1));

  // Seeds: the original, and candidates with each kind of edit on its first input.
  std::vector<Candidate> cands(5);
  for (auto& k : cands) k.graph = g_bundle->graph;
  const Node& in = g_bundle->graph.node(g_bundle->graph.input_ids().at(0));
  cands[1].edits[in.name].fill = InputFill::zeros;
  cands[2].edits[in.name].fill = InputFill::integers;
  cands[2].edits[in.name].zeroed = {0};
  cands[3].edits[in.name].start = std::vector<int64_t>(in.type.shape.size(), 0);
  cands[4].disabled_passes = {"fuse_elementwise"};
  cands[4].pass_limits = {{"cse", 1}};
  std::vector<std::pair<std::string, std::string>> seeds;
  for (size_t i = 0; i < cands.size(); ++i)
    seeds.emplace_back("state_" + std::to_string(i) + ".json", nlohmann::json{{"best", cands[i].to_json()}}.dump());
  seed_empty_corpora(*argc, *argv, seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  refusals_are_fine([&] {
    Candidate best = Candidate::from_json(nlohmann::json::parse(as_text(data, size)).at("best"), reprokit_passes());
    KnownValues known(*g_bundle);
    candidate_inputs(best, *g_bundle, known);
    candidate_spec(g_bundle->spec, best);
  });
  return 0;
}
