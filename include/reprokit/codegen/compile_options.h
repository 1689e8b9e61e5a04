// Options of the inner compiler (passes, backend, fault injection). Plain data: the harness saves
// them in bundles and the minifier and bisector replay them.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "reprokit/codegen/failure_kind.h"
#include "reprokit/ir/op.h"

namespace reprokit {

// --inject OP:KIND. KIND: compile_error runtime_error accuracy accuracy=REL accuracy_one=K crash
// hang flaky.
struct FaultInjection {
  Op op = Op::input;
  FaultKind kind = FaultKind::runtime_error;
  double amount = 0;  // the graded kinds' size (see NodeFault)
  bool operator==(const FaultInjection&) const = default;
  std::string str() const;  // "OP:KIND" or "OP:KIND=AMOUNT"
};
// --inject-pass PASS:N: the Nth (1-based) rewrite of PASS produces a wrong result.
struct PassInjection {
  std::string pass;
  int64_t n = 1;
  bool operator==(const PassInjection&) const = default;
};

struct CompileOptions {
  std::string backend = "cpp";  // a name in the backend table (backend.h)
  std::vector<FaultInjection> injections;
  std::vector<PassInjection> pass_injections;
  // Injections resolved to node names (name -> kind). The stack fills this before decomposing,
  // so an injection on a composite op (gelu) follows the node that computes its value.
  std::map<std::string, NodeFault> injection_nodes;
  std::map<std::string, int64_t> pass_limits;  // pass -> apply only the first N rewrites
  std::set<std::string> disabled_passes;
  bool run_passes = true;  // false: lowering + codegen with no optimisation pass
  std::string cache_dir;   // empty: $REPRO_CACHE_DIR or ~/.cache/reprokit
  bool verbose = false;    // log each pass ("(unchanged)" when it did nothing)
  // Options of a compiler that is not reprokit's, by its own names (inductor: torch._inductor.config
  // options, "cpp.simdlen"), each value a JSON number, string, boolean or null. Saved in bundles.
  std::map<std::string, std::string> backend_options;
  // Inputs (by name) whose values every run of the compiled graph passes unchanged, in the same
  // tensor: a model's weights, as ONNX Runtime and OpenVINO take initializers. The cpp backend
  // keeps what it derives from them (a GEMM's packed panels) from one run to the next, and derives
  // it again when a run passes another tensor; a tensor written in place between runs is not seen.
  // Set only for timed warm runs (the harness and its repros never set it); not saved in bundles.
  std::set<std::string> frozen_inputs;
};

// Parses "OP:KIND" / "PASS:N"; throws UserError with the offending text.
FaultInjection parse_fault_injection(const std::string& spec);
PassInjection parse_pass_injection(const std::string& spec);
// Parses KEY=VALUE (--backend-option): KEY a dotted name, VALUE a JSON number, string, boolean or
// null (a bare word is taken as a string); throws UserError with the offending text.
std::pair<std::string, std::string> parse_backend_option(const std::string& spec);
// Checks one backend option read from a file: the same rules as parse_backend_option.
void check_backend_option(const std::string& key, const std::string& json_value);
// Refuses (UserError) options that plant faults (--inject, --inject-pass) for a backend whose
// compiler is not reprokit's and can plant none: `compiler` is its name in the message.
void refuse_fault_injections(const CompileOptions& options, std::string_view compiler);
// The string a backend option holds ("" when it is not set); UserError naming the option when it
// holds a number, boolean or null.
std::string backend_option_string(const std::map<std::string, std::string>& backend_options, std::string_view key);
// The same for an option whose value must be one of `choices` ("" when it is not set); UserError
// naming the choices when it is another.
std::string backend_option_choice(const std::map<std::string, std::string>& backend_options, std::string_view key,
                                  std::span<const std::string_view> choices);
// The items of a comma-separated list, empty ones left out ("a,,b," -> a, b).
std::vector<std::string> split_commas(std::string_view list);
// Adds the injections of REPRO_INJECT / REPRO_INJECT_PASS (comma-separated OP:KIND / PASS:N).
void add_injections_from_env(CompileOptions& options);
// Reads "pass_limits" as a file holds it (a bundle's manifest, a minifier's candidate): an object
// of pass name -> rewrite limit, each an integer in 0..2^63-1. UserError naming the pass and the
// value otherwise: 2^64 or 1e30 is out of range, -1 negative, 2.5 no integer (never wrapped or
// truncated into another limit). Pass names are the caller's to check.
std::map<std::string, int64_t> pass_limits_from_json(const nlohmann::json& limits);

}  // namespace reprokit
