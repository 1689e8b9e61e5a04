// Triage end to end: bundles of planted bugs, minified, then `reprokit triage` groups them —
// one group per planted bug (no splits across graphs, no merges of different bugs), each naming
// its smallest repro; a reduce output is read too.
#include <gtest/gtest.h>

#include <fstream>

#include "../harness/cli_util.h"
#include "reprokit/campaign/triage.h"
#include "reprokit/harness/repro_file.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/runtime/input_gen.h"

using namespace reprokit;
using namespace reprokit::testing;

namespace {

// Runs `graph` with `inject` under the harness and minifies the bundle it leaves in `root`.
void planted_bundle(const fs::path& root, const std::string& name, const std::string& graph, const std::string& inject) {
  const fs::path model = root / "models" / (name + ".rk");
  write_text(model, graph);
  auto r = reprokit_cli({"run", model.string(), "--backend", "cpp", "--inject", inject}, root,
                        {{"REPRO_AFTER", "aot"}, {"REPRO_LEVEL", "2"}, {"REPRO_DIR", (root / "farm" / name).string()}});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  auto bundles = bundles_in(root / "farm" / name);
  ASSERT_EQ(bundles.size(), 1u);
  auto m = reprokit_cli({"minify", bundles[0].string()}, root);
  ASSERT_EQ(m.exit_code, 0) << m.out << m.err;
}

}  // namespace

TEST(Triage, OneGroupPerPlantedBug) {
  const fs::path root = fresh_dir("triage");
  planted_bundle(root, "a", "graph a(%x: f32[4, 3], %y: f32[3]) {\n %e = exp(%x)\n %m = mul(%e, %y)\n %s = sin(%m)\n return (%s)\n}\n",
                 "exp:runtime_error");
  planted_bundle(root, "b", "graph b(%x: f32[2, 5]) {\n %n = neg(%x)\n %t = tanh(%n)\n %e = exp(%t)\n return (%e)\n}\n", "exp:runtime_error");
  planted_bundle(root, "c", "graph c(%x: f32[6]) {\n %r = relu(%x)\n %s = sin(%r)\n %c = cos(%s)\n return (%c)\n}\n", "sin:compile_error");

  auto t = reprokit_cli({"triage", (root / "farm").string(), "--json"}, root);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  auto groups = nlohmann::json::parse(t.out);
  ASSERT_EQ(groups.size(), 2u) << t.out;
  std::map<std::string, int> count_of_kind;
  for (auto& g : groups) {
    count_of_kind[g["kind"].get<std::string>()] = g["count"].get<int>();
    EXPECT_TRUE(fs::exists(fs::path(g["repro"].get<std::string>()) / "repro.rk")) << g.dump();
    EXPECT_TRUE(g.contains("signature") && g.contains("ops")) << g.dump();
  }
  EXPECT_EQ(count_of_kind["runtime_error"], 2) << t.out;
  EXPECT_EQ(count_of_kind["compile_error"], 1) << t.out;
  for (auto& g : groups)
    if (g["kind"] == "runtime_error") { EXPECT_EQ(g["ops"], "exp") << g.dump(); }

  auto text = reprokit_cli({"triage", (root / "farm").string()}, root);
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("3 repros in 2 distinct bugs"), std::string::npos) << text.out;
}

TEST(Triage, ReadsReduceOutputsAndRefusesWhatIsNoDirectory) {
  const fs::path root = fresh_dir("triage_reduce");
  write_text(root / "m.rk", "graph m(%x: f32[3]) {\n %a = sin(%x)\n %b = mul(%a, 3.0)\n %c = exp(%b)\n return (%c)\n}\n");
  auto r =
      reprokit_cli({"reduce", (root / "m.rk").string(), "--check", std::string(REPROKIT_EXE) + " run {} --backend cpp --inject mul:runtime_error",
                    "--fail-regex", "FAILED: runtime_error", "-o", (root / "m.reduced").string()},
                   root);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string why;
  auto rec = read_repro((root / "m.reduced").string(), &why);
  ASSERT_TRUE(rec) << why;
  EXPECT_EQ(rec->kind, "check");
  EXPECT_EQ(rec->ops_text(), "mul");
  EXPECT_EQ(find_repro_dirs(root.string()), std::vector<std::string>{(root / "m.reduced").string()});

  auto bad = reprokit_cli({"triage", (root / "missing").string()}, root);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("missing: not a directory"), std::string::npos) << bad.err;
}

// `reprokit generate`: graphs that run, bad flags named, and nothing written over.
TEST(Generate, WritesRunnableGraphsAndRefusesBadInput) {
  const fs::path root = fresh_dir("generate");
  auto g = reprokit_cli({"generate", "-o", "g", "--count", "3", "--seed", "5", "--max-nodes", "3"}, root);
  ASSERT_EQ(g.exit_code, 0) << g.err;
  EXPECT_NE(g.out.find("graphs in"), std::string::npos) << g.out;
  int graphs = 0;
  for (auto& d : fs::directory_iterator(root / "g")) {
    ++graphs;
    auto r = reprokit_cli({"run", (d.path() / "model.rk").string(), "--inputs", (d.path() / "inputs").string(), "--backend", "eager"}, root);
    EXPECT_EQ(r.exit_code, 0) << d.path() << r.err;
  }
  EXPECT_GE(graphs, 1);
  const auto before = fs::last_write_time(*fs::directory_iterator(root / "g"));
  auto again = reprokit_cli({"generate", "-o", "g", "--count", "3", "--seed", "5", "--max-nodes", "3"}, root);
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("already exists; nothing was overwritten"), std::string::npos) << again.err;
  EXPECT_EQ(fs::last_write_time(*fs::directory_iterator(root / "g")), before);
  for (auto [flags, message] :
       std::vector<std::pair<std::vector<std::string>, std::string>>{{{"--ops", "exp,nope"}, "--ops: 'nope' is not an op"},
                                                                     {{"--ops", ""}, "--ops expects op names"},
                                                                     {{"--count", "x"}, "--count expects an integer"},
                                                                     {{"--count", "0"}, "--count expects 1..1000000"},
                                                                     {{"--ops", "exp", "--skip-ops", "sin"}, "exclude each other"}}) {
    std::vector<std::string> argv = {"generate", "-o", "h"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto r = reprokit_cli(argv, root);
    EXPECT_EQ(r.exit_code, 2) << message;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
}

// Found on ONNX Runtime's findings: a compiler names what it reports after the graph's values
// ("node (v2/QuickGeluFusion/)"), and repros of one bug keep different value names; an apostrophe
// ("Runtime's") is not a quote. Both repros below are one bug.
TEST(Triage, ValueNamesInMessagesDoNotSplitABug) {
  const fs::path root = fresh_dir("triage_names");
  auto reduce_out = [&](const std::string& name, const std::string& value) {
    write_text(root / name / "repro.rk",
               "graph g(%" + value + ": f64[1]) {\n  %y" + value + " = silu(%" + value + ")\n  return (%y" + value + ")\n}\n");
    write_text(root / name / "report.json",
               nlohmann::json{{"check", "node check.mjs {}"},
                              {"final_check_said", "ort_check: FAILED: ONNX Runtime's session: no kernel (node:'y" + value +
                                                       "/QuickGeluFusion/'). Op with name (y" + value + "/QuickGeluFusion/) is not supported"}}
                   .dump());
  };
  reduce_out("a", "v2");
  reduce_out("b", "x7");
  std::vector<ReproRecord> records;
  for (const char* d : {"a", "b"}) {
    std::string why;
    auto r = read_repro((root / d).string(), &why);
    ASSERT_TRUE(r) << why;
    records.push_back(*r);
  }
  EXPECT_EQ(records[0].message, records[1].message);
  EXPECT_NE(records[0].message.find("(<v>"), std::string::npos) << records[0].message;
  EXPECT_NE(records[0].message.find("Runtime's session"), std::string::npos) << records[0].message;
  EXPECT_EQ(group_repros(records).size(), 1u);
}

// A symlink given as DIR is refused, naming it (nothing under a campaign is opened through a
// symlink), instead of walked as nothing: "0 repros" with exit 0.
TEST(Triage, ASymlinkedDirIsRefusedNamingIt) {
  const fs::path root = fresh_dir("triage_symlink");
  write_text(root / "real" / "r" / "repro.rk", "graph g(%x: f32[2]) {\n  %y = exp(%x)\n  return (%y)\n}\n");
  write_text(root / "real" / "r" / "report.json", nlohmann::json{{"check", "x {}"}, {"final_check_said", "boom"}}.dump());
  fs::create_directory_symlink(root / "real", root / "link");
  for (const std::string given : {"link", "link/"}) {
    auto r = reprokit_cli({"triage", given}, root);
    EXPECT_EQ(r.exit_code, 2) << given << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(given + ": is a symbolic link"), std::string::npos) << r.err;
  }
  auto real = reprokit_cli({"triage", "real"}, root);
  EXPECT_EQ(real.exit_code, 0) << real.err;
  EXPECT_NE(real.out.find("1 repro in 1 distinct bug"), std::string::npos) << real.out;
}

// Repros deeper than the walk goes are not dropped silently: triage says how many directories it
// did not visit and names one.
TEST(Triage, DirectoriesTooDeepToVisitAreCountedAndNamed) {
  const fs::path root = fresh_dir("triage_deep");
  fs::path deep = root / "farm";
  for (int level = 1; level <= kMaxReproDepth + 1; ++level) deep /= "d" + std::to_string(level);
  write_text(deep / "repro.rk", "graph g(%x: f32[2]) {\n  %y = exp(%x)\n  return (%y)\n}\n");
  write_text(deep / "report.json", nlohmann::json{{"check", "x {}"}, {"final_check_said", "boom"}}.dump());
  TooDeep too_deep;
  EXPECT_TRUE(find_repro_dirs((root / "farm").string(), &too_deep).empty());
  EXPECT_EQ(too_deep.count, 1);
  EXPECT_EQ(too_deep.first, deep.string());
  auto r = reprokit_cli({"triage", (root / "farm").string()}, root);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("1 directory more than 8 levels below " + (root / "farm").string() + " was not visited (the first: " + deep.string() + ")"),
            std::string::npos)
      << r.err;
  // One level up, it is found.
  auto nearer = reprokit_cli({"triage", (root / "farm" / "d1").string()}, root);
  EXPECT_NE(nearer.out.find("1 repro in 1 distinct bug"), std::string::npos) << nearer.out << nearer.err;
}

// Every skip names the directory it skipped, also when the reason is a field of the wrong type
// (whose message, from the JSON library, names no file).
TEST(Triage, EverySkipNamesItsDirectory) {
  const fs::path root = fresh_dir("triage_skips");
  const std::string graph = "graph g(%x: f32[2]) {\n  %y = exp(%x)\n  return (%y)\n}\n";
  write_text(root / "reduced" / "repro.rk", graph);
  write_text(root / "reduced" / "report.json", nlohmann::json{{"check", "x {}"}, {"final_check_said", 5}}.dump());
  write_text(root / "finding" / "model.rk", graph);
  write_text(root / "finding" / "finding.json", nlohmann::json{{"kind", "crash"}, {"backend", 3}}.dump());
  auto r = reprokit_cli({"triage", root.string()}, root);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("skipped " + (root / "reduced").string() + ": "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("skipped " + (root / "finding").string() + ": "), std::string::npos) << r.err;
}

// What triage prints comes from the repros' directory names and files: escape sequences there do
// not reach the terminal (clear it, set its title), and a newline cannot forge a verdict line.
TEST(Triage, PrintsNoControlCharactersFromTheReposItReads) {
  const fs::path root = fresh_dir("triage_controls");
  const std::string forged = "reprokit triage: all clear";
  const std::string hostile = "\x1b]0;pwned\x07\n" + forged;
  // A fuzz finding (finding.json beside model.rk) with the escapes in its directory, kind and message.
  const fs::path finding = root / ("bug" + hostile + "\xff");
  write_text(finding / "model.rk", "graph g(%x: f32[3]) {\n %y = exp(%x)\n return (%y)\n}\n");
  write_text(finding / "finding.json",
             nlohmann::json{{"kind", "crash\x1b[2J"}, {"backend", "cpp\xc2\x9b"}, {"mode", "forward"}, {"message", "died" + hostile}}.dump());
  // A repro that cannot be read: its directory is named in the "skipped" line.
  write_text(root / ("skip" + hostile) / "manifest.json", "{");

  auto t = reprokit_cli({"triage", root.string()}, root);
  ASSERT_EQ(t.exit_code, 0) << escape_controls_keep_newlines(t.err);
  expect_inert_output(t.out, forged);
  expect_inert_output(t.err, forged);
  EXPECT_NE(t.out.find("1 repro in 1 distinct bug"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("bug\\e]0;pwned\\x07\\nreprokit triage: all clear\\xff"), std::string::npos) << escape_controls_keep_newlines(t.out);
  EXPECT_NE(t.out.find("crash\\e[2J"), std::string::npos) << escape_controls_keep_newlines(t.out);
  EXPECT_NE(t.err.find("skipped"), std::string::npos) << escape_controls_keep_newlines(t.err);

  // --json: the same repro, every control character a JSON escape, the byte that is not UTF-8 replaced.
  auto j = reprokit_cli({"triage", root.string(), "--json"}, root);
  ASSERT_EQ(j.exit_code, 0) << escape_controls_keep_newlines(j.err);
  expect_inert_output(j.out, forged);
  auto groups = nlohmann::json::parse(j.out);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0]["kind"], "crash\x1b[2J");
}

// --known FILE says which groups are bugs already filed (with their reference) and which are new;
// `triage --json` output with references added is such a file; a malformed list is exit 2 naming it.
TEST(Triage, KnownBugsAreMarkedAndTheRestAreNew) {
  const fs::path root = fresh_dir("triage_known");
  auto reduced = [&](const std::string& name, const std::string& op, const std::string& said) {
    write_text(root / "c" / name / "repro.rk", "graph g(%x: f32[2]) {\n  %y = " + op + "(%x)\n  return (%y)\n}\n");
    write_text(root / "c" / name / "report.json", nlohmann::json{{"check", "x {}"}, {"final_check_said", said}}.dump());
  };
  reduced("a", "exp", "error: exp is off");
  reduced("b", "sigmoid", "error: sigmoid tail lost");
  auto listed = reprokit_cli({"triage", (root / "c").string(), "--json"}, root);
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  auto groups = nlohmann::json::parse(listed.out);
  ASSERT_EQ(groups.size(), 2u);
  nlohmann::json known = nlohmann::json::array();
  for (auto& g : groups)
    if (g["ops"] == "exp") known.push_back({{"signature", g["signature"]}, {"reference", "https://example.org/issues/17"}, {"count", 1}});
  write_text(root / "known.json", known.dump());
  auto text = reprokit_cli({"triage", (root / "c").string(), "--known", (root / "known.json").string()}, root);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("2 repros in 2 distinct bugs (1 new, 1 known)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("known: https://example.org/issues/17"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("      new\n"), std::string::npos) << text.out;
  auto json = nlohmann::json::parse(reprokit_cli({"triage", (root / "c").string(), "--known", (root / "known.json").string(), "--json"}, root).out);
  for (auto& g : json) EXPECT_EQ(g["known"], g["ops"] == "exp") << g.dump();
  for (const char* bad : {"{\"signature\": \"x\"}", "[{\"reference\": \"r\"}]", "[{\"signature\": 3}]", "not json"}) {
    write_text(root / "bad.json", bad);
    auto r = reprokit_cli({"triage", (root / "c").string(), "--known", (root / "bad.json").string()}, root);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("bad.json"), std::string::npos) << r.err;
  }
}

// A reduce repro in ONNX is counted in the ops its compiler ran, less what an exporter writes
// around an op: silu (x * Sigmoid(x)) and sigmoid failing alike are one bug, and the source line
// the compiler's message names is part of the key.
TEST(Triage, AnOnnxReproIsCountedInTheCompilersOwnOps) {
  const fs::path root = fresh_dir("triage_onnx_ops");
  auto reduce_out = [&](const std::string& name, const std::string& op, const std::string& said) {
    write_text(root / name / "m.rk", "graph g(%x: f32[4]) {\n  %y = " + op + "(%x)\n  return (%y)\n}\n");
    ProcessResult e = reprokit_cli({"export", (root / name / "m.rk").string(), "-o", (root / name / "repro.onnx").string()}, root);
    ASSERT_EQ(e.exit_code, 0) << e.err;
    fs::remove(root / name / "m.rk");
    write_text(root / name / "report.json", nlohmann::json{{"check", "x {}"}, {"final_check_said", said}}.dump());
  };
  const std::string at_line = "ort_check: MISMATCH: /src/onnxruntime/core/mlas/lib/logistic.cpp:88 too far off";
  reduce_out("silu", "silu", at_line);
  reduce_out("sigmoid", "sigmoid", at_line);
  reduce_out("elsewhere", "sigmoid", "ort_check: MISMATCH: /src/onnxruntime/core/mlas/lib/tanh.cpp:12 too far off");
  std::vector<ReproRecord> records;
  for (const char* d : {"silu", "sigmoid", "elsewhere"}) {
    std::string why;
    auto r = read_repro((root / d).string(), &why);
    ASSERT_TRUE(r) << why;
    records.push_back(*r);
  }
  EXPECT_EQ(records[0].ops_text(), "Sigmoid");
  EXPECT_EQ(records[1].ops_text(), "Sigmoid");
  EXPECT_EQ(records[0].location, "logistic.cpp:88");
  EXPECT_EQ(records[2].location, "tanh.cpp:12");
  EXPECT_EQ(group_repros(records).size(), 2u);
}

// Each compiler's findings are counted in the ops it reads: Inductor's in the ATen ops AOTAutograd
// hands it (never ONNX op types), OpenVINO's in the ONNX model's; reprokit's own in its ops.
TEST(Triage, AReproIsCountedInTheOpsOfTheCompilerThatFailed) {
  const fs::path root = fresh_dir("triage_op_language");
  const Graph g = parse_graph(
      "graph g(%x: f32[4, 3], %w: f32[5, 3], %b: f32[5]) {\n  %h = linear(%x, %w, %b)\n  %r = relu(%h)\n  %y = to(%r, dtype=f16)\n  return "
      "(%y)\n}\n");
  auto record_for = [&](const std::string& backend) {
    ReproSpec spec;
    spec.options.compile.backend = backend;
    spec.expected = failure_from(FailureKind::compile_error, "LoweringException: relu at /torch/_inductor/lowering.py:412");
    fs::create_directories(root / backend);
    write_repro_files((root / backend).string(), g, generate_inputs(g, 1), spec, "test");
    std::string why;
    auto r = read_repro((root / backend).string(), &why);
    EXPECT_TRUE(r) << why;
    return r ? *r : ReproRecord{};
  };
  EXPECT_EQ(record_for("inductor").ops_text(), "aten._to_copy, aten.addmm, aten.relu");
  EXPECT_EQ(record_for("inductor").location, "lowering.py:412");
  EXPECT_EQ(record_for("openvino").ops_text(), "Gemm, Relu");
  EXPECT_EQ(record_for("cpp").ops_text(), "linear, relu, to");
}
