// Child runs and their verdicts (see child_run.h).
#include "reprokit/harness/child_run.h"

#include <algorithm>

#include "reprokit/harness/repro_spec.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "reprokit/support/errors.h"
#include "reprokit/ir/names.h"

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
  } catch (const nlohmann::json::exception& e) {
    throw UserError(fmt::format("malformed verdict from a child process: {}", e.what()));
  }
}

Failure classify_end(const ProcessResult& r, std::string_view what, double timeout_s) {
  if (r.timed_out) return Failure{FailureKind::timeout, fmt::format("{} gave no answer within {}s (a hang)", what, timeout_s), "timeout", 0};
  if (r.signal)
    return Failure{FailureKind::crash, fmt::format("{} was killed by signal {} ({})", what, r.signal, strsignal(r.signal)), strsignal(r.signal),
                   r.signal};
  if (r.exit_code == 2) throw UserError(fmt::format("{} could not run: {}", what, first_line(r.err)));
  return Failure{FailureKind::runtime_error, fmt::format("{} exited with status {} without a verdict: {}", what, r.exit_code, first_line(r.err)),
                 normalise_signature(r.err), 0};
}

Failure classify_child(const ProcessResult& r, std::string_view what, double timeout_s) {
  if (!r.timed_out && !r.signal)
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

std::string self_executable() {
  if (const char* e = std::getenv("REPROKIT_EXE"); e && *e) return e;
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && p.filename() == "reprokit") return p.string();
  return "reprokit";
}

}  // namespace reprokit
