// Child runs and their verdicts (see child_run.h).
#include "reprokit/harness/child_run.h"

#include <algorithm>

#include "reprokit/harness/repro_spec.h"

#include <fmt/format.h>

#include <cstring>

#include "reprokit/support/errors.h"
#include "reprokit/ir/names.h"
#include "reprokit/process/child_end.h"
#include "reprokit/process/self_executable.h"

namespace reprokit {

namespace {
constexpr std::string_view kVerdictTag = "VERDICT ";

std::string first_line(const std::string& s) { return utf8_safe(s.substr(0, s.find('\n')), 500); }
}  // namespace

std::string verdict_line(const Failure& f) { return std::string(kVerdictTag) + f.to_json().dump(); }

std::optional<Failure> parse_verdict(std::string_view out) {
  size_t pos = std::string_view::npos;
  for (size_t p = out.find(kVerdictTag); p != std::string_view::npos; p = out.find(kVerdictTag, p + 1))
    if (p == 0 || out[p - 1] == '\n') pos = p;
  if (pos == std::string_view::npos) return std::nullopt;
  std::string_view line = out.substr(pos + kVerdictTag.size());
  line = line.substr(0, line.find('\n'));
  try {
    return Failure::from_json(nlohmann::json::parse(line));
  } catch (const nlohmann::json::exception& e) { throw UserError(fmt::format("malformed verdict from a child process: {}", e.what())); }
}

Failure classify_end(const ProcessResult& r, std::string_view what, double timeout_s) {
  const ChildEnd end = child_end(r);
  switch (end.how) {
    case ChildEnd::How::timed_out:
      return Failure{FailureKind::timeout, fmt::format("{} gave no answer within {}s (a hang)", what, timeout_s), "timeout", 0};
    case ChildEnd::How::signalled:
      return Failure{FailureKind::crash, fmt::format("{} was killed by signal {} ({})", what, end.signal, strsignal(end.signal)),
                     strsignal(end.signal), end.signal};
    case ChildEnd::How::exited: break;
  }
  if (end.refused()) throw UserError(fmt::format("{} could not run: {}", what, first_line(r.err)));
  return Failure{FailureKind::runtime_error, fmt::format("{} exited with status {} without a verdict: {}", what, end.exit_code, first_line(r.err)),
                 normalise_signature(r.err), 0};
}

Failure classify_child(const ProcessResult& r, std::string_view what, double timeout_s) {
  if (child_end(r).how == ChildEnd::How::exited)
    if (auto v = parse_verdict(r.out)) return *v;
  return classify_end(r, what, timeout_s);
}

Rerun rerun_repro(const std::string& path, const ReproSpec& spec, double timeout_s) {
  Rerun r;
  for (int attempt = 1; attempt <= std::max(1, spec.attempts); ++attempt) {  // a flaky failure may need a few runs
    ProcessSpec child;
    child.argv = {self_executable(), "repro", "--in-process", path};
    child.timeout_s = timeout_s;
    r.got = classify_child(run_process(child), "the repro", timeout_s);
    r.runs = attempt;
    if ((r.reproduced = same_failure(spec.expected, r.got))) break;
  }
  return r;
}

double rerun_timeout(const ReproSpec& spec) {
  if (spec.expected.kind == FailureKind::timeout) return spec.timeout_s > 0 ? spec.timeout_s : 10;
  return spec.timeout_s > 0 ? spec.timeout_s * 2 + 5 : 300;
}

}  // namespace reprokit
