// One way to run reprokit in a child process and judge what happened there. Every child that
// classifies a failure (minify workers, bisect steps, repro reruns) prints its verdict as one line
// "VERDICT <failure json>"; the parent reads it with parse_verdict, and when the child gave none
// (it crashed, hung or exited early), classify_end says what its end means.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "reprokit/harness/failure.h"
#include "reprokit/process/subprocess.h"

namespace reprokit {

// The verdict line a child prints (no newline).
std::string verdict_line(const Failure& f);
// The failure of the last verdict line in `out`, or nullopt when there is none. UserError when
// the line is malformed.
std::optional<Failure> parse_verdict(std::string_view out);

// What a child's end means when it printed no verdict: a timeout is a hang, a signal a crash,
// exit status 2 bad input (UserError with the child's message), anything else a runtime error.
// `what` names the child in messages ("the worker", "the repro").
Failure classify_end(const ProcessResult& r, std::string_view what, double timeout_s);

// The verdict of a finished child: its verdict line, else classify_end.
Failure classify_child(const ProcessResult& r, std::string_view what, double timeout_s);

// The reprokit binary children run: $REPROKIT_EXE, else this process when it is reprokit, else
// "reprokit" (looked up in PATH).
std::string self_executable();

}  // namespace reprokit
