// Parsing of --inject OP:KIND, --inject-pass PASS:N and --backend-option KEY=VALUE.
#include "reprokit/codegen/compile_options.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "reprokit/codegen/passes/pass_manager.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/names.h"

namespace reprokit {

std::string FaultInjection::str() const { return fmt::format("{}:{}", op_name(op), NodeFault(kind, amount).str()); }

FaultInjection parse_fault_injection(const std::string& spec) {
  auto colon = spec.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size())
    throw UserError(fmt::format("bad injection '{}': expected OP:KIND, e.g. gelu:accuracy", printable(spec)));
  std::string op = spec.substr(0, colon), kind = spec.substr(colon + 1);
  auto o = parse_op(op);
  if (!o) throw UserError(fmt::format("bad injection '{}': unknown op '{}'", printable(spec), printable(op)));
  std::string why;
  auto k = parse_node_fault(kind, why);
  if (!k && why == "unknown kind")
    throw UserError(
        fmt::format("bad injection '{}': unknown kind '{}' (expected compile_error, runtime_error, accuracy, accuracy=REL, "
                    "accuracy_one=K, crash, hang or flaky)",
                    printable(spec), printable(kind)));
  if (!k) throw UserError(fmt::format("bad injection '{}': {}", printable(spec), why));
  return {*o, k->kind, k->amount};
}

std::vector<std::string> split_commas(std::string_view list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    if (comma > start) out.emplace_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// An environment variable's value, "" when it is unset.
static std::string_view env_value(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

void add_injections_from_env(CompileOptions& options) {
  for (auto& spec : split_commas(env_value("REPRO_INJECT"))) options.injections.push_back(parse_fault_injection(spec));
  for (auto& spec : split_commas(env_value("REPRO_INJECT_PASS"))) options.pass_injections.push_back(parse_pass_injection(spec));
}

PassInjection parse_pass_injection(const std::string& spec) {
  auto colon = spec.find(':');
  if (colon == std::string::npos) throw UserError(fmt::format("bad pass injection '{}': expected PASS:N, e.g. cse:1", printable(spec)));
  PassInjection p{spec.substr(0, colon), 0};
  if (!find_pass(p.pass))
    throw UserError(fmt::format("bad pass injection '{}': unknown pass '{}' (`reprokit passes` lists them)", printable(spec), printable(p.pass)));
  try {
    size_t used = 0;
    p.n = std::stoll(spec.substr(colon + 1), &used);
    if (used != spec.size() - colon - 1 || p.n < 1) throw std::invalid_argument("");
  } catch (...) { throw UserError(fmt::format("bad pass injection '{}': N must be a positive integer", printable(spec))); }
  return p;
}

void check_backend_option(const std::string& key, const std::string& json_value) {
  check_name(key, "backend option", "backend_options");
  nlohmann::json v;
  try {
    v = nlohmann::json::parse(json_value);
  } catch (const nlohmann::json::exception&) {
    throw UserError(fmt::format("backend option {}: '{}' is not a JSON value", key, printable(json_value)));
  }
  if (!(v.is_number() || v.is_string() || v.is_boolean() || v.is_null()))
    throw UserError(fmt::format("backend option {}: '{}' is not a number, string, boolean or null", key, printable(json_value)));
}

void refuse_fault_injections(const CompileOptions& options, std::string_view compiler) {
  if (!options.injections.empty() || !options.injection_nodes.empty() || !options.pass_injections.empty())
    throw UserError(fmt::format("--inject and --inject-pass plant faults in reprokit's own code generators (cpp, cuda), not in {}", compiler));
}

std::string backend_option_string(const std::map<std::string, std::string>& backend_options, std::string_view key) {
  auto it = backend_options.find(std::string(key));
  if (it == backend_options.end()) return "";
  nlohmann::json v = nlohmann::json::parse(it->second, nullptr, false);
  if (!v.is_string()) throw UserError(fmt::format("backend option {}: expected a string, got {}", key, printable(it->second)));
  return v.get<std::string>();
}

std::string backend_option_choice(const std::map<std::string, std::string>& backend_options, std::string_view key,
                                  std::span<const std::string_view> choices) {
  if (!backend_options.count(std::string(key))) return "";
  std::string value = backend_option_string(backend_options, key);
  if (std::find(choices.begin(), choices.end(), value) != choices.end()) return value;
  const std::string listed =
      choices.size() == 2 ? fmt::format("{} or {}", choices[0], choices[1]) : fmt::format("one of {}", fmt::join(choices, ", "));
  throw UserError(fmt::format("backend option {}: '{}' is not {}", key, printable(value), listed));
}

std::pair<std::string, std::string> parse_backend_option(const std::string& spec) {
  const auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UserError(fmt::format("bad backend option '{}': expected KEY=VALUE, e.g. cpp.simdlen=8", printable(spec)));
  std::string key = spec.substr(0, eq), value = spec.substr(eq + 1);
  // A bare word (not a number, true, false, null or a quoted string) is a string.
  if (!nlohmann::json::accept(value)) value = nlohmann::json(value).dump();
  check_backend_option(key, value);
  return {key, value};
}

namespace {

// One rewrite limit: an integer in 0..INT64_MAX. nlohmann reads 2^64 (past uint64) as a double,
// 2^63..2^64-1 as unsigned: neither may wrap into a negative or another limit.
int64_t pass_limit(const std::string& pass, const nlohmann::json& v) {
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  auto bad = [&](const std::string& value, const char* why) {
    return UserError(
        fmt::format("pass_limits: the rewrite limit of {} is {}, {} (a limit is an integer in 0..{})", printable(pass), value, why, kMax));
  };
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > kMax) throw bad(std::to_string(v.get<uint64_t>()), "out of range");
    return static_cast<int64_t>(v.get<uint64_t>());
  }
  if (v.is_number_integer()) {
    if (v.get<int64_t>() < 0) throw bad(std::to_string(v.get<int64_t>()), "negative");
    return v.get<int64_t>();
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) >= 9.2e18) throw bad(fmt::format("{:.0f}", d), "out of range");
    throw bad(v.dump(), "not an integer");
  }
  throw bad(v.dump(), "not a number");
}

}  // namespace

std::map<std::string, int64_t> pass_limits_from_json(const nlohmann::json& limits) {
  if (!limits.is_object()) throw UserError("pass_limits: not an object of pass name -> rewrite limit");
  std::map<std::string, int64_t> out;
  for (const auto& [pass, v] : limits.items()) out[pass] = pass_limit(pass, v);
  return out;
}

}  // namespace reprokit
