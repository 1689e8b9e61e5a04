// libFuzzer target: a bundle's manifest.json (minify/analyze/bisect read bundles a user hands
// over). Each input replaces the manifest of a real bundle written at start-up (its inputs/ stay),
// then the bundle is loaded: it loads, or it is refused with a UserError.
#include "fuzz_target.h"
#include "reprokit/campaign/graph_generator.h"
#include "reprokit/harness/bundle.h"

using namespace reprokit;
using namespace reprokit::fuzz;

namespace {
fs::path g_bundle;
}

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  // One generated case, recorded under several specs: every seed manifest matches the inputs/ of
  // the bundle the fuzzed manifests are loaded with.
  const GeneratedCase c = first_generated_case(4);
  std::vector<std::pair<std::string, std::string>> seeds;
  for (int variant = 0; variant < 4; ++variant) {
    ReproSpec spec;
    spec.check_accuracy = variant >= 2;
    spec.options.train = variant == 1;
    if (variant == 3) {
      spec.expected = failure_from(FailureKind::accuracy, "max abs error 0.5 at [0]");
      spec.sample_seeds = {7, 8};
      spec.failing_samples = {0, 2};
      spec.tolerance = 1e-3;
    }
    fs::path dir = write_bundle((scratch_dir() / ("seed" + std::to_string(variant))).string(), c.graph, c.inputs, spec, 2 + variant % 3, 1);
    seeds.emplace_back("manifest_" + std::to_string(variant) + ".json", read_whole(dir / "manifest.json"));
    if (g_bundle.empty()) g_bundle = dir;
  }
  seed_empty_corpora(*argc, *argv, seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  write_whole(g_bundle / "manifest.json", as_text(data, size));
  refusals_are_fine([&] { load_bundle(g_bundle.string()); });
  return 0;
}
