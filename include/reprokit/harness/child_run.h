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

struct ReproSpec;
// A repro file rerun in fresh processes (`reprokit repro --in-process PATH`, its verdict line read
// back), as `reprokit repro` and the minifier's final check do: up to spec.attempts runs, until
// one fails as spec.expected. `runs` counts the runs made; `got` is the last one's failure.
struct Rerun {
  bool reproduced = false;
  Failure got;
  int runs = 0;
};
Rerun rerun_repro(const std::string& path, const ReproSpec& spec, double timeout_s);
// The limit of one rerun when none is given: a hang's own threshold (10 s when unrecorded), else
// twice the recorded run + 5 s (300 s when unrecorded).
double rerun_timeout(const ReproSpec& spec);

}  // namespace reprokit
