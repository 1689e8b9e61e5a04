// Parsing of --inject OP:KIND and --inject-pass PASS:N.
#include "reprokit/codegen/compile_options.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "reprokit/codegen/pass_manager.h"
#include "reprokit/ir/errors.h"
#include "reprokit/ir/op_registry.h"

namespace reprokit {

const std::vector<std::string>& fault_kinds() {
  static const std::vector<std::string> kinds = {"compile_error", "runtime_error", "accuracy", "crash", "hang", "flaky"};
  return kinds;
}

FaultInjection parse_fault_injection(const std::string& spec) {
  auto colon = spec.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size())
    throw UserError(fmt::format("bad injection '{}': expected OP:KIND, e.g. gelu:accuracy", spec));
  FaultInjection f{spec.substr(0, colon), spec.substr(colon + 1)};
  if (!find_op(f.op)) throw UserError(fmt::format("bad injection '{}': unknown op '{}'", spec, f.op));
  if (std::find(fault_kinds().begin(), fault_kinds().end(), f.kind) == fault_kinds().end())
    throw UserError(fmt::format("bad injection '{}': unknown kind '{}' (expected compile_error, runtime_error, accuracy, crash, hang or flaky)", spec, f.kind));
  return f;
}

static std::vector<std::string> split_commas(const char* v) {
  std::vector<std::string> out;
  std::string item;
  for (const char* p = v ? v : ""; ; ++p) {
    if (*p == ',' || *p == 0) {
      if (!item.empty()) out.push_back(item);
      item.clear();
      if (!*p) break;
    } else {
      item += *p;
    }
  }
  return out;
}

void add_injections_from_env(CompileOptions& options) {
  for (auto& spec : split_commas(std::getenv("REPRO_INJECT"))) options.injections.push_back(parse_fault_injection(spec));
  for (auto& spec : split_commas(std::getenv("REPRO_INJECT_PASS"))) options.pass_injections.push_back(parse_pass_injection(spec));
}

PassInjection parse_pass_injection(const std::string& spec) {
  auto colon = spec.find(':');
  if (colon == std::string::npos) throw UserError(fmt::format("bad pass injection '{}': expected PASS:N, e.g. cse:1", spec));
  PassInjection p{spec.substr(0, colon), 0};
  if (!find_pass(p.pass)) throw UserError(fmt::format("bad pass injection '{}': unknown pass '{}' (`reprokit passes` lists them)", spec, p.pass));
  try {
    size_t used = 0;
    p.n = std::stoll(spec.substr(colon + 1), &used);
    if (used != spec.size() - colon - 1 || p.n < 1) throw std::invalid_argument("");
  } catch (...) {
    throw UserError(fmt::format("bad pass injection '{}': N must be a positive integer", spec));
  }
  return p;
}

}  // namespace reprokit
