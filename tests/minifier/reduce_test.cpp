// `reprokit reduce` end to end through the real binary, with checks a user would write: exit
// status and --fail-regex modes, the candidate from {} and from $REPRO_CANDIDATE, hanging and
// crashing checks, --jobs 2 against --jobs 1, --resume, a launcher prefix, .rk and .onnx, and a
// model exported from PyTorch with a planted pattern.
#include <gtest/gtest.h>
#include <fmt/core.h>
#include <signal.h>

#include <chrono>
#include <fstream>

#include "../harness/cli_util.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/minifier/candidate.h"
#include "reprokit/minifier/check_oracle.h"
#include "reprokit/onnx/onnx_import.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

// The ops of the reduced model (repro.rk in OUT), as "op op ..." in graph order.
std::string reduced_ops(const fs::path& out) {
  Graph g = load_module_file((out / "repro.rk").string()).entry();
  std::string s;
  for (int i = g.num_inputs(); i < g.size(); ++i) s += (s.empty() ? "" : " ") + std::string(op_name(g.node(i).op));
  return s;
}

void write_script(const fs::path& p, const std::string& body) {
  std::ofstream(p) << "#!/bin/sh\n" << body;
  fs::permissions(p, fs::perms::owner_all);
}

bool have_python_module(const std::string& module) {
  ProcessSpec s;
  s.argv = {"/usr/bin/python3", "-c", "import " + module};
  s.timeout_s = 60;
  try {
    return run_process(s).exit_code == 0;
  } catch (const std::exception&) { return false; }
}

// An mlp check: interesting (exits non-zero) when the candidate's text holds a gelu node.
const std::vector<std::string> kGeluCheck = {"--check", "sh -c '! grep -q \"= gelu(\" \"$1\"' sh {}"};

}  // namespace

TEST(Reduce, ExitStatusCheckReadingTheCandidateFromBraces) {
  auto dir = fresh_dir("reduce_braces");
  auto r = reprokit_cli({"reduce", example("mlp"), kGeluCheck[0], kGeluCheck[1], "-o", "out"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(reduced_ops(dir / "out"), "gelu");
  auto report = read_json(dir / "out" / "report.json");
  EXPECT_EQ(report["original_ops"], 5);
  EXPECT_EQ(report["final_ops"], 1);
  EXPECT_TRUE(report["verified"].get<bool>());
  EXPECT_GT(report["queries"].get<int>(), 0);
  // The repro reruns as it ran: the check in OUT on repro.rk, with its inputs.
  EXPECT_TRUE(fs::exists(dir / "out" / "inputs"));
  EXPECT_FALSE(fs::is_empty(dir / "out" / "inputs"));
  std::string bug = read_text(dir / "out" / "BUG_REPORT.md");
  EXPECT_NE(bug.find("grep -q"), std::string::npos) << bug;
  EXPECT_NE(bug.find("from 5 ops to 1 op"), std::string::npos) << bug;
  EXPECT_NE(r.out.find("verified: the check still finds it interesting"), std::string::npos) << r.out;
  // Candidates are removed once judged.
  EXPECT_TRUE(fs::is_empty(dir / "out" / "reduce_work" / "candidates"));
}

// A check that keys on one node's name, in a chain of the same op: removing the first half and
// removing the second half give the same structure, and only the name tells the candidates apart.
TEST(Reduce, ACheckKeyedOnANodesNameIsNeverAnsweredFromAnotherCandidate) {
  auto dir = fresh_dir("reduce_names");
  std::string text = "graph chain(%x: f32[4]) {\n";
  for (int i = 0; i < 16; ++i) text += fmt::format("  %n{} = relu(%{})\n", i, i ? fmt::format("n{}", i - 1) : "x");
  std::ofstream(dir / "chain.rk") << text << "  return (%n15)\n}\n";
  auto r = reprokit_cli({"reduce", (dir / "chain.rk").string(), "--check", "sh -c '! grep -q \"%n11 = \" \"$1\"' sh {}", "-o", "out"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  Graph g = load_module_file((dir / "out" / "repro.rk").string()).entry();
  ASSERT_EQ(g.num_ops(), 1) << read_text(dir / "out" / "repro.rk");
  EXPECT_EQ(g.node(g.num_inputs()).name, "n11");
}

TEST(Reduce, CheckReadingTheCandidateFromTheEnvironmentOrTheVariable) {
  auto dir = fresh_dir("reduce_env");
  // From the environment (sh expands it), and as a word reprokit substitutes (no shell).
  auto a = reprokit_cli({"reduce", example("mlp"), "--check", "sh -c '! grep -q softmax \"$REPRO_CANDIDATE\"'", "-o", "a"}, dir);
  ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
  EXPECT_EQ(reduced_ops(dir / "a"), "softmax");
  auto b = reprokit_cli({"reduce", example("mlp"), "--check", "cat $REPRO_CANDIDATE", "--fail-regex", "= softmax\\(", "-o", "b"}, dir);
  ASSERT_EQ(b.exit_code, 0) << b.out << b.err;
  EXPECT_EQ(reduced_ops(dir / "b"), "softmax");
}

TEST(Reduce, FailRegexDecidesWhateverTheExitStatus) {
  auto dir = fresh_dir("reduce_regex");
  // The check always exits 0; only its output says.
  auto r = reprokit_cli({"reduce", example("mlp"), "--check", "cat {}", "--fail-regex", "= softmax\\(", "-o", "out"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(reduced_ops(dir / "out"), "softmax");
  EXPECT_NE(read_json(dir / "out" / "report.json")["final_check_said"].get<std::string>().find("matches"), std::string::npos);
  // A regex that never matches: the original is not interesting, exit 1; a bad regex is exit 2.
  auto none = reprokit_cli({"reduce", example("mlp"), "--check", "cat {}", "--fail-regex", "no such text", "-o", "none"}, dir);
  EXPECT_EQ(none.exit_code, 1) << none.out << none.err;
  EXPECT_NE(none.err.find("not interesting"), std::string::npos) << none.err;
  auto bad = reprokit_cli({"reduce", example("mlp"), "--check", "cat {}", "--fail-regex", "(", "-o", "bad"}, dir);
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
}

// --fail-regex runs in time linear in the output (RE2): std::regex died of SIGSEGV on (a|b)*c
// against 100 KB and never finished ^(a|aa)*$ against 40 a's and a b. A pattern
// RE2 does not take (a backreference) is a usage error naming --fail-regex.
TEST(Reduce, FailRegexIsLinearInTheOutput) {
  auto dir = fresh_dir("reduce_regex_linear");
  write_script(dir / "long.sh", "head -c 100000 /dev/zero | tr '\\000' a\necho c\n");
  write_script(dir / "aab.sh", "echo aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab\n");
  auto t0 = std::chrono::steady_clock::now();
  auto deep = reprokit_cli({"reduce", example("mlp"), "--check", (dir / "long.sh").string(), "--fail-regex", "(a|b)*c", "-o", "deep"}, dir, {}, 120);
  EXPECT_EQ(deep.exit_code, 0) << deep.out << deep.err;  // every candidate matches
  auto slow = reprokit_cli({"reduce", example("mlp"), "--check", (dir / "aab.sh").string(), "--fail-regex", "^(a|aa)*$", "-o", "slow"}, dir, {}, 120);
  EXPECT_EQ(slow.exit_code, 1) << slow.out << slow.err;  // nothing matches: the original is not interesting
  EXPECT_FALSE(slow.timed_out);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 100);
  auto backref = reprokit_cli({"reduce", example("mlp"), "--check", "cat {}", "--fail-regex", "(gelu).*\\1", "-o", "backref"}, dir);
  EXPECT_EQ(backref.exit_code, 2) << backref.out << backref.err;
  EXPECT_NE(backref.err.find("--fail-regex '(gelu).*\\1'"), std::string::npos) << backref.err;
  EXPECT_FALSE(fs::exists(dir / "backref"));
  // ECMAScript's classes and escapes keep working.
  auto classes =
      reprokit_cli({"reduce", example("mlp"), "--check", "cat {}", "--fail-regex", "%\\w+ = soft(?:max)\\(\\s*%\\w+", "-o", "classes"}, dir);
  ASSERT_EQ(classes.exit_code, 0) << classes.out << classes.err;
  EXPECT_EQ(reduced_ops(dir / "classes"), "softmax");
}

TEST(Reduce, HangingCheckIsKilledWithItsProcessGroup) {
  auto dir = fresh_dir("reduce_hang");
  // The check's child sleeps (a grandchild of reprokit): killing only the check would leave it.
  write_script(dir / "check.sh", "if grep -q '= gelu(' \"$1\"; then sleep 71.25 & wait; fi\nexit 0\n");
  std::vector<std::string> args = {"reduce", example("mlp"), "--check", (dir / "check.sh").string() + " {}", "--timeout", "0.5", "-o"};
  auto plain = reprokit_cli(
      [&] {
        auto a = args;
        a.push_back("plain");
        return a;
      }(),
      dir);
  EXPECT_EQ(plain.exit_code, 1) << plain.out << plain.err;  // a hang is not interesting by default
  auto hang = reprokit_cli(
      [&] {
        auto a = args;
        a.insert(a.end(), {"hang", "--hang-is-interesting"});
        return a;
      }(),
      dir);
  ASSERT_EQ(hang.exit_code, 0) << hang.out << hang.err;
  EXPECT_EQ(reduced_ops(dir / "hang"), "gelu");
  ProcessSpec p;
  p.argv = {"pgrep", "-f", "sleep 71.25"};
  EXPECT_NE(run_process(p).exit_code, 0) << "a hanging check outlived reduce: " << run_process(p).out;
}

TEST(Reduce, CrashingCheckIsInteresting) {
  auto dir = fresh_dir("reduce_crash");
  write_script(dir / "check.sh", "grep -q '= linear(' \"$1\" && kill -SEGV $$\nexit 0\n");
  auto r = reprokit_cli({"reduce", example("mlp"), "--check", (dir / "check.sh").string() + " {}", "-o", "out"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(reduced_ops(dir / "out"), "linear");
  EXPECT_NE(read_json(dir / "out" / "report.json")["final_check_said"].get<std::string>().find("signal 11"), std::string::npos);
}

TEST(Reduce, TwoJobsGiveTheSameResultAsOne) {
  auto dir = fresh_dir("reduce_jobs");
  // Interesting when a softmax reads a matmul (the attention block has two matmuls, one softmax).
  write_script(dir / "check.sh", "grep -q '= softmax(' \"$1\" && grep -q '= matmul(' \"$1\" && exit 1\nexit 0\n");
  std::string check = (dir / "check.sh").string() + " {}";
  auto one = reprokit_cli({"reduce", example("attention"), "--check", check, "-o", "one"}, dir);
  auto two = reprokit_cli({"reduce", example("attention"), "--check", check, "-o", "two", "--jobs", "2"}, dir);
  ASSERT_EQ(one.exit_code, 0) << one.out << one.err;
  ASSERT_EQ(two.exit_code, 0) << two.out << two.err;
  EXPECT_EQ(read_text(dir / "one" / "repro.rk"), read_text(dir / "two" / "repro.rk"));
  // The same repro; two jobs may ask a few more speculative queries (judged side by side).
  EXPECT_EQ(read_json(dir / "two" / "report.json")["jobs"], 2);
  EXPECT_LE(read_json(dir / "one" / "report.json")["final_ops"].get<int>(), 2);
}

TEST(Reduce, ResumeContinuesFromTheBestSoFarAndOutIsNeverOverwritten) {
  auto dir = fresh_dir("reduce_resume");
  // A first run that stops early (only one strategy), then --resume with all of them.
  auto first = reprokit_cli({"reduce", example("attention"), kGeluCheck[0], kGeluCheck[1], "-o", "out", "--only", "truncate"}, dir);
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  int after_first = read_json(dir / "out" / "report.json")["final_ops"];
  EXPECT_GT(after_first, 1);
  std::string repro_before = read_text(dir / "out" / "repro.rk");
  // Without --resume the directory is refused and left as it was.
  auto again = reprokit_cli({"reduce", example("attention"), kGeluCheck[0], kGeluCheck[1], "-o", "out"}, dir);
  EXPECT_EQ(again.exit_code, 2) << again.out << again.err;
  EXPECT_NE(again.err.find("--resume"), std::string::npos) << again.err;
  EXPECT_EQ(read_text(dir / "out" / "repro.rk"), repro_before);
  auto resumed = reprokit_cli({"reduce", example("attention"), kGeluCheck[0], kGeluCheck[1], "-o", "out", "--resume"}, dir);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_NE(resumed.err.find(fmt::format("resuming from {}", (dir / "out" / "reduce_work" / "state.json").string())), std::string::npos)
      << resumed.err;
  EXPECT_NE(resumed.err.find(fmt::format("({} ops)", after_first)), std::string::npos) << resumed.err;
  EXPECT_EQ(reduced_ops(dir / "out"), "gelu");
}

// --resume continues a reduction; a directory that never held one is refused, never written
// into (its inputs/*.npy were deleted for the repro's).
TEST(Reduce, ResumeOfADirectoryThatHeldNoReductionIsRefused) {
  auto dir = fresh_dir("reduce_resume_foreign");
  fs::create_directories(dir / "mine" / "inputs");
  { std::ofstream(dir / "mine" / "inputs" / "mydata.npy") << "my data"; }
  auto r = reprokit_cli({"reduce", example("mlp"), kGeluCheck[0], kGeluCheck[1], "-o", "mine", "--resume"}, dir);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("'mine' holds no reduction to resume"), std::string::npos) << r.err;
  EXPECT_EQ(read_text(dir / "mine" / "inputs" / "mydata.npy"), "my data");
  EXPECT_FALSE(fs::exists(dir / "mine" / "reduce_work"));
  // A new or empty directory is simply a first run.
  fs::create_directories(dir / "empty");
  auto fresh = reprokit_cli({"reduce", example("mlp"), kGeluCheck[0], kGeluCheck[1], "-o", "empty", "--resume", "--only", "truncate"}, dir);
  EXPECT_EQ(fresh.exit_code, 0) << fresh.out << fresh.err;
}

TEST(Reduce, WorkerPrefixRunsEveryCheckThroughTheLauncher) {
  auto dir = fresh_dir("reduce_prefix");
  // A local stand-in for `srun` / `ssh HOST`: records each call, then runs the command in place.
  write_script(dir / "launch.sh", "echo \"$*\" >> " + (dir / "calls.log").string() + "\nexec \"$@\"\n");
  write_script(dir / "check.sh", "grep -q '= softmax(' \"$1\" && sleep 61.75\nexit 0\n");
  auto r = reprokit_cli({"reduce", example("mlp"), "--check", (dir / "check.sh").string() + " {}", "--worker-prefix", (dir / "launch.sh").string(),
                         "--work-dir", (dir / "shared").string(), "--timeout", "0.5", "--hang-is-interesting", "--jobs", "2", "-o", "out"},
                        dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(reduced_ops(dir / "out"), "softmax");
  auto report = read_json(dir / "out" / "report.json");
  // Every check went through the launcher: the probe's, the reduction's (less cache hits) and the final one.
  std::string log = read_text(dir / "calls.log");
  int calls = static_cast<int>(std::count(log.begin(), log.end(), '\n'));
  EXPECT_EQ(calls, 3 + report["queries"].get<int>() + 1) << log;
  EXPECT_NE(log.find((dir / "shared" / "candidates").string()), std::string::npos) << log;  // candidates on the shared directory
  EXPECT_NE(log.find("check.sh"), std::string::npos);
  ProcessSpec p;
  p.argv = {"pgrep", "-f", "sleep 61.75"};
  p.env_set = {};
  // Killed through the launcher (it execs, so the check is in the group reprokit kills).
  EXPECT_NE(run_process(p).exit_code, 0) << run_process(p).out;
}

// The prefix's words are passed as given (a file named like one of them is no reason to make it a
// path), and a launcher that fails by itself (125) is an error, never an answer.
TEST(Reduce, WorkerPrefixWordsAreTakenAsGivenAndALauncherFailureIsNoAnswer) {
  auto dir = fresh_dir("reduce_prefix_words");
  std::ofstream(dir / "5") << "a file named like the niceness\n";
  write_script(dir / "check.sh", "grep -q '= softmax(' \"$1\" && exit 1\nexit 0\n");
  auto r = reprokit_cli({"reduce", example("mlp"), "--check", (dir / "check.sh").string() + " {}", "--worker-prefix", "nice -n 5", "-o", "out"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(reduced_ops(dir / "out"), "softmax");
  auto failing = reprokit_cli(
      {"reduce", example("mlp"), "--check", (dir / "check.sh").string() + " {}", "--worker-prefix", "env --no-such-option", "-o", "out2"}, dir);
  EXPECT_EQ(failing.exit_code, 2) << failing.out << failing.err;
  EXPECT_NE(failing.err.find("the launcher itself failed"), std::string::npos) << failing.err;
}

TEST(Reduce, OnnxModelsStayOnnxAndRkModelsCanBeCheckedAsOnnx) {
  auto dir = fresh_dir("reduce_onnx");
  auto ex = reprokit_cli({"export", example("mlp"), "-o", "mlp.onnx"}, dir);
  ASSERT_EQ(ex.exit_code, 0) << ex.out << ex.err;
  // The check reads the binary ONNX file: interesting while it holds a Softmax.
  auto a = reprokit_cli({"reduce", "mlp.onnx", "--check", "sh -c '! grep -q Softmax \"$1\"' sh {}", "-o", "a"}, dir);
  ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
  EXPECT_EQ(reduced_ops(dir / "a"), "softmax");
  ASSERT_TRUE(fs::exists(dir / "a" / "repro.onnx"));
  EXPECT_EQ(import_onnx((dir / "a" / "repro.onnx").string()).graph.num_ops(), 1);
  auto b = reprokit_cli({"reduce", example("mlp"), "--format", "onnx", "--check", "sh -c '! grep -q Softmax \"$1\"' sh {}", "-o", "b"}, dir);
  ASSERT_EQ(b.exit_code, 0) << b.out << b.err;
  EXPECT_EQ(reduced_ops(dir / "b"), "softmax");
  EXPECT_EQ(read_json(dir / "b" / "report.json")["format"], "onnx");
  auto c = reprokit_cli({"reduce", "mlp.onnx", "--format", "rk", "--check", "sh -c '! grep -q softmax \"$1\"' sh {}", "-o", "c"}, dir);
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  EXPECT_EQ(reduced_ops(dir / "c"), "softmax");
}

TEST(Reduce, BadCommandLinesAndChecksAreUsageErrors) {
  auto dir = fresh_dir("reduce_bad");
  EXPECT_EQ(reprokit_cli({"reduce", example("mlp")}, dir).exit_code, 2);                                        // no --check
  EXPECT_EQ(reprokit_cli({"reduce", example("mlp"), "--check", "grep x | wc", "-o", "o1"}, dir).exit_code, 2);  // a pipe without sh -c
  auto missing = reprokit_cli({"reduce", example("mlp"), "--check", "/no/such/check {}", "-o", "o2"}, dir);
  EXPECT_EQ(missing.exit_code, 2) << missing.out << missing.err;
  EXPECT_NE(missing.err.find("cannot be started"), std::string::npos) << missing.err;
  EXPECT_EQ(reprokit_cli({"reduce", "/no/such/model.rk", "--check", "true"}, dir).exit_code, 2);
  auto format = reprokit_cli({"reduce", example("mlp"), "--check", "true", "--format", "xml", "-o", "o3"}, dir);
  EXPECT_EQ(format.exit_code, 2);
  EXPECT_NE(format.err.find("--format must be rk or onnx; got 'xml'"), std::string::npos) << format.err;
}

TEST(Reduce, PyTorchModelWithAPlantedPatternReducesToThePattern) {
  if (!have_python_module("torch") || !have_python_module("onnx")) GTEST_SKIP() << "python3-torch or python3-onnx is not installed";
  auto dir = fresh_dir("reduce_torch");
  // The README's example: a small PyTorch network with sin -> mul planted in the middle of it.
  const std::string examples = std::string(REPROKIT_SOURCE_DIR) + "/examples/reduce/";
  ProcessSpec s;
  s.argv = {"/usr/bin/python3", examples + "export_net.py"};
  s.cwd = dir.string();
  s.timeout_s = 300;
  auto exported = run_process(s);
  ASSERT_EQ(exported.exit_code, 0) << exported.out << exported.err;
  auto r = reprokit_cli({"reduce", "net.onnx", "--check", "/usr/bin/python3 " + examples + "check_sin_mul.py {}", "-o", "out"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(reduced_ops(dir / "out"), "sin mul");
  Graph g = import_onnx((dir / "out" / "repro.onnx").string()).graph;
  EXPECT_EQ(g.num_ops(), 2);
}

TEST(Reduce, RelativePathsInTheCheckAreResolvedAndACheckThatCannotRunIsAnError) {
  auto dir = fresh_dir("reduce_relative");
  // Checks run in each candidate's directory: `check.sh` here must still be found.
  write_script(dir / "check.sh", "grep -q '= softmax(' \"$1\" && exit 1\nexit 0\n");
  auto r = reprokit_cli({"reduce", example("mlp"), "--check", "sh check.sh {}", "-o", "out"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(reduced_ops(dir / "out"), "softmax");
  EXPECT_NE(r.err.find("check.sh -> " + (dir / "check.sh").string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the original is interesting: the check exited with status 1"), std::string::npos) << r.err;
  // 127 is the shell's "command not found": the check is broken, not interesting.
  auto broken = reprokit_cli({"reduce", example("mlp"), "--check", "sh -c 'no-such-command-rk \"$1\"' sh {}", "-o", "broken"}, dir);
  EXPECT_EQ(broken.exit_code, 2) << broken.out << broken.err;
  EXPECT_NE(broken.err.find("could not run (exit status 127: command not found)"), std::string::npos) << broken.err;
}

// A check that leaves a daemon behind (a build server) and one that leaves a background job: the
// verdict is the check's own exit status, at its exit. Before, the daemon held reprokit's pipes
// (inherited descriptors) and reduce hung whatever --timeout said, and the background job turned
// "exit 1" into a timeout.
TEST(Reduce, ChecksLeavingDaemonsOrBackgroundJobsAreJudgedWhenTheyExit) {
  auto dir = fresh_dir("reduce_daemon");
  for (const char* leftover : {"setsid sleep 7771 &", "sleep 7772 &"}) {
    SCOPED_TRACE(leftover);
    write_script(dir / "check.sh", std::string(leftover) + "\n! grep -q '= gelu(' \"$1\"\n");
    fs::remove_all(dir / "out");
    auto r = reprokit_cli({"reduce", example("mlp"), "--check", "sh " + (dir / "check.sh").string() + " {}", "--timeout", "20", "-o", "out"}, dir, {},
                          120);
    EXPECT_FALSE(r.timed_out) << "reduce hung on a check's leftover";
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(reduced_ops(dir / "out"), "gelu");
    auto report = read_json(dir / "out" / "report.json");
    EXPECT_EQ(report["timeouts"], 0) << r.err;
  }
  ProcessSpec p;
  p.argv = {"pkill", "-f", "sleep 777[12]"};
  run_process(p);
}

// A model whose name holds shell syntax, and a check with {} inside a `sh -c` script: the path
// (under m$(touch X).reduced) would run `touch X`. Refused with a clear message, exit 2, and X is
// never made; with {} as a word of its own the same model reduces.
TEST(Reduce, AModelNameWithShellSyntaxNeverReachesAShellScript) {
  auto dir = fresh_dir("reduce_shell_name");
  fs::copy_file(example("mlp"), dir / "m$(touch X).rk");
  auto bad = reprokit_cli({"reduce", "m$(touch X).rk", "--check", "sh -c '! grep -q \"= gelu(\" {}'", "-o", "m$(touch X).out"}, dir);
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("a word of its own"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(dir / "X")) << "the model's name ran as a command";
  auto good = reprokit_cli({"reduce", "m$(touch X).rk", "--check", "sh -c '! grep -q \"= gelu(\" \"$1\"' sh {}", "-o", "out"}, dir);
  EXPECT_EQ(good.exit_code, 0) << good.err;
  EXPECT_FALSE(fs::exists(dir / "X"));
}

// A launcher that re-parses its command in a shell, as ssh does (`sh -c "$*"` on the far side),
// never gets a model's or directory's name as shell text: the default OUT drops what a shell acts
// on, an -o holding it is refused under a launcher reprokit cannot tell about, and under one named
// ssh every word is quoted.
TEST(Reduce, AReparsingLauncherNeverRunsANameAsACommand) {
  auto dir = fresh_dir("reduce_reparsing_launcher");
  fs::create_directories(dir / "bin");
  const std::string far_side = "shift\ncd " + dir.string() + " && exec sh -c \"$*\"\n";
  write_script(dir / "bin" / "fakessh", far_side);
  write_script(dir / "bin" / "ssh", far_side);
  write_script(dir / "check.sh", "grep -q '= softmax(' \"$1\" && exit 1\nexit 0\n");
  fs::copy_file(example("mlp"), dir / "n$(touch${IFS}X).rk");
  const std::string check = (dir / "check.sh").string() + " {}";
  const std::string fakessh = (dir / "bin" / "fakessh").string() + " host";

  auto by_default = reprokit_cli({"reduce", "n$(touch${IFS}X).rk", "--check", check, "--worker-prefix", fakessh}, dir);
  EXPECT_EQ(by_default.exit_code, 0) << by_default.err;
  EXPECT_TRUE(fs::exists(dir / "n__touch_{IFS}X_.reduced" / "repro.rk")) << by_default.err;  // nothing a shell acts on
  EXPECT_FALSE(fs::exists(dir / "X")) << "the model's name ran as a command";

  auto named_out = reprokit_cli({"reduce", "n$(touch${IFS}X).rk", "--check", check, "--worker-prefix", fakessh, "-o", "o$(touch X)"}, dir);
  EXPECT_EQ(named_out.exit_code, 2) << named_out.err;
  EXPECT_NE(named_out.err.find("re-parses"), std::string::npos) << named_out.err;
  EXPECT_FALSE(fs::exists(dir / "X")) << "the directory's name ran as a command";

  auto through_ssh = reprokit_cli(
      {"reduce", "n$(touch${IFS}X).rk", "--check", check, "--worker-prefix", (dir / "bin" / "ssh").string() + " host", "-o", "o$(touch X) it's"},
      dir);
  EXPECT_EQ(through_ssh.exit_code, 0) << through_ssh.err;
  EXPECT_EQ(reduced_ops(dir / "o$(touch X) it's"), "softmax");
  EXPECT_FALSE(fs::exists(dir / "X")) << "a quoted word ran as a command";
}

// A check that calls reprokit to judge (compare, generate, ...) and sees reprokit itself fail was
// taken as "interesting": an exit 3 or a crash of the tool reduced a model nothing was wrong with.
// The reprokit inside records its own failure for the reduction, which stops and says so.
TEST(Reduce, ReprokitFailingInsideTheCheckIsAToolFailureNotAnAnswer) {
  auto dir = fresh_dir("reduce_tool_failure");
  write_script(dir / "check.sh",
               "\"$REPROKIT_EXE\" generate -o \"$REPRO_CANDIDATE_DIR/g\" --count 1000000 >/dev/null 2>&1 & pid=$!\n"
               "sleep 1\nkill -SEGV $pid\nwait $pid\n");
  auto r = reprokit_cli({"reduce", example("mlp"), "--check", (dir / "check.sh").string() + " {}", "-o", "out"}, dir);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("a tool failure, not the check's answer"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("reprokit generate died of signal 11"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out" / "repro.rk"));
}

// A reduction keeps to the bug it started from: a candidate that fails another way (another
// message, another exit status) is not interesting unless --allow-drift says any failure will do.
TEST(Reduce, ACandidateFailingAnotherWayIsNotTheOriginalsBug) {
  auto dir = fresh_dir("reduce_drift");
  write_script(dir / "check.sh",
               "if grep -q '= softmax(' \"$1\" && grep -q '= linear(' \"$1\"; then echo 'error: softmax after linear is wrong' >&2; exit 1; fi\n"
               "if grep -q '= gelu(' \"$1\"; then echo 'error: gelu crashed' >&2; exit 1; fi\nexit 0\n");
  const std::string check = (dir / "check.sh").string() + " {}";
  auto pinned = reprokit_cli({"reduce", example("mlp"), "--check", check, "-o", "pinned"}, dir);
  ASSERT_EQ(pinned.exit_code, 0) << pinned.err;
  EXPECT_NE(pinned.err.find("candidates must fail the same way"), std::string::npos) << pinned.err;
  const std::string kept = reduced_ops(dir / "pinned");
  EXPECT_NE(kept.find("softmax"), std::string::npos) << kept;
  EXPECT_NE(kept.find("linear"), std::string::npos) << kept;
  EXPECT_EQ(kept.find("gelu"), std::string::npos) << kept;
  auto drifting = reprokit_cli({"reduce", example("mlp"), "--check", check, "-o", "drifted", "--allow-drift"}, dir);
  ASSERT_EQ(drifting.exit_code, 0) << drifting.err;
  EXPECT_EQ(reduced_ops(dir / "drifted"), "gelu");
}

// The final verification runs in a copy of the repro's files: a check that cleans its candidate
// directory (rm -rf "$REPRO_CANDIDATE_DIR"/*) used to delete OUT's repro.
TEST(Reduce, AFinalCheckThatCleansItsDirectoryLeavesOutAlone) {
  auto dir = fresh_dir("reduce_cleaning_check");
  write_script(dir / "check.sh", "grep -q '= gelu(' \"$1\"; found=$?\nrm -rf \"$REPRO_CANDIDATE_DIR\"/*\n[ $found -ne 0 ]\n");
  auto r = reprokit_cli({"reduce", example("mlp"), "--check", "sh " + (dir / "check.sh").string() + " {}", "-o", "out"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir / "out" / "repro.rk"));
  EXPECT_TRUE(fs::exists(dir / "out" / "BUG_REPORT.md"));
  EXPECT_EQ(reduced_ops(dir / "out"), "gelu");
}

// Kept candidates of an earlier run are never reused: a count past 9 digits (c1000000000 after
// c999999999) goes on after them, and each one's files stay as they were.
TEST(Reduce, KeptCandidatesPastNineDigitsAreNeverReused) {
  auto dir = fresh_dir("reduce_keep_ten_digits");
  const fs::path candidates = dir / "out" / "reduce_work" / "candidates";
  for (const char* name : {"c999999999", "c1000000000"}) write_text(candidates / name / "mine.txt", name);
  auto r =
      reprokit_cli({"reduce", example("mlp"), kGeluCheck[0], kGeluCheck[1], "-o", "out", "--resume", "--keep-candidates", "--only", "truncate"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(read_text(candidates / "c999999999" / "mine.txt"), "c999999999");
  EXPECT_EQ(read_text(candidates / "c1000000000" / "mine.txt"), "c1000000000");
  EXPECT_FALSE(fs::exists(candidates / "c1000000000" / "model.rk")) << "a new candidate was written into an earlier one";
  EXPECT_TRUE(fs::exists(candidates / "c1000000001" / "model.rk")) << "the count goes on after the largest kept candidate";
}

// A candidate directory is created only where nothing has its name: one that is there already
// (the oracle's count pointed at it) is skipped, not removed or written into.
TEST(Reduce, TheOracleNeverWritesIntoAnExistingCandidateDirectory) {
  auto dir = fresh_dir("reduce_exclusive_candidates");
  write_text(dir / "work" / "candidates" / "c00001" / "mine.txt", "mine");
  CheckOptions co;
  co.check = {"true"};
  co.work_dir = (dir / "work").string();
  co.first_candidate = 1;
  co.keep_candidates = true;
  Candidate c;
  c.graph = parse_module("graph g(%x: f32[2]) {\n %y = exp(%x)\n return (%y)\n}\n").entry();
  CheckOracle oracle(co, [](const Candidate&) { return std::vector<Tensor>{Tensor::from_doubles(DType::f32, {2}, {1, 2})}; });
  std::vector<Verdict> v = oracle.judge({c});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_FALSE(v[0].interesting) << failure_of(v[0]).message;
  EXPECT_EQ(read_text(dir / "work" / "candidates" / "c00001" / "mine.txt"), "mine");
  EXPECT_FALSE(fs::exists(dir / "work" / "candidates" / "c00001" / "model.rk"));
  EXPECT_TRUE(fs::exists(dir / "work" / "candidates" / "c00002" / "model.rk"));
}

// A run refused before it wrote a repro (here: a check that cannot be started) removes what it
// created, so the corrected command runs instead of finding OUT "already exists"; a directory
// that was there before stays.
TEST(Reduce, ARefusedRunLeavesNothingItCreated) {
  auto dir = fresh_dir("reduce_refused_cleanup");
  auto missing = reprokit_cli({"reduce", example("mlp"), "--check", "/no/such/check {}", "-o", "out"}, dir);
  EXPECT_EQ(missing.exit_code, 2) << missing.out << missing.err;
  EXPECT_FALSE(fs::exists(dir / "out")) << "left behind by the refused run";
  auto fixed = reprokit_cli({"reduce", example("mlp"), kGeluCheck[0], kGeluCheck[1], "-o", "out", "--only", "truncate"}, dir);
  EXPECT_EQ(fixed.exit_code, 0) << fixed.out << fixed.err;

  fs::create_directories(dir / "mine");
  auto into_existing = reprokit_cli({"reduce", example("mlp"), "--check", "/no/such/check {}", "-o", "mine", "--keep-candidates"}, dir);
  EXPECT_EQ(into_existing.exit_code, 2) << into_existing.err;
  EXPECT_TRUE(fs::is_directory(dir / "mine")) << "it was there before";
  EXPECT_TRUE(fs::is_empty(dir / "mine"));
}

// repro_torch.py in a reduce OUT runs with no argument: its inputs are OUT/inputs/, where the
// check reads them (not repro_inputs/, a bundle's).
TEST(Reduce, ReproTorchScriptReadsTheInputsBesideIt) {
  auto dir = fresh_dir("reduce_repro_torch");
  auto r = reprokit_cli({"reduce", example("mlp"), kGeluCheck[0], kGeluCheck[1], "-o", "out", "--only", "truncate"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string script = read_text(dir / "out" / "repro_torch.py");
  EXPECT_NE(script.find("os.path.join(here, 'inputs')"), std::string::npos) << script;
  EXPECT_EQ(script.find("repro_inputs"), std::string::npos) << script;
  if (!have_python_module("torch")) GTEST_SKIP() << "python3-torch is not installed: the script was not run";
  ProcessSpec s;
  s.argv = {"/usr/bin/python3", (dir / "out" / "repro_torch.py").string()};
  s.cwd = dir.string();
  s.timeout_s = 300;
  auto ran = run_process(s);
  EXPECT_EQ(ran.exit_code, 0) << ran.out << ran.err;
  EXPECT_TRUE(fs::is_directory(dir / "out" / "torch_outputs")) << ran.out;
}
