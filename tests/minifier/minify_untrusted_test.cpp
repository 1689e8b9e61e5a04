// minify on hostile bundles and hostile endings: it never writes outside its bundle, its workers
// die with it (SIGKILL), and Ctrl-C says where the best repro is.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "../harness/cli_util.h"
#include "reprokit/harness/bundle.h"
#include "reprokit/runtime/npy.h"
#include "reprokit/support/files.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

// Every regular file under root except those under `skip`, with its checksum.
std::map<std::string, std::string> checksums_outside(const fs::path& root, const fs::path& skip) {
  std::map<std::string, std::string> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    if (it->path() == skip) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_symlink()) out[it->path().string()] = "symlink -> " + fs::read_symlink(it->path()).string();
    else if (it->is_regular_file()) out[it->path().string()] = checksum(read_file(it->path().string(), 1 << 30));
  }
  return out;
}

fs::path make_bundle(const fs::path& dir, const std::vector<std::string>& run_args, std::map<std::string, std::string> env) {
  env.emplace("REPRO_DIR", "out");
  auto r = reprokit_cli(run_args, dir, env);
  auto b = bundles_in(dir / "out");
  EXPECT_EQ(b.size(), 1u) << r.err;
  return b.at(0);
}

// Processes whose parent is `pid` (from /proc).
std::vector<int> children_of(int pid) {
  std::vector<int> out;
  for (auto& e : fs::directory_iterator("/proc")) {
    std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state;
    int ppid = 0;
    rest >> state >> ppid;
    if (ppid == pid) out.push_back(std::stoi(name));
  }
  return out;
}

// Alive and not a zombie.
bool running(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  auto close = stat.rfind(')');
  return close != std::string::npos && stat[close + 2] != 'Z' && stat[close + 2] != 'X';
}

template <class F> bool within(double seconds, F done) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

struct StuckMinify {
  std::unique_ptr<LineChild> minify;
  std::vector<int> workers;
  fs::path bundle;
};

// Starts `reprokit minify` on a bundle whose failure is a hang and waits until a worker is busy
// on a hanging query (with `wait_for_repro`, one after the first repro was written).
StuckMinify minify_stuck_in_a_hang(const fs::path& dir, const std::string& timeout, bool wait_for_repro) {
  fs::path b = make_bundle(dir, {"run", example("mlp"), "--inject", "gelu:hang"}, {{"REPRO_AFTER", "dynamo"}, {"REPRO_TIMEOUT", "1"}});
  ProcessSpec s;
  s.argv = {REPROKIT_EXE, "minify", b.string(), "--timeout", timeout};
  s.env_set = {{"REPRO_CACHE_DIR", std::string(REPROKIT_BINARY_DIR) + "/test-cache"}};
  auto minify = std::make_unique<LineChild>(s);
  std::vector<int> workers;
  if (wait_for_repro) {
    EXPECT_TRUE(within(60, [&] { return fs::exists(b / "repro.rk"); })) << "no repro was written";
  }
  EXPECT_TRUE(within(30, [&] {
    workers = children_of(minify->pid());
    return !workers.empty();
  })) << "no worker started";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the worker is inside the hang now
  return {std::move(minify), workers, b};
}

}  // namespace

TEST(MinifyUntrusted, HostileBundleNeverMakesMinifyWriteOutsideIt) {
  fs::path root = fresh_dir("untrusted_tree");
  fs::create_directories(root / "outside" / "deep");
  std::ofstream(root / "outside" / "target.txt") << "keep me\n";
  std::ofstream(root / "outside" / "deep" / "other.txt") << "and me\n";
  fs::path b = make_bundle(root, {"run", example("mlp"), "--inject", "gelu:runtime_error"}, {{"REPRO_AFTER", "dynamo"}});
  // The temporary names an earlier reprokit used, and a work directory, pointing out of the bundle.
  fs::create_symlink(root / "outside" / "target.txt", b / "report.json.tmp");
  fs::create_symlink(root / "outside" / "target.txt", b / "repro.rk.tmp");
  fs::create_symlink(root / "outside" / "target.txt", b / "SUMMARY.txt");
  fs::create_symlink(root / "outside" / "deep", b / "repro_inputs");
  auto before = checksums_outside(root, b);

  auto r = reprokit_cli({"minify", b.string()}, root);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(b / "repro.rk")) << r.err;
  EXPECT_EQ(checksums_outside(root, b), before) << "minify changed a file outside its bundle";

  // minify_work as a symlink out of the bundle is refused, not followed.
  fs::remove_all(b / "minify_work");
  fs::create_symlink(root / "outside" / "deep", b / "minify_work");
  before = checksums_outside(root, b);
  r = reprokit_cli({"minify", b.string()}, root);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("minify_work"), std::string::npos) << r.err;
  EXPECT_EQ(checksums_outside(root, b), before);
}

TEST(MinifyUntrusted, SigkillOfMinifyLeavesNoWorkerBehind) {
  auto [minify, workers, bundle] = minify_stuck_in_a_hang(fresh_dir("sigkill"), "120", false);
  ASSERT_FALSE(workers.empty());
  for (int w : workers) EXPECT_TRUE(running(w)) << "worker " << w;
  ::kill(minify->pid(), SIGKILL);  // the minifier only: its workers must follow by themselves
  EXPECT_TRUE(within(2.0, [&] {
    for (int w : workers)
      if (running(w)) return false;
    return true;
  })) << "a worker outlived the minifier by more than 2 s";
}

TEST(MinifyUntrusted, CtrlCKillsWorkersAndSaysWhereTheBestReproIs) {
  auto [minify, workers, bundle] = minify_stuck_in_a_hang(fresh_dir("sigint"), "3", true);
  ASSERT_FALSE(workers.empty());
  ::kill(minify->pid(), SIGINT);
  ProcessResult r = minify->wait_result();
  EXPECT_EQ(r.exit_code, 128 + SIGINT);
  EXPECT_NE(r.err.find("interrupted: the best repro so far is " + (bundle / "repro.rk").string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--resume"), std::string::npos) << r.err;
  EXPECT_TRUE(within(2.0, [&] {
    for (int w : workers)
      if (running(w)) return false;
    return true;
  }));
}

// A tampered state.json (a bundle's is untrusted) with a window start near INT64_MAX: the bound
// check overflowed and the read landed before the buffer (exit 139). Now a clear error naming the
// file, exit 2.
TEST(MinifyUntrusted, ATamperedStateFileIsRefusedNamingIt) {
  auto dir = fresh_dir("tampered_state");
  fs::path b = make_bundle(dir, {"run", example("mlp"), "--inject", "gelu:runtime_error"}, {{"REPRO_AFTER", "aot"}});
  auto first = reprokit_cli({"minify", b.string()}, dir);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  auto state = read_json(b / "minify_work" / "state.json");
  auto& best = state["best"];
  std::string input = best["graph"]["inputs"][0]["name"];
  best["edits"][input] = {{"fill", "original"}, {"start", std::vector<int64_t>(best["graph"]["inputs"][0]["shape"].size(), 9223372036854775807LL)}};
  std::ofstream(b / "minify_work" / "state.json") << state.dump();
  auto r = reprokit_cli({"minify", b.string(), "--resume"}, dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.signal, 0);
  EXPECT_NE(r.err.find("state.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("does not fit"), std::string::npos) << r.err;
  // Malformed JSON and a state without its candidate are named too (they said only "malformed
  // JSON input", with no file).
  for (const char* text : {"{\"best\": [1, 2", "[]", "{\"other\": 1}"}) {
    std::ofstream(b / "minify_work" / "state.json") << text;
    r = reprokit_cli({"minify", b.string(), "--resume"}, dir);
    EXPECT_EQ(r.exit_code, 2) << text << "\n" << r.err;
    EXPECT_NE(r.err.find("minify_work/state.json: "), std::string::npos) << text << "\n" << r.err;
  }
}

// The flags minify and reduce share are checked once (cli/session_flags.cpp), the same way for
// both: a bad value is exit 2 naming the flag, before the bundle or model is read.
TEST(MinifyUntrusted, SharedFlagsAreCheckedAlikeByMinifyAndReduce) {
  auto dir = fresh_dir("shared_flags");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--jobs", "0"}, "--jobs must be between 1 and 64"},
      {{"--jobs", "65"}, "--jobs must be between 1 and 64"},
      {{"--flaky-checks", "0"}, "--flaky-checks must be between 1 and 100"},
      {{"--timeout", "-1"}, "option --timeout expects a number of seconds in [0, 604800], got '-1'"},
      {{"--only", "no-such-strategy"}, "unknown strategy 'no-such-strategy'"}};
  for (const auto& [flag, message] : cases) {
    for (std::vector<std::string> argv :
         {std::vector<std::string>{"minify", "no_bundle"}, std::vector<std::string>{"reduce", "no_model.rk", "--check", "false"}}) {
      argv.insert(argv.end(), flag.begin(), flag.end());
      auto r = reprokit_cli(argv, dir);
      EXPECT_EQ(r.exit_code, 2) << argv[0] << " " << flag[0] << "\n" << r.err;
      EXPECT_NE(r.err.find(message), std::string::npos) << argv[0] << " " << flag[0] << "\n" << r.err;
    }
  }
  EXPECT_TRUE(fs::is_empty(dir));  // nothing written
}

// A compile error needs no values, but a repro does: a smaller data input that leaves an index past
// its dimension is an invalid candidate (the repro's expected values could not be computed), never
// the end of the reduction. OpenVINO refuses this GatherElements when it compiles it, whatever the
// values (its shape inference wants the indices' dims within the data's).
TEST(MinifyUntrusted, ACandidateWhoseIndicesOutgrowItsDataIsInvalidNotFatal) {
  auto dir = fresh_dir("minify_indices_fit");
  write_text(dir / "m.rk", "graph g(%x: i32[1, 3, 5, 5], %i: i32[1, 2, 3, 1]) {\n  %y = gather(%x, %i, dim=-3)\n  return (%y)\n}\n");
  fs::create_directories(dir / "in");
  std::vector<int64_t> x(75);
  for (size_t k = 0; k < x.size(); ++k) x[k] = static_cast<int64_t>(k % 7) - 3;
  write_npy((dir / "in" / "x.npy").string(), Tensor::from_int64s(DType::i32, {1, 3, 5, 5}, x));
  write_npy((dir / "in" / "i.npy").string(), Tensor::from_int64s(DType::i32, {1, 2, 3, 1}, {1, 1, 2, 2, 0, 2}));
  auto run = reprokit_cli({"run", "m.rk", "--inputs", "in", "--backend", "openvino"}, dir, {{"REPRO_AFTER", "dynamo"}, {"REPRO_DIR", "out"}});
  if (run.err.find("openvino") != std::string::npos && run.exit_code == 2) GTEST_SKIP() << "no OpenVINO here: " << run.err;
  auto bundles = bundles_in(dir / "out");
  if (bundles.empty()) GTEST_SKIP() << "OpenVINO compiles this GatherElements here: " << run.err;
  auto r = reprokit_cli({"minify", bundles.at(0).string()}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(fs::exists(bundles.at(0) / "repro.rk")) << r.err;
}
