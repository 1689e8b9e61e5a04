// Compiler bisection: which stage, then which pass, then which rewrite of that pass introduces a
// bundle's failure. Every try runs in a child process; nothing is stored outside the bundle.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reprokit/harness/failure.h"
#include "reprokit/harness/repro_spec.h"

namespace reprokit {

// One try: the bundle's spec with these changes (backend, passes on/off, one pass disabled, a
// rewrite limit). Serialised into the hidden `reprokit bisect-step` command line.
struct BisectStep {
  std::string backend;  // a row of the backend table
  bool run_passes = true;
  std::string disabled_pass;  // empty: none
  std::string limited_pass;   // empty: none
  int64_t limit = -1;
  int train = -1;  // -1: as the bundle; 0: forward only; 1: with autodiff/partition
  // Set over the bundle's own (a compiler's optimisation level, the optimisers it turns off).
  std::map<std::string, std::string> backend_options;
  nlohmann::json to_json() const;
  static BisectStep from_json(const nlohmann::json& j);
  ReproSpec apply(ReproSpec spec) const;
};

struct BisectOptions {
  std::string bundle_dir;
  std::string reprokit_exe;
  double timeout_s = 0;  // per try; 0: from the bundle
};

// Prints the search as it goes; writes bisect.json (or bisect-N.json) into the bundle. Returns
// the exit status: 0 when a culprit (stage, pass, rewrite) was found, 1 when the bundle does not
// fail.
int bisect_bundle(const BisectOptions& options);

// The child side of one try: runs the step on a bundle directory, or on a repro file (repro.rk
// with its spec), and prints "VERDICT <failure json>".
int run_bisect_step(const std::string& bundle_or_repro, const std::string& step_json);

// One try in a child (`reprokit bisect-step`), limited to timeout_s: how it failed, if it did.
// `argv` gets the command line, for a rerun.
Failure run_bisect_try(const std::string& reprokit_exe, const std::string& bundle_or_repro, const BisectStep& step, double timeout_s,
                       std::vector<std::string>* argv = nullptr);

}  // namespace reprokit
