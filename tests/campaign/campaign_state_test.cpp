// A campaign's state.json: what write_state writes, read_state reads back, at any size the
// reader takes, and a state too large to read back is never written.
#include <gtest/gtest.h>

#include "../../src/campaign/campaign_state.h"
#include "../harness/cli_util.h"
#include "reprokit/support/errors.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

// A state with `n` findings: its indentation alone is a good part of its pretty-printed size.
CampaignState state_with_findings(int n) {
  CampaignState s;
  s.next_index = n;
  s.counts.graphs = n;
  s.counts.findings = n;
  for (int k = 0; k < n; ++k) {
    CampaignFinding f;
    f.id = "g" + std::to_string(k) + "-cpp-forward";
    f.graph = "g" + std::to_string(k);
    f.index = k;
    f.backend = "cpp";
    f.mode = "forward";
    f.kind = "accuracy";
    f.message = "max abs error 1 at [0]";
    f.minify = "minimized";
    s.findings.push_back(f);
  }
  return s;
}

}  // namespace

// A state whose pretty-printed form is past the limit but whose compact form fits is written,
// and read back whole.
TEST(CampaignState, IsWrittenCompactSoThatWhatFitsTheReaderIsWritten) {
  const fs::path root = fresh_dir("campaign_state_compact");
  Dir dir = Dir::create(root.string());
  CampaignState s = state_with_findings(200);
  write_state(dir, s);
  const size_t written = fs::file_size(root / "state.json");
  const size_t pretty = read_json(root / "state.json").dump(2).size() + 1;
  ASSERT_GT(pretty, written + written / 4) << "the test needs a state whose indentation counts";

  const size_t limit = (written + pretty) / 2;  // the compact form fits, the pretty one would not
  fs::remove(root / "state.json");
  write_state(dir, s, limit);
  EXPECT_LE(fs::file_size(root / "state.json"), limit);
  CampaignState back = read_state(dir);
  ASSERT_EQ(back.findings.size(), 200u);
  EXPECT_EQ(back.findings[199].id, "g199-cpp-forward");
  EXPECT_EQ(back.next_index, 200);
}

// A state larger than the reader's limit is refused, naming the file and both sizes, and the
// state.json written before stays as it was: the campaign can still be resumed from it.
TEST(CampaignState, AStateTooLargeToReadBackIsNotWritten) {
  const fs::path root = fresh_dir("campaign_state_too_large");
  Dir dir = Dir::create(root.string());
  write_state(dir, state_with_findings(2));
  const std::string before = read_text(root / "state.json");
  const size_t limit = before.size() * 4;
  try {
    write_state(dir, state_with_findings(200), limit);
    FAIL() << "a state past the limit was written";
  } catch (const UserError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find((root / "state.json").string()), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(limit) + " bytes"), std::string::npos) << what;
    EXPECT_NE(what.find("left as it was"), std::string::npos) << what;
  }
  EXPECT_EQ(read_text(root / "state.json"), before);
  EXPECT_EQ(read_state(dir).findings.size(), 2u);
}
