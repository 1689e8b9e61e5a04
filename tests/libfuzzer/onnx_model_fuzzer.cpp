// libFuzzer target: the ONNX importer, ONNX's checker and shape inference included (they run in a
// child process, as for `reprokit run model.onnx`). A model it accepts must give a graph whose
// .rk text parses back to the same text (a bundle or repro of it must load) and that the exporter
// either writes or refuses with a UserError; everything else must be a UserError.
#include "fuzz_target.h"
#include "reprokit/campaign/graph_generator.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/onnx/onnx_export.h"
#include "reprokit/onnx/onnx_import.h"

using namespace reprokit;
using namespace reprokit::fuzz;

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  std::vector<std::pair<std::string, std::string>> seeds = source_files("docs/found_bugs", ".onnx");
  GeneratorOptions o;
  for (uint64_t seed = 1; seed <= 48; ++seed) {
    if (auto c = generate_case(seed, o)) {
      try {
        seeds.emplace_back("generated_" + std::to_string(seed) + ".onnx", export_onnx(c->graph));
      } catch (const UserError&) {  // a graph ONNX cannot express
      }
    }
  }
  // Every 8th of ONNX's own node tests, when libonnx-testdata is installed.
  std::error_code ec;
  std::vector<fs::path> nodes;
  for (const auto& e : fs::directory_iterator("/usr/share/libonnx-testdata/data/node", ec)) nodes.push_back(e.path());
  std::sort(nodes.begin(), nodes.end());
  for (size_t i = 0; i < nodes.size(); i += 8)
    if (fs::is_regular_file(nodes[i] / "model.onnx", ec))
      seeds.emplace_back(nodes[i].filename().string() + ".onnx", read_whole(nodes[i] / "model.onnx"));
  seed_empty_corpora(*argc, *argv, seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  refusals_are_fine([&] {
    ImportedModel m = import_onnx_bytes(as_text(data, size), "fuzz.onnx");
    check_fixed_point(
        print_graph(m.graph), [](const std::string& t) { return parse_graph(t, "imported.rk"); }, print_graph, "an imported graph's .rk text");
    export_onnx(m.graph, m.values);
  });
  return 0;
}
