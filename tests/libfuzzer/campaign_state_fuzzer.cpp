// libFuzzer target: a campaign's state.json, which `reprokit fuzz --resume` reads back. Each input
// is the state.json of a campaign directory: it is read, or refused with a UserError.
#include "fuzz_target.h"
#include "../../src/campaign/campaign_state.h"

using namespace reprokit;
using namespace reprokit::fuzz;

namespace {
fs::path g_campaign;
}

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  g_campaign = scratch_dir() / "campaign";
  fs::create_directories(g_campaign);
  Dir dir = Dir::open(g_campaign.string());
  std::vector<std::pair<std::string, std::string>> seeds;
  CampaignState s;
  write_state(dir, s);
  seeds.emplace_back("fresh.json", read_whole(g_campaign / "state.json"));
  s.next_index = 12;
  s.elapsed_s = 30.5;
  s.counts.graphs = 12;
  s.counts.runs = 24;
  s.counts.passed = 22;
  s.counts.findings = 2;
  CampaignFinding f;
  f.id = "0003-cpp-forward";
  f.graph = "g3";
  f.index = 3;
  f.backend = "cpp";
  f.mode = "forward";
  f.kind = "accuracy";
  f.message = "max abs error 1 at [0]";
  f.minify = "minimized";
  s.findings.push_back(f);
  f.id = "0007-check";
  f.backend = "";
  f.mode = "check";
  f.kind = "check";
  f.minify = "pending";
  s.findings.push_back(f);
  s.rejected_examples = {"g9: refused"};
  s.options.check = "node check.mjs {}";
  s.options.fail_regex = "MISMATCH";
  s.options.backends = {"cpp", "eager"};
  write_state(dir, s);
  seeds.emplace_back("two_findings.json", read_whole(g_campaign / "state.json"));
  seed_empty_corpora(*argc, *argv, seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  write_whole(g_campaign / "state.json", as_text(data, size));
  refusals_are_fine([&] { read_state(Dir::open(g_campaign.string())); });
  return 0;
}
