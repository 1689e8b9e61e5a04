// `reduce` and `minify` through a real single-node Slurm (scripts/slurm_local.sh starts one for
// the suite and stops it after): the same answers as locally, and nothing left behind — no job in
// squeue, no worker process — after a normal end, a hanging check, Ctrl-C, SIGTERM and kill -9.
// Skipped without root or without Debian's slurmctld, slurmd, slurm-client and munge. Each test
// process starts its own cluster (ctest runs them one at a time: RESOURCE_LOCK slurm).
#include <gtest/gtest.h>
#include <fmt/core.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include "../harness/cli_util.h"
#include "reprokit/harness/repro_file.h"
#include "reprokit/ir/text_format.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

const std::string kSrun = "srun -N1 -n1 --quiet";

// The cluster of this test program: started once, stopped at the end.
struct Cluster {
  fs::path dir;
  std::string conf;     // SLURM_CONF
  std::string skipped;  // why there is none
};
Cluster g_cluster;

std::string script() { return std::string(REPROKIT_SOURCE_DIR) + "/scripts/slurm_local.sh"; }

class SlurmEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    g_cluster.dir = fs::temp_directory_path() / fmt::format("rk_slurm_{}", ::getpid());
    fs::remove_all(g_cluster.dir);
    fs::create_directories(g_cluster.dir);
    ProcessSpec s;
    s.argv = {"bash", script(), "start", g_cluster.dir.string()};
    s.timeout_s = 120;
    ProcessResult r = run_process(s);
    if (r.exit_code == 77) {
      g_cluster.skipped = r.err;
    } else if (r.exit_code != 0) {
      g_cluster.skipped = "the cluster did not start: " + r.err;
      ADD_FAILURE() << g_cluster.skipped;
    } else {
      g_cluster.conf = (g_cluster.dir / "slurm.conf").string();
    }
  }
  void TearDown() override {
    if (g_cluster.conf.empty()) return;
    ProcessSpec s;
    s.argv = {"bash", script(), "stop", g_cluster.dir.string()};
    s.timeout_s = 120;
    run_process(s);
    fs::remove_all(g_cluster.dir);
  }
};
const auto* const g_env = ::testing::AddGlobalTestEnvironment(new SlurmEnvironment);

#define REQUIRE_SLURM()                                                                 \
  do {                                                                                  \
    if (g_cluster.conf.empty()) GTEST_SKIP() << "no Slurm here: " << g_cluster.skipped; \
  } while (0)

std::map<std::string, std::string> slurm_env(std::map<std::string, std::string> env = {}) {
  env["SLURM_CONF"] = g_cluster.conf;
  return env;
}

std::string run_text(const std::vector<std::string>& argv) {
  ProcessSpec s;
  s.argv = argv;
  s.env_set = slurm_env();
  s.timeout_s = 30;
  return run_process(s).out;
}

// Jobs Slurm still holds (pending, running or completing).
int jobs_in_queue() {
  std::string out = run_text({"squeue", "-h", "-o", "%i %T"});
  return static_cast<int>(std::count(out.begin(), out.end(), '\n'));
}

// Jobs still pending or running: a job whose srun has ended stays COMPLETING for a moment while
// slurmd reports back, which is Slurm's bookkeeping, not a worker left behind.
int jobs_not_completing() {
  std::string out = run_text({"squeue", "-h", "-o", "%i %T"}), line;
  std::istringstream in(out);
  int n = 0;
  while (std::getline(in, line)) n += line.find("COMPLETING") == std::string::npos;
  return n;
}

// Live processes (not zombies) whose command line contains `needle`.
std::string live_processes(const std::string& needle) {
  std::string out = run_text({"ps", "-eo", "stat=,args="}), found, line;
  std::istringstream in(out);
  while (std::getline(in, line)) {
    size_t b = line.find_first_not_of(' ');
    if (b == std::string::npos || line[b] == 'Z' || line.find(needle) == std::string::npos || line.find("ps -eo") != std::string::npos) continue;
    found += line + "\n";
  }
  return found;
}

// Waits up to `seconds` for `done`; true when it came.
bool within(double seconds, const std::function<bool()>& done) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return done();
}

void write_script(const fs::path& p, const std::string& body) {
  std::ofstream(p) << "#!/bin/sh\n" << body;
  fs::permissions(p, fs::perms::owner_all);
}

// A bundle of the mlp example failing at its gelu (a fresh compile cache: queries take a while).
fs::path mlp_bundle(const fs::path& dir) {
  fs::create_directories(dir);
  reprokit_cli({"run", example("mlp"), "--inject", "gelu:runtime_error"}, dir,
               {{"REPRO_AFTER", "aot"}, {"REPRO_DIR", "out"}, {"REPRO_CACHE_DIR", (dir / "cache").string()}});
  return bundles_in(dir / "out").at(0);
}

}  // namespace

TEST(Slurm, ReduceThroughSrunGivesTheLocalRepro) {
  REQUIRE_SLURM();
  auto dir = fresh_dir("slurm_reduce");
  const std::vector<std::string> check = {"--check", "sh -c '! grep -q \"= gelu(\" \"$1\"' sh {}"};
  auto local = reprokit_cli({"reduce", example("mlp"), check[0], check[1], "-o", "local"}, dir);
  ASSERT_EQ(local.exit_code, 0) << local.err;
  auto srun = reprokit_cli({"reduce", example("mlp"), check[0], check[1], "-o", "srun", "--worker-prefix", kSrun, "--jobs", "2"}, dir, slurm_env());
  ASSERT_EQ(srun.exit_code, 0) << srun.err;
  EXPECT_EQ(read_text(dir / "srun" / "repro.rk"), read_text(dir / "local" / "repro.rk"));
  EXPECT_TRUE(within(5, [] { return jobs_in_queue() == 0; })) << run_text({"squeue"});
}

// A check that hangs on every candidate holding gelu (interesting: --hang-is-interesting). Each
// hanging check's job is cancelled at its timeout; before, killed sruns left their jobs running,
// later checks waited in the queue past their own timeouts, and the answers were wrong.
TEST(Slurm, HangingChecksThroughSrunAreCancelledAndGiveTheLocalAnswer) {
  REQUIRE_SLURM();
  auto dir = fresh_dir("slurm_hang");
  write_script(dir / "hang.sh", "grep -q '= gelu(' \"$1\" && sleep 1000\nexit 0\n");
  auto args = [&](const std::string& out) {
    return std::vector<std::string>{
        "reduce", example("mlp"), "--check", "sh " + (dir / "hang.sh").string() + " {}", "--hang-is-interesting", "--timeout", "3", "--flaky-checks",
        "1",      "-o",           out};
  };
  auto local = reprokit_cli(args("local"), dir);
  ASSERT_EQ(local.exit_code, 0) << local.err;
  auto a = args("srun");
  a.insert(a.end(), {"--worker-prefix", kSrun});
  auto srun = reprokit_cli(a, dir, slurm_env());
  ASSERT_EQ(srun.exit_code, 0) << srun.err;
  EXPECT_EQ(read_text(dir / "srun" / "repro.rk"), read_text(dir / "local" / "repro.rk"));
  EXPECT_TRUE(within(5, [] { return jobs_in_queue() == 0; })) << run_text({"squeue"});
  EXPECT_EQ(live_processes("sleep 1000"), "");
}

TEST(Slurm, MinifyWithTwoWorkersThroughSrunLeavesNothingBehind) {
  REQUIRE_SLURM();
  auto dir = fresh_dir("slurm_minify");
  fs::path local_b = mlp_bundle(dir / "local"), srun_b = mlp_bundle(dir / "srun");
  auto local = reprokit_cli({"minify", local_b.string(), "--jobs", "2"}, dir, {{"REPRO_CACHE_DIR", (dir / "local" / "cache").string()}});
  ASSERT_EQ(local.exit_code, 0) << local.err;
  auto srun = reprokit_cli({"minify", srun_b.string(), "--jobs", "2", "--worker-prefix", kSrun}, dir,
                           slurm_env({{"REPRO_CACHE_DIR", (dir / "srun" / "cache").string()}}));
  ASSERT_EQ(srun.exit_code, 0) << srun.err;
  EXPECT_EQ(load_repro_file((srun_b / "repro.rk").string()).graph.num_ops(), load_repro_file((local_b / "repro.rk").string()).graph.num_ops());
  EXPECT_EQ(print_graph(load_repro_file((srun_b / "repro.rk").string()).graph), print_graph(load_repro_file((local_b / "repro.rk").string()).graph));
  EXPECT_EQ(jobs_not_completing(), 0) << "minify returned with jobs still pending or running:\n" << run_text({"squeue"});
  EXPECT_TRUE(within(5, [] { return jobs_in_queue() == 0; })) << run_text({"squeue"});
  EXPECT_EQ(live_processes(srun_b.string()), "");
}

namespace {

// Starts `minify --jobs 2` through srun on a fresh bundle and waits until its workers' jobs run.
std::unique_ptr<LineChild> minify_running(const fs::path& dir, fs::path& bundle) {
  bundle = mlp_bundle(dir);
  ProcessSpec s;
  s.argv = {REPROKIT_EXE, "minify", bundle.string(), "--jobs", "2", "--worker-prefix", kSrun};
  s.env_set = slurm_env({{"REPRO_CACHE_DIR", (dir / "cache").string()}, {"REPRO_TEST_COMPILE_DELAY", "1"}});
  auto child = std::make_unique<LineChild>(s);
  EXPECT_TRUE(within(60, [] { return jobs_in_queue() > 0; })) << "no worker job started";
  return child;
}

}  // namespace

TEST(Slurm, CtrlCAndSigtermDuringMinifyLeaveNoJobAndNoProcess) {
  REQUIRE_SLURM();
  for (int sig : {SIGINT, SIGTERM}) {
    SCOPED_TRACE(strsignal(sig));
    auto dir = fresh_dir(fmt::format("slurm_signal_{}", sig));
    fs::path bundle;
    auto child = minify_running(dir, bundle);
    ::kill(-child->pid(), sig);  // the whole group, as a terminal's Ctrl-C does
    ProcessResult r = child->wait_result();
    EXPECT_EQ(r.exit_code, 128 + sig) << r.err;
    EXPECT_TRUE(within(5, [] { return jobs_in_queue() == 0; })) << run_text({"squeue"});
    EXPECT_TRUE(within(5, [&] { return live_processes(bundle.string()).empty(); })) << live_processes(bundle.string());
  }
}

TEST(Slurm, KillNineOfReprokitLeavesNothingWithinFiveSeconds) {
  REQUIRE_SLURM();
  auto dir = fresh_dir("slurm_kill9");
  fs::path bundle;
  auto child = minify_running(dir, bundle);
  ::kill(child->pid(), SIGKILL);  // reprokit alone: its children learn it from PR_SET_PDEATHSIG
  child->wait_result();
  EXPECT_TRUE(within(5, [] { return jobs_in_queue() == 0; })) << run_text({"squeue"});
  EXPECT_TRUE(within(5, [&] { return live_processes(bundle.string()).empty(); })) << live_processes(bundle.string());
}
