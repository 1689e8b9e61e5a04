// escape_controls: what a terminal would act on, written as escapes; all other text kept.
#include <gtest/gtest.h>

#include <string>

#include "reprokit/support/escape_controls.h"

using reprokit::escape_controls;
using reprokit::escape_controls_keep_newlines;

TEST(EscapeControls, PlainTextAndUtf8AreKept) {
  EXPECT_EQ(escape_controls("findings/g1-cpp-forward"), "findings/g1-cpp-forward");
  EXPECT_EQ(escape_controls("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x90\x9b"), "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x90\x9b");
  EXPECT_EQ(escape_controls("a\\x1b"), "a\\x1b");  // a backslash is not a control character
  EXPECT_EQ(escape_controls(""), "");
}

TEST(EscapeControls, C0ControlsAndDelAreEscaped) {
  EXPECT_EQ(escape_controls("\x1b]0;pwned\x07"), "\\e]0;pwned\\x07");
  EXPECT_EQ(escape_controls("\x1b[2J\x1b[H"), "\\e[2J\\e[H");
  EXPECT_EQ(escape_controls("a\nreprokit triage: all clear"), "a\\nreprokit triage: all clear");
  EXPECT_EQ(escape_controls("\t\r\x7f"), "\\t\\r\\x7f");
  EXPECT_EQ(escape_controls(std::string("a\0b", 3)), "a\\x00b");
}

TEST(EscapeControls, C1ControlsAndBytesOutsideUtf8AreEscaped) {
  EXPECT_EQ(escape_controls("\xc2\x9b"
                            "2J"),
            "\\u009b2J");                             // CSI in UTF-8
  EXPECT_EQ(escape_controls("\xc2\x85"), "\\u0085");  // NEL
  EXPECT_EQ(escape_controls("\x9b"
                            "2J"),
            "\\x9b2J");  // CSI to an 8-bit terminal
  EXPECT_EQ(escape_controls("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(escape_controls("\xc3"), "\\xc3");                    // cut short
  EXPECT_EQ(escape_controls("\xe0\x82\x9b"), "\\xe0\\x82\\x9b");  // overlong CSI
  EXPECT_EQ(escape_controls("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(escape_controls("\xc2\xa0"), "\xc2\xa0");             // U+00A0 is no control
}

TEST(EscapeControls, KeepNewlinesKeepsOnlyNewlines) {
  EXPECT_EQ(escape_controls_keep_newlines("line one\n  line two\x1b[2J\r"), "line one\n  line two\\e[2J\\r");
}
