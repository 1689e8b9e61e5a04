// Splitting a check command into argv words without a shell (support/command_words.h).
#include <gtest/gtest.h>

#include "reprokit/support/errors.h"
#include "reprokit/support/command_words.h"

using namespace reprokit;
using Words = std::vector<std::string>;

TEST(CommandWords, SplitsOnBlanksAndHonoursQuotesAndBackslashes) {
  EXPECT_EQ(split_command_words("python3  check.py {}", "--check"), (Words{"python3", "check.py", "{}"}));
  EXPECT_EQ(split_command_words("sh -c 'grep -q x \"$1\" | wc' sh {}", "--check"), (Words{"sh", "-c", "grep -q x \"$1\" | wc", "sh", "{}"}));
  EXPECT_EQ(split_command_words("a \"b c\" d\\ e \"q\\\"x\" ''", "--check"), (Words{"a", "b c", "d e", "q\"x", ""}));
  EXPECT_EQ(split_command_words("a\"b\"'c'", "--check"), (Words{"abc"}));
}

TEST(CommandWords, RefusesWhatOnlyAShellUnderstands) {
  for (const char* bad : {"a | b", "a; b", "a && b", "a > out", "a < in", "echo `x`", "echo $HOME", "(a)"}) {
    try {
      split_command_words(bad, "--check");
      ADD_FAILURE() << bad;
    } catch (const UserError& e) { EXPECT_NE(std::string(e.what()).find("sh -c"), std::string::npos) << e.what(); }
  }
  EXPECT_THROW(split_command_words("a 'b", "--check"), UserError);
  EXPECT_THROW(split_command_words("a \"b", "--check"), UserError);
  EXPECT_THROW(split_command_words("   ", "--check"), UserError);
  // The candidate variable is allowed unquoted: reprokit substitutes it.
  EXPECT_EQ(split_command_words("check $REPRO_CANDIDATE ${REPRO_CANDIDATE}", "--check"), (Words{"check", "$REPRO_CANDIDATE", "${REPRO_CANDIDATE}"}));
}

TEST(CommandWords, SubstitutesTheCandidateEverywhereInAWord) {
  EXPECT_EQ(substitute_candidate({"run", "{}", "--model={}", "$REPRO_CANDIDATE", "x${REPRO_CANDIDATE}y", "{}{}"}, "/w/c1/model.rk"),
            (Words{"run", "/w/c1/model.rk", "--model=/w/c1/model.rk", "/w/c1/model.rk", "x/w/c1/model.rky", "/w/c1/model.rk/w/c1/model.rk"}));
  // A candidate path holding the pattern is not substituted again.
  EXPECT_EQ(substitute_candidate({"{}"}, "/a{}b"), (Words{"/a{}b"}));
}

// $REPRO_CANDIDATE_DIR is another variable, not the candidate followed by "_DIR".
TEST(CommandWords, TheCandidateDirectoryVariableIsNotTheCandidate) {
  EXPECT_EQ(substitute_candidate({"$REPRO_CANDIDATE_DIR", "$REPRO_CANDIDATEx", "${REPRO_CANDIDATE}_DIR"}, "/w/m.rk"),
            (Words{"$REPRO_CANDIDATE_DIR", "$REPRO_CANDIDATEx", "/w/m.rk_DIR"}));
  EXPECT_THROW(split_command_words("ls $REPRO_CANDIDATE_DIR", "--check"), UserError);  // unquoted: a shell's variable
}

// A path with shell syntax in it (a model named m$(touch X).rk gives an output directory of that
// name) is never put inside a longer word — a `sh -c` script would run it; a word of its own is fine.
TEST(CommandWords, APathAShellWouldInterpretIsNeverEmbedded) {
  const std::string hostile = "/w/m$(touch X).reduced/c1/model.rk";
  EXPECT_EQ(substitute_candidate({"sh", "-c", "check \"$1\"", "sh", "{}"}, hostile), (Words{"sh", "-c", "check \"$1\"", "sh", hostile}));
  EXPECT_THROW(substitute_candidate({"sh", "-c", "check {}"}, hostile), UserError);
  EXPECT_THROW(substitute_candidate({"sh", "-c", "check $REPRO_CANDIDATE"}, hostile), UserError);
  EXPECT_EQ(substitute_candidate({"sh", "-c", "check {}"}, "/w/ok-1.reduced/c1/model.rk"), (Words{"sh", "-c", "check /w/ok-1.reduced/c1/model.rk"}));
}

// ssh-like launchers join the words into one string for a remote shell: each word is quoted so the
// remote side sees the words given locally; other launchers pass argv on and get them as they are.
TEST(CommandWords, WordsUnderAReparsingLauncherAreQuotedForItsShell) {
  EXPECT_TRUE(launcher_reparses({"ssh", "-o", "BatchMode=yes", "gpu-07"}));
  EXPECT_TRUE(launcher_reparses({"/usr/bin/ssh", "gpu-07"}));
  EXPECT_FALSE(launcher_reparses({"srun", "-N1"}));
  EXPECT_FALSE(launcher_reparses({"sshfs-helper"}));
  EXPECT_FALSE(launcher_reparses({}));
  EXPECT_EQ(argv_under_launcher({"ssh", "h"}, {"/t/check.sh", "/w/n$(touch X) it's.rk", ""}),
            (Words{"ssh", "h", "/t/check.sh", "'/w/n$(touch X) it'\\''s.rk'", "''"}));
  EXPECT_EQ(argv_under_launcher({"srun", "-n1"}, {"check", "a b$c"}), (Words{"srun", "-n1", "check", "a b$c"}));
  EXPECT_EQ(argv_under_launcher({}, {"check", "a b$c"}), (Words{"check", "a b$c"}));
}

// A path reprokit hands a launcher it cannot tell about is refused when a shell would act on it.
TEST(CommandWords, ShellActivePathsAreRefusedUnderAnUnknownLauncher) {
  for (const char* bad : {"/w/n$(touch X)/model.rk", "/w/a`b`", "/w/a;b", "/w/a|b", "/w/a'b", "/w/a\"b", "/w/a\\b", "/w/a\nb", "/w/a&b", "/w/a>b"}) {
    try {
      refuse_path_under_launcher({"fakessh", "host"}, bad, "the work directory");
      ADD_FAILURE() << bad;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("re-parses"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("the work directory"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(refuse_path_under_launcher({"fakessh", "host"}, "/w/My Models/c1/model.rk", "x"), UserError);  // split in two there
  EXPECT_NO_THROW(refuse_path_under_launcher({"srun", "-n1"}, "/w/My Models/n$(x)/model.rk", "x"));           // execs its words as given
  EXPECT_NO_THROW(refuse_path_under_launcher({"/usr/bin/nice", "-n", "5"}, "/w/My Models/model.rk", "x"));
  EXPECT_NO_THROW(refuse_path_under_launcher({}, "/w/n$(touch X)", "x"));            // no launcher, no shell
  EXPECT_NO_THROW(refuse_path_under_launcher({"ssh", "h"}, "/w/n$(touch X)", "x"));  // quoted instead
}
