// Compiler bisection (see bisect.h).
#include "reprokit/harness/bisect.h"

#include "bisect_switches.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "reprokit/codegen/backend.h"
#include "reprokit/codegen/compiler.h"
#include "reprokit/codegen/passes/pass_manager.h"
#include "reprokit/harness/bundle.h"
#include "reprokit/harness/child_run.h"
#include "reprokit/harness/repro_file.h"
#include "reprokit/support/errors.h"
#include "reprokit/ir/text_format.h"
#include "reprokit/process/subprocess.h"
#include "reprokit/support/files.h"

namespace reprokit {

namespace fs = std::filesystem;
using nlohmann::json;

json BisectStep::to_json() const {
  return {{"backend", backend}, {"run_passes", run_passes}, {"disabled_pass", disabled_pass},    {"limited_pass", limited_pass},
          {"limit", limit},     {"train", train},           {"backend_options", backend_options}};
}

BisectStep BisectStep::from_json(const json& j) {
  BisectStep s;
  try {
    s.backend = j.at("backend").get<std::string>();
    s.run_passes = j.value("run_passes", true);
    s.disabled_pass = j.value("disabled_pass", "");
    s.limited_pass = j.value("limited_pass", "");
    s.limit = j.value("limit", int64_t{-1});
    s.train = j.value("train", -1);
    s.backend_options = j.value("backend_options", std::map<std::string, std::string>{});
    for (const auto& [key, value] : s.backend_options) check_backend_option(key, value);
  } catch (const json::exception& e) { throw UserError(std::string("malformed bisect step: ") + e.what()); }
  return s;
}

ReproSpec BisectStep::apply(ReproSpec spec) const {
  spec.options.compile.backend = backend;
  spec.options.compile.run_passes = run_passes;
  if (!disabled_pass.empty()) spec.options.compile.disabled_passes.insert(disabled_pass);
  if (!limited_pass.empty()) spec.options.compile.pass_limits[limited_pass] = limit;
  if (train >= 0) spec.options.train = train == 1;
  for (const auto& [key, value] : backend_options) spec.options.compile.backend_options[key] = value;
  return spec;
}

int run_bisect_step(const std::string& bundle_or_repro, const std::string& step_json) {
  const BisectStep step = BisectStep::from_json(json::parse(step_json, nullptr, false));
  std::error_code ec;
  Failure f;
  if (fs::is_regular_file(bundle_or_repro, ec)) {
    const ReproFile r = load_repro_file(bundle_or_repro);
    f = run_and_classify(step.apply(r.spec), r.graph, r.inputs);
  } else {
    const Bundle b = load_bundle(bundle_or_repro);
    f = run_and_classify(step.apply(b.spec), b.graph, b.inputs);
  }
  fmt::print("{}\n", verdict_line(f));
  return 0;
}

Failure run_bisect_try(const std::string& reprokit_exe, const std::string& bundle_or_repro, const BisectStep& step, double timeout_s,
                       std::vector<std::string>* argv) {
  ProcessSpec ps;
  ps.argv = {reprokit_exe, "bisect-step", fs::absolute(bundle_or_repro).string(), step.to_json().dump()};
  ps.timeout_s = timeout_s;
  if (argv) *argv = ps.argv;
  return classify_child(run_process(ps), "the bisect step", timeout_s);
}

namespace {

class Bisector {
 public:
  Bisector(const BisectOptions& o, Bundle b) : o_(o), b_(std::move(b)) {
    timeout_ = o.timeout_s > 0 ? o.timeout_s : b_.spec.expected.kind == FailureKind::timeout && b_.spec.timeout_s > 0 ? b_.spec.timeout_s : 120;
  }

  // Runs one step in a child; true when it fails the bundle's way.
  bool fails(const BisectStep& step, const std::string& what) {
    ++runs_;
    std::vector<std::string> argv;
    last_ = run_bisect_try(o_.reprokit_exe, b_.dir, step, timeout_, &argv);
    const Failure& got = last_;
    bool f = same_failure(b_.spec.expected, got);
    fmt::print("  [{:>2}] {:<58} {}\n", runs_, what,
               f              ? "FAILS"
               : got.failed() ? "passes (fails differently: " + std::string(got.kind_name()) + ")"
                              : "passes");
    fmt::print("       rerun: {}\n", shell_quote_command(argv));
    log_.push_back({{"run", runs_}, {"what", what}, {"step", step.to_json()}, {"fails", f}, {"got", got.to_json()}});
    return f;
  }

  int run() {
    const std::string backend = b_.spec.options.compile.backend;
    fmt::print("bisect: graph {} ({} ops), stage {}, backend {}, failure {}: {}\n", b_.graph.name, b_.graph.num_ops(), b_.spec.stage, backend,
               b_.spec.expected.failed() ? b_.spec.expected.kind_name() : "(any)", b_.spec.expected.signature);
    json result;
    // 1. Stages, in the order data flows.
    struct Stage {
      std::string name;
      BisectStep step;
    };
    // A training bundle first runs its forward alone, then adds autodiff and partitioning.
    bool train = b_.spec.options.train && b_.spec.stage == "dynamo";
    // The reference interpreters first (the table's order: the captured graph, then decomposed),
    // then the backend itself, with reprokit's passes off and on where it runs them.
    std::vector<Stage> stages;
    for (const Backend& ref : backend_table()) {
      if (!ref.reference) continue;
      const std::string name(ref.name);
      stages.push_back({fmt::format("{} ({})", name, ref.summary), {name, true, "", "", -1, train ? 0 : -1, {}}});
      if (train && ref.has_aot_stage) stages.push_back({name + " with autodiff and partitioning", {name, true, "", "", -1, 1, {}}});
    }
    const Backend& compiler = backend_named(backend);
    if (compiler.runs_passes) {
      stages.push_back({backend + " with no passes (lowering + codegen)", {backend, false, "", "", -1, -1, {}}});
      stages.push_back({backend + " with passes", {backend, true, "", "", -1, -1, {}}});
    } else if (!compiler.reference) {
      stages.push_back({fmt::format("{} ({})", backend, compiler.summary), {backend, true, "", "", -1, -1, {}}});
    }
    fmt::print("stage search:\n");
    std::string failing_stage;
    for (auto& s : stages)
      if (fails(s.step, s.name)) {
        failing_stage = s.name;
        break;
      }
    result["stage"] = failing_stage;
    if (failing_stage.empty()) {
      fmt::print("bisect: no stage fails: the bundle's failure does not reproduce.\n");
      return finish(result, 1);
    }
    if (failing_stage == stages.back().name && compiler.switches) {
      BisectStep base = stages.back().step;
      base.backend_options = b_.spec.options.compile.backend_options;
      result["compiler_switches"] = bisect_switches(*compiler.switches, b_.graph, base, [&](const BisectStep& s, const std::string& what) {
        const bool f = fails(s, what);
        if (!f && unjudged(b_.spec.expected, last_)) throw UnjudgedTry{what};
        return f;
      });
      return finish(result, 0);
    }
    if (failing_stage != stages.back().name || !compiler.runs_passes) {
      fmt::print("bisect: the failure appears at stage \"{}\": it is not caused by any {}.\n", failing_stage,
                 compiler.runs_passes ? "compiler pass" : "of reprokit's passes (the backend runs none)");
      result["pass"] = nullptr;
      return finish(result, 0);
    }
    // 2. The pass whose removal makes it pass.
    fmt::print("pass search:\n");
    std::string culprit;
    for (auto& p : pass_table()) {
      BisectStep s{backend, true, p.name, "", -1, -1, {}};
      if (!fails(s, "without pass " + p.name)) {
        culprit = p.name;
        break;
      }
    }
    if (culprit.empty()) {
      fmt::print("bisect: the failure needs the passes, but removing any single pass does not fix it (an interaction).\n");
      return finish(result, 0);
    }
    result["pass"] = culprit;
    // 3. The rewrite: smallest limit N that fails; the Nth rewrite introduces the failure.
    std::vector<PassRecord> records;
    lower_for_codegen(b_.graph, b_.spec.options.compile, &records);
    int64_t total = 0;
    for (auto& r : records)
      if (r.name == culprit) total = r.wanted;
    fmt::print("rewrite search in {} ({} rewrites, at most {} runs):\n", culprit, total,
               static_cast<int>(std::ceil(std::log2(std::max<int64_t>(total, 1)))) + 1);
    int before = runs_;
    int64_t lo = 1, hi = total;  // invariant: limit hi fails, limit lo - 1 passes (limit 0 = disabled passes)
    while (lo < hi) {
      int64_t mid = (lo + hi) / 2;
      if (fails({backend, true, "", culprit, mid, -1, {}}, fmt::format("{} limited to its first {} rewrites", culprit, mid))) hi = mid;
      else lo = mid + 1;
    }
    result["rewrite"] = hi;
    result["rewrite_runs"] = runs_ - before;
    fmt::print("bisect: rewrite {} of pass {} introduces the failure (found in {} runs).\n", hi, culprit, runs_ - before);
    // Before and after that rewrite.
    CompileOptions at = b_.spec.options.compile;
    at.pass_limits[culprit] = hi - 1;
    std::string before_text = print_graph(lower_for_codegen(b_.graph, at, nullptr));
    at.pass_limits[culprit] = hi;
    std::string after_text = print_graph(lower_for_codegen(b_.graph, at, nullptr));
    std::string diff = line_diff(before_text, after_text);
    fmt::print("graph change made by that rewrite (- before, + after):\n{}", diff);
    result["diff"] = diff;
    return finish(result, 0);
  }

 private:
  static std::string line_diff(const std::string& a, const std::string& b) {
    auto lines = [](const std::string& s) {
      std::vector<std::string> v;
      std::stringstream ss(s);
      std::string l;
      while (std::getline(ss, l)) v.push_back(l);
      return v;
    };
    auto x = lines(a), y = lines(b);
    // Longest common subsequence over lines (graphs are small enough).
    size_t n = x.size(), m = y.size();
    std::vector<std::vector<int>> L(n + 1, std::vector<int>(m + 1, 0));
    for (size_t i = n; i-- > 0;)
      for (size_t j = m; j-- > 0;) L[i][j] = x[i] == y[j] ? L[i + 1][j + 1] + 1 : std::max(L[i + 1][j], L[i][j + 1]);
    std::string out;
    size_t i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && x[i] == y[j]) {
        ++i;
        ++j;
      } else if (i < n && (j == m || L[i + 1][j] >= L[i][j + 1])) out += "- " + x[i++] + "\n";
      else out += "+ " + y[j++] + "\n";
    }
    return out.empty() ? "(no textual change)\n" : out;
  }

  int finish(json result, int status) {
    result["runs"] = runs_;
    result["log"] = log_;
    Dir d = Dir::open(b_.dir);
    std::string name = write_unique(d, "bisect", "json", result.dump(2) + "\n");  // never overwrites
    fmt::print("bisect: {} runs; wrote {}\n", runs_, d.path(name));
    return status;
  }

  const BisectOptions& o_;
  Bundle b_;
  double timeout_;
  Failure last_;  // what the last try did
  int runs_ = 0;
  json log_ = json::array();
};

}  // namespace

int bisect_bundle(const BisectOptions& options) {
  Bundle b = load_bundle(options.bundle_dir);
  if (!b.spec.expected.failed()) throw UserError(options.bundle_dir + ": the bundle records no failure yet (level 3): minify or rerun it first");
  return Bisector(options, std::move(b)).run();
}

}  // namespace reprokit
