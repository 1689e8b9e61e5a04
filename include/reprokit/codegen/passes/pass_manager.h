// Compiler passes: a registry (one table entry per pass) and the pass manager that runs them in
// order, counting rewrites and honouring per-pass rewrite limits and pass injections.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "reprokit/codegen/compile_options.h"
#include "reprokit/ir/graph.h"

namespace reprokit {

// Handed to each pass: asks permission for every rewrite so limits and injections apply.
class RewriteBudget {
 public:
  RewriteBudget(std::string pass, int64_t limit, int64_t inject_at) : pass_(std::move(pass)), limit_(limit), inject_at_(inject_at) {}
  // True when the next rewrite may be applied (counts it). False once the limit is reached.
  bool allow();
  // True when the rewrite just allowed is the injected one (it must then produce a wrong value).
  bool inject_now() const { return inject_at_ > 0 && applied_ == inject_at_; }
  int64_t applied() const { return applied_; }
  int64_t wanted() const { return wanted_; }  // rewrites the pass would have applied
  const std::string& pass() const { return pass_; }

 private:
  std::string pass_;
  int64_t limit_, inject_at_, applied_ = 0, wanted_ = 0;
};

// Fusion decisions are carried on nodes as the integer attribute "group" set by the fusion
// passes (nodes with the same group form one kernel); the other passes rewrite the graph.
struct PassInfo {
  std::string name;                                 // kebab-case
  std::string description;                          // one line, for `reprokit passes`
  std::function<bool(Graph&, RewriteBudget&)> run;  // returns true when it changed the graph
};

const std::vector<PassInfo>& pass_table();  // in pipeline order
const PassInfo* find_pass(const std::string& name);

struct PassRecord {
  std::string name;
  int64_t rewrites = 0;  // applied
  int64_t wanted = 0;    // would have applied without a limit
  double ms = 0;
  bool changed = false;
};

// Runs the enabled passes of options on g, verifying after each one.
std::vector<PassRecord> run_passes(Graph& g, const CompileOptions& options);

}  // namespace reprokit
