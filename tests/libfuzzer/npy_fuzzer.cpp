// libFuzzer target: the .npy reader (bundle inputs, --inputs, repro_inputs/). A file it accepts
// must encode back to .npy bytes that decode to the same tensor bytes; everything else must be a
// UserError.
#include "fuzz_target.h"
#include "reprokit/campaign/graph_generator.h"
#include "reprokit/runtime/npy.h"

using namespace reprokit;
using namespace reprokit::fuzz;

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  std::vector<std::pair<std::string, std::string>> seeds;
  GeneratorOptions o;
  for (uint64_t seed = 1; seed <= 32; ++seed)
    if (auto c = generate_case(seed, o))
      for (size_t i = 0; i < c->inputs.size(); ++i)
        seeds.emplace_back("generated_" + std::to_string(seed) + "_" + std::to_string(i) + ".npy", encode_npy(c->inputs[i]));
  for (auto& s : source_files("docs/found_bugs", ".npy")) seeds.push_back(std::move(s));
  seed_empty_corpora(*argc, *argv, seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  refusals_are_fine([&] {
    Tensor t = parse_npy(as_text(data, size), "fuzz.npy");
    check_fixed_point(
        encode_npy(t), [](const std::string& b) { return parse_npy(b, "encoded.npy"); }, encode_npy, ".npy");
  });
  return 0;
}
