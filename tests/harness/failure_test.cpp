// Failure records: the normalised signature (what varies between runs of one bug is stripped,
// what tells bugs apart is kept), the "same bug" rule the minifier and `reprokit repro` apply, and
// the JSON form with its errors.
#include <gtest/gtest.h>

#include <chrono>

#include "reprokit/harness/failure.h"
#include "reprokit/support/errors.h"

using namespace reprokit;

TEST(Signature, CompilerDiagnosticsFromDifferentRunsAgree) {
  // Two runs of one compile error: other cache paths, pid-stamped file names, line and column.
  std::string a = normalise_signature(
      "C++ compiler rejected the generated code: /home/u/.cache/reprokit/rk_e01df6ea.29786.0.cpp:107:3: error: "
      "'rk_injected_compile_error_in_a' was not declared in this scope");
  std::string b = normalise_signature(
      "C++ compiler rejected the generated code: /tmp/cache/rk_77aa01.4411.0.cpp:98:5: error: "
      "'rk_injected_compile_error_in_a' was not declared in this scope");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.rfind("error:", 0), 0u) << "the diagnostic's own text leads: " << a;
  EXPECT_EQ(a.find("/tmp"), std::string::npos) << a;
}

TEST(Signature, AddressesValueNamesAndNumbersAreStripped) {
  EXPECT_EQ(normalise_signature("bad access at 0x7ffdeadbeef in node %h.matmul"), normalise_signature("bad access at 0x1234 in node %o"));
  EXPECT_EQ(normalise_signature("took 12.5 s on 8 threads"), normalise_signature("took 3 s on 16 threads"));
  // Inductor's generated modules are named by a hash of their text, which differs between compiles.
  EXPECT_EQ(normalise_signature("RuntimeError: Failed to import /tmp/x/ue/cueageq7vnwrds32pnm4dbmhp43fb6u5mzwopdfxiu25yhdtzkce.py "
                                "SyntaxError: invalid syntax (cueageq7vnwrds32pnm4dbmhp43fb6u5mzwopdfxiu25yhdtzkce.py, line 26)"),
            normalise_signature("RuntimeError: Failed to import /tmp/y/c2/c2jxsid326raur7ypngms6cza6lu7efxwqrjsxzfvaoqqq26z7hy.py "
                                "SyntaxError: invalid syntax (c2jxsid326raur7ypngms6cza6lu7efxwqrjsxzfvaoqqq26z7hy.py, line 26)"));
  EXPECT_NE(normalise_signature("error in model.py"), normalise_signature("error in other.py"));
  EXPECT_EQ(normalise_signature("  spaced \n  out\t text "), "spaced out text");
  // A log coloured for a terminal is the same failure as the plain one, and says so without the codes.
  EXPECT_EQ(normalise_signature("\x1b[1;31m[E:onnxruntime:, sequential_executor.cc:671 ExecuteKernel] MatMul failed\x1b[m"),
            normalise_signature("[E:onnxruntime:, sequential_executor.cc:671 ExecuteKernel] MatMul failed"));
  EXPECT_EQ(normalise_signature("\x1b[1;31mfailed\x1b[m"), "failed");
}

TEST(Signature, DifferentErrorsStayDifferent) {
  EXPECT_NE(normalise_signature("injected runtime error in node %a (mul)"), normalise_signature("injected runtime error in node %a (add)"));
  EXPECT_NE(normalise_signature("error: expected ';'"), normalise_signature("error: unknown type name"));
}

TEST(Signature, IsBounded) {
  std::string long_message(5000, 'x');
  EXPECT_LE(normalise_signature("error: " + long_message).size(), 200u);
}

// Signatures of existing bundles stay valid: the rules give what std::regex gave (these outputs
// were produced by the std::regex version) — numbers with exponents, word boundaries, \v and \f as
// space, paths in quotes and parentheses.
TEST(Signature, SameAsTheStdRegexRulesGave) {
  const std::pair<const char*, const char*> cases[] = {
      {"bad access at 0x7ffdeadbeef in node %h.matmul (x1 12.5e-3 3e 7e+2, a1b 1.2.3 10.)",
       "bad access at <addr> in node %<v> (x1 <n> 3e <n>, a1b <n>.<n> <n>.)"},
      {"  spaced \n  out\t\v text \f\r", "spaced out text"},
      {"injected runtime error in node %a.b_c (mul) at /tmp/x (\"/q/r's\") 0xZZ 0x1f2g",
       "injected runtime error in node %<v> (mul) at <path> (\"<path>'s\") 0xZZ <addr>g"},
      {"shape [2, 3] vs [4,5]: 6 != 20; _7 x7 7x 8_ 9.5.6 -3 +4e5 1e-9",
       "shape [<n>, <n>] vs [<n>,<n>]: <n> != <n>; _7 x7 7x 8_ <n>.<n> -<n> +<n> <n>"},
      {"cuda: /usr/local/cuda/include/x.h(12): error: identifier \"__x\" is undefined\nsecond line /a/b 42",
       "error: identifier \"__x\" is undefined"},
      {"paths: a/b/c //x/ /y:/z 'p/q' (m/n) /\xc3\xa9/\xc3\xbc 3\xc3\xa9",
       "paths: a<path> <path> <path>:<path> 'p<path>' (m<path>) <path> <n>\xc3\xa9"},
  };
  for (auto& [message, signature] : cases) EXPECT_EQ(normalise_signature(message), signature) << message;
}

// A compiler's message has no size limit: std::regex recursed once per character of a path and
// died of SIGSEGV on 100 KB. Linear now, in time and stack.
TEST(Signature, HugeMessagesAreLinear) {
  std::string path, numbers;
  for (int i = 0; i < 500000; ++i) path += "/a";
  for (int i = 0; i < 500000; ++i) numbers += "1.5e3 ";
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(normalise_signature("error: cannot open " + path + ": no such file"), "error: cannot open <path>: no such file");
  EXPECT_EQ(normalise_signature("error: " + numbers).substr(0, 17), "error: <n> <n> <n");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10);
}

TEST(SameFailure, KindSignatureSignalAndLevelThreeBundles) {
  Failure rt{FailureKind::runtime_error, "m1", "sig", 0};
  Failure rt_same{FailureKind::runtime_error, "other message", "sig", 0};
  Failure rt_other{FailureKind::runtime_error, "m", "other sig", 0};
  Failure ce{FailureKind::compile_error, "m", "sig", 0};
  EXPECT_TRUE(same_failure(rt, rt_same));
  EXPECT_FALSE(same_failure(rt, rt_other));
  EXPECT_FALSE(same_failure(rt, ce)) << "the kind must match";
  EXPECT_FALSE(same_failure(rt, Failure{})) << "no failure never reproduces";

  Failure segv{FailureKind::crash, "killed by signal 11", "SIGSEGV", 11};
  EXPECT_TRUE(same_failure(segv, Failure{FailureKind::crash, "other text", "x", 11}));
  EXPECT_FALSE(same_failure(segv, Failure{FailureKind::crash, "killed by signal 6", "SIGABRT", 6}));

  Failure hang{FailureKind::timeout, "did not finish within 2s", "timeout", 0};
  EXPECT_TRUE(same_failure(hang, Failure{FailureKind::timeout, "did not finish within 30s", "different", 0}));

  // A level-3 bundle was written before compiling: any failure is the one it was waiting for.
  EXPECT_TRUE(same_failure(Failure{}, segv));
  EXPECT_FALSE(same_failure(Failure{}, Failure{}));
}

TEST(FailureJson, RoundTripAndErrors) {
  Failure f{FailureKind::crash, "killed", "SIGSEGV", 11};
  Failure g = Failure::from_json(f.to_json());
  EXPECT_EQ(g.kind, f.kind);
  EXPECT_EQ(g.message, f.message);
  EXPECT_EQ(g.signature, f.signature);
  EXPECT_EQ(g.signal, 11);
  EXPECT_FALSE(Failure::from_json(nlohmann::json::object()).failed());
  try {
    Failure::from_json({{"kind", "meltdown"}});
    FAIL() << "an unknown kind must be rejected";
  } catch (const UserError& e) { EXPECT_NE(std::string(e.what()).find("unknown failure kind 'meltdown'"), std::string::npos) << e.what(); }
  EXPECT_THROW(Failure::from_json(nlohmann::json::array()), UserError);
  EXPECT_THROW(Failure::from_json({{"kind", 3}}), UserError);
}

// Regression: under LANG=C.UTF-8 GCC quotes with ‘ ’; cutting the signature at byte 200 split a
// character and the manifest write threw json type_error.316, losing the bundle.
TEST(Signature, CutNeverSplitsAUtf8CharacterAndRecordsStayValidJson) {
  std::string message = "error: ";
  for (int i = 0; i < 120; ++i) message += "\xe2\x80\x98x\xe2\x80\x99";  // ‘x’
  std::string sig = normalise_signature(message);
  EXPECT_LE(sig.size(), 200u);
  Failure f{FailureKind::compile_error, message + "\xff\xfe (invalid bytes too)", sig, 0};
  std::string dumped;
  EXPECT_NO_THROW(dumped = f.to_json().dump());
  EXPECT_EQ(Failure::from_json(nlohmann::json::parse(dumped)).signature, sig);
}
