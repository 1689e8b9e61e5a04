// Failure records: the normalised signature (what varies between runs of one bug is stripped,
// what tells bugs apart is kept), the "same bug" rule the minifier and `reprokit repro` apply, and
// the JSON form with its errors.
#include <gtest/gtest.h>

#include "reprokit/harness/failure.h"
#include "reprokit/ir/errors.h"

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
  EXPECT_EQ(normalise_signature("  spaced \n  out\t text "), "spaced out text");
}

TEST(Signature, DifferentErrorsStayDifferent) {
  EXPECT_NE(normalise_signature("injected runtime error in node %a (mul)"), normalise_signature("injected runtime error in node %a (add)"));
  EXPECT_NE(normalise_signature("error: expected ';'"), normalise_signature("error: unknown type name"));
}

TEST(Signature, IsBounded) {
  std::string long_message(5000, 'x');
  EXPECT_LE(normalise_signature("error: " + long_message).size(), 200u);
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
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown failure kind 'meltdown'"), std::string::npos) << e.what();
  }
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
