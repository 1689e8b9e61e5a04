// `reprokit fuzz` end to end: a campaign with planted bugs finds, minifies and groups them (one
// distinct bug per planted injection), an external check's findings are reduced, an interrupted
// campaign resumes, and bad input is exit 2 with nothing overwritten.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "../harness/cli_util.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::map<std::string, std::string> ops_by_kind(const nlohmann::json& report) {
  std::map<std::string, std::string> m;
  for (auto& b : report["bugs"]) m[b["kind"].get<std::string>()] += b["ops"].get<std::string>() + ";";
  return m;
}

}  // namespace

// Two bugs planted at once on two ops: every finding is minified to its op, and the campaign's
// report counts exactly two distinct bugs (no split across graphs, no merge of the two).
TEST(Fuzz, PlantedBugsGiveOneDistinctBugEach) {
  const fs::path root = fresh_dir("fuzz_planted");
  auto r = reprokit_cli({"fuzz", "-o", (root / "c").string(), "--ops", "exp,sin,mul,add,neg", "--max-nodes", "4", "--max-graphs", "8", "--budget",
                         "600", "--seed", "3"},
                        root, {{"REPRO_INJECT", "exp:runtime_error,sin:compile_error"}});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto report = read_json(root / "c" / "report.json");
  EXPECT_EQ(report["counts"]["graphs"], 8) << report.dump(2);
  EXPECT_GE(report["counts"]["findings"].get<int>(), 3) << report.dump(2);
  EXPECT_EQ(report["counts"]["rejected"], 0) << report.dump(2);
  ASSERT_EQ(report["distinct_bugs"], 2) << report.dump(2);
  auto kinds = ops_by_kind(report);
  EXPECT_EQ(kinds["runtime_error"], "exp;") << report.dump(2);
  EXPECT_EQ(kinds["compile_error"], "sin;") << report.dump(2);
  for (auto& f : report["findings"]) EXPECT_EQ(f["minify"], "minimized") << f.dump();
  for (auto& b : report["bugs"]) {
    EXPECT_TRUE(b["minimized"].get<bool>()) << b.dump();
    EXPECT_TRUE(fs::exists(fs::path(b["repro"].get<std::string>()) / "repro.rk")) << b.dump();
  }
  EXPECT_NE(slurp(root / "c" / "SUMMARY.txt").find("distinct bugs 2"), std::string::npos) << slurp(root / "c" / "SUMMARY.txt");
  EXPECT_TRUE(!fs::exists(root / "c" / "graphs") || fs::is_empty(root / "c" / "graphs")) << "scratch graphs are removed once judged";

  // triage over the campaign directory agrees with the report.
  auto t = reprokit_cli({"triage", (root / "c").string(), "--json"}, root);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_EQ(nlohmann::json::parse(t.out).size(), 2u) << t.out;

  // Each finding can be rerun by hand: finding.json holds the command.
  for (auto& e : fs::directory_iterator(root / "c" / "findings")) {
    auto f = read_json(e.path() / "finding.json");
    EXPECT_NE(f["rerun"].get<std::string>().find("REPRO_LEVEL=4"), std::string::npos) << f.dump();
  }
}

// A campaign without bugs to find: every run passes (the stack agrees with float64 on generated
// graphs), forward and --train; then --resume continues where it stopped, with its own options.
TEST(Fuzz, CleanCampaignResumesWhereItStopped) {
  const fs::path root = fresh_dir("fuzz_resume");
  const std::string c = (root / "c").string();
  auto first = reprokit_cli({"fuzz", "-o", c, "--max-graphs", "3", "--max-nodes", "4", "--train", "--seed", "7", "--backend", "cpp,aot_eager"}, root);
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  auto s1 = read_json(root / "c" / "state.json");
  EXPECT_EQ(s1["counts"]["graphs"], 3);
  EXPECT_EQ(s1["counts"]["runs"], 12) << "3 graphs x 2 backends x (forward, train)";
  EXPECT_EQ(s1["counts"]["passed"], 12) << s1.dump(2);

  auto refused = reprokit_cli({"fuzz", "-o", c, "--resume", "--seed", "8"}, root);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("--seed with --resume"), std::string::npos) << refused.err;

  auto second = reprokit_cli({"fuzz", "-o", c, "--resume", "--max-graphs", "2"}, root);
  ASSERT_EQ(second.exit_code, 0) << second.out << second.err;
  auto s2 = read_json(root / "c" / "state.json");
  EXPECT_EQ(s2["counts"]["graphs"], 5);
  EXPECT_GT(s2["next_index"].get<int>(), s1["next_index"].get<int>());
  EXPECT_EQ(s2["options"]["seed"], 7);
  EXPECT_EQ(s2["options"]["backends"], nlohmann::json::array({"cpp", "aot_eager"}));

  // The same five graphs in one go: a resumed campaign is the campaign.
  auto whole = reprokit_cli(
      {"fuzz", "-o", (root / "whole").string(), "--max-graphs", "5", "--max-nodes", "4", "--train", "--seed", "7", "--backend", "cpp,aot_eager"},
      root);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  auto sw = read_json(root / "whole" / "state.json");
  EXPECT_EQ(sw["next_index"], s2["next_index"]);
  EXPECT_EQ(sw["counts"]["runs"], s2["counts"]["runs"]);
}

// A check nobody here wrote the harness for: findings go to `reprokit reduce` and group by their
// reduced graphs.
TEST(Fuzz, ExternalCheckFindingsAreReduced) {
  const fs::path root = fresh_dir("fuzz_check");
  const std::string check = std::string(REPROKIT_EXE) + " run {} --backend cpp --inject exp:runtime_error";
  // -o relative to the working directory: each check runs in its graph's directory, and still finds its model.
  auto r = reprokit_cli({"fuzz", "-o", "c", "--check", check, "--format", "rk", "--fail-regex", "FAILED: runtime_error", "--ops", "exp,mul,add",
                         "--max-nodes", "3", "--max-graphs", "4", "--seed", "2"},
                        root);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto report = read_json(root / "c" / "report.json");
  ASSERT_GE(report["counts"]["findings"].get<int>(), 1) << report.dump(2);
  ASSERT_EQ(report["distinct_bugs"], 1) << report.dump(2);
  EXPECT_EQ(report["bugs"][0]["kind"], "check");
  EXPECT_EQ(report["bugs"][0]["ops"], "exp");
  EXPECT_TRUE(fs::exists(fs::path(report["bugs"][0]["repro"].get<std::string>()) / "repro.rk"));
  EXPECT_EQ(report["counts"]["passed"].get<int>() + report["counts"]["findings"].get<int>(), 4) << report.dump(2);
}

// A resumed campaign never runs a command read from its state.json: the check is given again and
// must be the one the campaign started with. A tampered state.json runs nothing.
TEST(Fuzz, AResumedCampaignRunsNoCommandFromItsStateFile) {
  const fs::path root = fresh_dir("fuzz_resume_check");
  const std::string check = std::string(REPROKIT_EXE) + " run {} --backend eager";
  auto first =
      reprokit_cli({"fuzz", "-o", "c", "--check", check, "--format", "rk", "--ops", "exp,add", "--max-nodes", "2", "--max-graphs", "1"}, root);
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  // Without --check: refused, the stored command shown (escaped), not run.
  auto bare = reprokit_cli({"fuzz", "-o", "c", "--resume", "--max-graphs", "1"}, root);
  EXPECT_EQ(bare.exit_code, 2) << bare.err;
  EXPECT_NE(bare.err.find("give it again with --check"), std::string::npos) << bare.err;
  // The same check again: the campaign goes on.
  auto same = reprokit_cli({"fuzz", "-o", "c", "--resume", "--check", check, "--max-graphs", "1"}, root);
  EXPECT_EQ(same.exit_code, 0) << same.err;
  // A state.json whose check was replaced: whatever is given, the planted command never runs.
  const fs::path state = root / "c" / "state.json";
  std::string text = slurp(state);
  const std::string planted = "/usr/bin/touch " + (root / "planted").string() + " {}";
  auto json = nlohmann::json::parse(text);
  ASSERT_TRUE(json.contains("options") && json["options"].contains("check")) << text.substr(0, 400);
  json["options"]["check"] = planted;
  std::ofstream(state) << json.dump();
  for (const std::vector<std::string>& argv : {std::vector<std::string>{"fuzz", "-o", "c", "--resume", "--max-graphs", "1"},
                                               std::vector<std::string>{"fuzz", "-o", "c", "--resume", "--check", check, "--max-graphs", "1"}}) {
    auto r = reprokit_cli(argv, root);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_FALSE(fs::exists(root / "planted")) << r.err;
  }
  auto wrong = reprokit_cli({"fuzz", "-o", "c", "--resume", "--check", check, "--max-graphs", "1"}, root);
  EXPECT_NE(wrong.err.find("is not the check this campaign started with"), std::string::npos) << wrong.err;
}

// A finding's directories are handed to `reduce` as paths: a symlink planted among them (here the
// reduce output of a finding marked pending) is refused, and nothing is written where it leads.
TEST(Fuzz, AResumedCampaignWritesNothingThroughAPlantedSymlink) {
  const fs::path root = fresh_dir("fuzz_resume_symlink");
  const std::string check = std::string(REPROKIT_EXE) + " run {} --backend cpp --inject exp:runtime_error";
  auto first = reprokit_cli({"fuzz", "-o", "c", "--check", check, "--format", "rk", "--fail-regex", "FAILED: runtime_error", "--ops", "exp",
                             "--max-nodes", "2", "--max-graphs", "2", "--seed", "2", "--no-minify"},
                            root);
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  const fs::path state = root / "c" / "state.json";
  auto json = nlohmann::json::parse(slurp(state));
  ASSERT_FALSE(json["findings"].empty()) << json.dump(2).substr(0, 600);
  json["options"]["minify"] = true;
  json["findings"][0]["minify"] = "pending";
  std::ofstream(state) << json.dump();
  const fs::path outside = root / "outside";
  fs::create_directories(outside);
  fs::create_directory_symlink(outside, root / "c" / "findings" / json["findings"][0]["id"].get<std::string>() / "reduced");
  auto r = reprokit_cli({"fuzz", "-o", "c", "--resume", "--check", check, "--max-graphs", "1"}, root);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("is a symbolic link"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_empty(outside));
}

// What a resumed campaign prints (its summary, its refusals) quotes state.json and the findings'
// files: escape sequences planted there do not reach the terminal, and a newline cannot forge a
// line of the summary. SUMMARY.txt, read on terminals too, holds them escaped as well.
TEST(Fuzz, AResumedCampaignPrintsNoControlCharactersFromItsFiles) {
  const fs::path root = fresh_dir("fuzz_resume_controls");
  auto first = reprokit_cli({"fuzz", "-o", "c", "--backend", "eager", "--ops", "exp,add", "--max-nodes", "2", "--max-graphs", "1"}, root);
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  const std::string forged = "reprokit fuzz: all clear";
  const std::string hostile = "\x1b]0;pwned\x07\n" + forged;
  const fs::path state = root / "c" / "state.json";
  const std::string original = slurp(state);
  auto json = nlohmann::json::parse(original);
  json["rejected_examples"] = {"g1 (cpp, forward): refused" + hostile};
  std::ofstream(state) << json.dump();
  const fs::path finding = root / "c" / "findings" / ("g9" + hostile);
  write_text(finding / "model.rk", "graph g9(%x: f32[3]) {\n %y = exp(%x)\n return (%y)\n}\n");
  write_text(finding / "finding.json",
             nlohmann::json{{"kind", "crash" + hostile}, {"backend", "cpp"}, {"mode", "forward"}, {"message", "died"}}.dump());

  auto r = reprokit_cli({"fuzz", "-o", "c", "--resume", "--max-graphs", "1"}, root);
  ASSERT_EQ(r.exit_code, 0) << escape_controls_keep_newlines(r.err);
  expect_inert_output(r.out, forged);
  expect_inert_output(r.err, forged);
  expect_inert_output(slurp(root / "c" / "SUMMARY.txt"), forged);
  EXPECT_NE(r.out.find("refused\\e]0;pwned\\x07\\nreprokit fuzz: all clear"), std::string::npos) << escape_controls_keep_newlines(r.out);
  EXPECT_NE(r.out.find("crash\\e]0;pwned"), std::string::npos) << escape_controls_keep_newlines(r.out);

  // A state.json refused for what it holds: the refusal quotes the value escaped.
  json = nlohmann::json::parse(original);
  json["options"]["ops"] = {"exp" + hostile};
  std::ofstream(state) << json.dump();
  auto bad = reprokit_cli({"fuzz", "-o", "c", "--resume", "--max-graphs", "1"}, root);
  EXPECT_EQ(bad.exit_code, 2) << escape_controls_keep_newlines(bad.err);
  expect_inert_output(bad.err, forged);
  EXPECT_NE(bad.err.find("\"ops\" names 'exp\\e]0;pwned"), std::string::npos) << escape_controls_keep_newlines(bad.err);
}

// A check that declines a graph (here: any graph with a mul) is "unsupported", not "passed".
TEST(Fuzz, UnsupportedRegexCountsDeclinedGraphs) {
  const fs::path root = fresh_dir("fuzz_unsupported");
  const fs::path check = root / "check.sh";
  std::ofstream(check) << "#!/bin/sh\nif grep -q ' = mul(' \"$1\"; then echo 'mycc: unsupported op mul'; fi\nexit 0\n";
  fs::permissions(check, fs::perms::owner_all);
  auto r = reprokit_cli({"fuzz", "-o", "c", "--check", check.string() + " {}", "--format", "rk", "--unsupported-regex", "mycc: unsupported", "--ops",
                         "mul,add", "--max-nodes", "3", "--max-graphs", "6", "--seed", "2"},
                        root);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto report = read_json(root / "c" / "report.json");
  EXPECT_GT(report["counts"]["unsupported"].get<int>(), 0) << report.dump(2);
  EXPECT_EQ(report["counts"]["unsupported"].get<int>() + report["counts"]["passed"].get<int>(), 6) << report.dump(2);
  EXPECT_EQ(report["counts"]["findings"], 0);
}

TEST(Fuzz, BadInputIsExitTwoAndOverwritesNothing) {
  const fs::path root = fresh_dir("fuzz_bad");
  const std::string c = (root / "c").string();
  struct Case {
    std::vector<std::string> args;
    std::string says;
  } cases[] = {
      {{"fuzz", "-o", c, "--budget", "soon"}, "--budget"}, {{"fuzz", "-o", c, "--seed", "x1"}, "--seed"},
      {{"fuzz", "-o", c, "--seed", "-4"}, "--seed"},       {{"fuzz", "-o", c, "--ops", "exp,frobnicate"}, "frobnicate"},
      {{"fuzz", "-o", c, "--backend", "tpu"}, "tpu"},      {{"fuzz", "-o", c, "--check", "x {}", "--train"}, "--train"},
      {{"fuzz", "-o", c, "--resume"}, "no such campaign"}, {{"fuzz"}, "-o CAMPAIGN"},
  };
  for (auto& k : cases) {
    auto r = reprokit_cli(k.args, root);
    EXPECT_EQ(r.exit_code, 2) << k.args.back() << ": " << r.err;
    EXPECT_NE(r.err.find(k.says), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(c)) << k.args.back();
  }
  // A check that cannot run (127): exit 2, and the campaign it would have started is not left behind.
  auto missing = reprokit_cli({"fuzz", "-o", c, "--check", "/nonexistent/compiler {}", "--max-graphs", "2"}, root);
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_NE(missing.err.find("nonexistent"), std::string::npos) << missing.err;
  EXPECT_FALSE(fs::exists(c));

  // An existing directory is never written into without --resume, nor resumed when it holds no campaign.
  fs::create_directories(c);
  std::ofstream(fs::path(c) / "notes.txt") << "mine";
  auto existing = reprokit_cli({"fuzz", "-o", c, "--max-graphs", "1"}, root);
  EXPECT_EQ(existing.exit_code, 2);
  EXPECT_NE(existing.err.find("already exists"), std::string::npos) << existing.err;
  auto not_campaign = reprokit_cli({"fuzz", "-o", c, "--resume"}, root);
  EXPECT_EQ(not_campaign.exit_code, 2);
  EXPECT_NE(not_campaign.err.find("no state.json"), std::string::npos) << not_campaign.err;
  EXPECT_EQ(slurp(fs::path(c) / "notes.txt"), "mine");
  std::vector<fs::path> entries{fs::directory_iterator(c), fs::directory_iterator()};
  EXPECT_EQ(entries.size(), 1u);

  // A state.json that is not one reprokit wrote: exit 2 naming the file.
  std::ofstream(fs::path(c) / "state.json") << R"({"format_version": 1, "options": {"seed": -3}})";
  auto bad_state = reprokit_cli({"fuzz", "-o", c, "--resume"}, root);
  EXPECT_EQ(bad_state.exit_code, 2);
  EXPECT_NE(bad_state.err.find("state.json"), std::string::npos) << bad_state.err;
}

// SIGTERM (as Ctrl-C) stops every child, says how to go on, and leaves a campaign --resume continues.
TEST(Fuzz, InterruptedCampaignResumes) {
  const fs::path root = fresh_dir("fuzz_interrupt");
  ProcessSpec s;
  s.argv = {REPROKIT_EXE, "fuzz", "-o", (root / "c").string(), "--budget", "600", "--seed", "5", "--max-nodes", "4"};
  s.cwd = root.string();
  s.env_set = {{"REPRO_CACHE_DIR", std::string(REPROKIT_BINARY_DIR) + "/test-cache"}};
  LineChild fuzz(s);
  auto graphs_done = [&] {
    try {
      return read_json(root / "c" / "state.json")["counts"]["graphs"].get<int>();
    } catch (...) {
      return 0;  // not written yet, or being replaced
    }
  };
  for (int i = 0; i < 600 && graphs_done() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_GE(graphs_done(), 2) << "the campaign made no progress";
  fuzz.stop();  // SIGTERM to its group
  ProcessResult r = fuzz.wait_result();
  EXPECT_EQ(r.exit_code, 143) << r.err;
  EXPECT_NE(r.err.find("--resume"), std::string::npos) << r.err;
  const int before = graphs_done();
  auto resumed = reprokit_cli({"fuzz", "-o", (root / "c").string(), "--resume", "--max-graphs", "2"}, root);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(graphs_done(), before + 2);
}

// Interrupted in its first batch (its check still running), a campaign already has a state.json:
// the message that says to continue with --resume is true, and --resume continues it.
TEST(Fuzz, ACampaignInterruptedInItsFirstBatchResumes) {
  const fs::path root = fresh_dir("fuzz_interrupt_first_batch");
  const fs::path check = root / "check.sh";
  // Judges at once once `release` exists; until then it says it started and waits.
  std::ofstream(check) << "#!/bin/sh\n[ -e " << (root / "release").string() << " ] && exit 0\ntouch " << (root / "started").string()
                       << "\nexec sleep 600\n";
  fs::permissions(check, fs::perms::owner_all);
  const std::string check_cmd = "sh " + check.string() + " {}";
  ProcessSpec s;
  s.argv = {REPROKIT_EXE, "fuzz", "-o", (root / "c").string(), "--check", check_cmd, "--format", "rk", "--timeout", "900", "--seed", "4"};
  s.cwd = root.string();
  LineChild fuzz(s);
  for (int i = 0; i < 600 && !fs::exists(root / "started"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(fs::exists(root / "started")) << "the first check never started";
  fuzz.stop();  // SIGTERM to its group, as Ctrl-C
  ProcessResult r = fuzz.wait_result();
  EXPECT_EQ(r.exit_code, 143) << r.err;
  EXPECT_NE(r.err.find("--resume"), std::string::npos) << r.err;
  ASSERT_TRUE(fs::exists(root / "c" / "state.json")) << "the message promises a state.json: " << r.err;
  EXPECT_EQ(read_json(root / "c" / "state.json")["counts"]["graphs"], 0);

  std::ofstream(root / "release") << "";
  auto resumed = reprokit_cli({"fuzz", "-o", (root / "c").string(), "--resume", "--check", check_cmd, "--max-graphs", "1"}, root);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_EQ(read_json(root / "c" / "state.json")["counts"]["graphs"], 1);
}

// A backend that cannot run on this machine (here: inductor with an interpreter that does not
// exist) stops the campaign before it starts, with the backend's own message and exit 2; it is
// not a campaign of graphs all "rejected by reprokit". No directory is left behind.
TEST(Fuzz, ABackendThatCannotRunHereIsRefusedUpFront) {
  const fs::path root = fresh_dir("fuzz_backend_unavailable");
  const std::string c = (root / "c").string();
  auto r = reprokit_cli({"fuzz", "-o", c, "--backend", "cpp,inductor", "--max-graphs", "2"}, root, {{"REPROKIT_PYTHON", "/nonexistent/python3"}});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--backend inductor: the backend cannot run on this machine"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the inductor backend needs Python with torch 2"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(c));

  // A resumed campaign is checked the same way, on the machine it resumes on.
  auto first = reprokit_cli({"fuzz", "-o", c, "--max-graphs", "1", "--max-nodes", "2"}, root);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  auto state = read_json(root / "c" / "state.json");
  state["options"]["backends"] = {"inductor"};
  std::ofstream(root / "c" / "state.json") << state.dump();
  auto resumed = reprokit_cli({"fuzz", "-o", c, "--resume", "--max-graphs", "1"}, root, {{"REPROKIT_PYTHON", "/nonexistent/python3"}});
  EXPECT_EQ(resumed.exit_code, 2) << resumed.err;
  EXPECT_NE(resumed.err.find("--backend inductor: the backend cannot run on this machine"), std::string::npos) << resumed.err;
  EXPECT_EQ(read_json(root / "c" / "state.json"), state) << "nothing was judged";
}

// The cuda backend without NVRTC or a driver: refused up front with its message, where this
// machine cannot run it (where it can, there is nothing to refuse).
TEST(Fuzz, CudaWithoutADriverIsRefusedUpFront) {
  const fs::path root = fresh_dir("fuzz_cuda_unavailable");
  write_text(root / "one.rk", "graph one(%x: f32[4]) {\n %y = relu(%x)\n return (%y)\n}\n");
  auto direct = reprokit_cli({"run", (root / "one.rk").string(), "--backend", "cuda"}, root);
  if (direct.exit_code != 2) GTEST_SKIP() << "the cuda backend runs on this machine";
  auto r = reprokit_cli({"fuzz", "-o", (root / "c").string(), "--backend", "cuda", "--max-graphs", "2"}, root);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--backend cuda: the backend cannot run on this machine: cuda backend:"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(root / "c"));
}
