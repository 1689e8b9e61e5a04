// libFuzzer target: the .rk text parser (a graph file a user hands reprokit). Bytes that parse must
// print to text that parses again and prints the same (text_format.h: print(parse(x)) is a fixed
// point); everything else must be a UserError.
#include "fuzz_target.h"
#include "reprokit/campaign/graph_generator.h"
#include "reprokit/ir/text_format.h"

using namespace reprokit;
using namespace reprokit::fuzz;

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  auto seeds = source_files("examples", ".rk");
  for (auto& s : source_files("tests/regressions", ".rk")) seeds.push_back(std::move(s));
  for (auto& s : source_files("tests/fuzz/corpus", ".rk")) seeds.push_back(std::move(s));
  GeneratorOptions o;
  for (uint64_t seed = 1; seed <= 48; ++seed) {
    o.train = seed % 3 == 0;
    if (auto c = generate_case(seed, o)) seeds.emplace_back("generated_" + std::to_string(seed) + ".rk", print_graph(c->graph));
  }
  seed_empty_corpora(*argc, *argv, seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  refusals_are_fine([&] {
    Module m = parse_module(as_text(data, size), "fuzz.rk");
    check_fixed_point(
        print_module(m), [](const std::string& t) { return parse_module(t, "printed.rk"); }, print_module, ".rk text");
  });
  return 0;
}
