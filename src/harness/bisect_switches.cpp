// Bisection of a compiler's own optimisation switches (see bisect_switches.h).
#include "bisect_switches.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "reprokit/codegen/compile_options.h"

namespace reprokit {

namespace {

using nlohmann::json;

// The level a bundle set: a string, or a number where the levels are numbers (TVM's opt_level=2).
std::string level_set(const std::map<std::string, std::string>& options, std::string_view key) {
  auto it = options.find(std::string(key));
  if (it != options.end() && json::parse(it->second, nullptr, false).is_number_integer()) return it->second;
  return backend_option_string(options, key);
}

class SwitchSearch {
 public:
  SwitchSearch(const BackendSwitches& sw, const Graph& g, const BisectStep& base, const BisectTry& fails)
      : sw_(sw), g_(g), base_(base), fails_(fails) {
    base_disabled_ = backend_option_string(base.backend_options, sw.disable_option);
  }

  json run() {
    json out = {{"compiler", sw_.compiler}, {"level", nullptr}, {"optimizer", nullptr}, {"rule", nullptr}};
    fmt::print("{} optimisation search:\n", sw_.compiler);
    const std::string level = lowest_failing_level();
    if (level.empty()) return finding(out, fmt::format("no optimisation level of {} reproduces the failure", sw_.compiler));
    out["level"] = level;
    if (level == sw_.levels.front() && !sw_.lowest_level_optimises)
      return finding(
          out, fmt::format("the failure happens with {}'s optimisations off ({}={}): no optimiser causes it", sw_.compiler, sw_.level_option, level));
    BisectStep at = with_level(level);
    CompileOptions options;
    options.backend = base_.backend;
    options.backend_options = at.backend_options;
    const std::vector<std::string> changed = sw_.changed(g_, options);
    fmt::print("  optimisers that change the graph at {}: {}\n", level, changed.empty() ? "none" : fmt::format("{}", fmt::join(changed, ", ")));
    for (const std::string& name : changed) {
      if (fails_(without(at, {name}), "without " + name)) continue;
      out["optimizer"] = name;
      out["optimizer_kind"] = sw_.kind(name);
      std::string rule = culprit_rule(at, name);
      if (!rule.empty()) out["rule"] = rule;
      if (rule.empty()) return finding(out, fmt::format("{}'s {} {} (level {}) causes the failure", sw_.compiler, sw_.kind(name), name, level));
      if (rule.rfind(name + ":", 0) == 0)  // one application of a subsystem: "lowerings:relu[aten.relu.default]"
        return finding(out, fmt::format("{}'s {}, at {} (level {}), causes the failure", sw_.compiler, name, rule.substr(name.size() + 1), level));
      return finding(out, fmt::format("{}'s rewrite rule {} of {} (level {}) causes the failure", sw_.compiler, rule, name, level));
    }
    if (changed.size() > 1 && !fails_(without(at, changed), "without all of them"))
      return finding(out, fmt::format("turning off all of {} together makes it pass, no single one: an interaction", fmt::join(changed, ", ")));
    return finding(out,
                   fmt::format("level {} introduces the failure, but turning off the optimisers that change the graph does not make it pass", level));
  }

 private:
  json finding(json out, const std::string& sentence) {
    fmt::print("bisect: {}.\n", sentence);
    out["finding"] = sentence;
    return out;
  }

  BisectStep with_level(std::string_view level) const {
    BisectStep s = base_;
    s.backend_options[std::string(sw_.level_option)] = json(std::string(level)).dump();
    return s;
  }

  BisectStep without(BisectStep s, const std::vector<std::string>& names) const {
    s.backend_options[std::string(sw_.disable_option)] = json(optimizer_list(base_disabled_, names)).dump();
    return s;
  }

  // Up to the level the bundle ran at (the last when it set none), the first that fails.
  std::string lowest_failing_level() {
    size_t top = sw_.levels.size() - 1;
    const std::string level = level_set(base_.backend_options, sw_.level_option);
    for (size_t k = 0; k < sw_.levels.size(); ++k)
      if (sw_.levels[k] == level) top = k;
    for (size_t k = 0; k <= top; ++k)
      if (fails_(with_level(sw_.levels[k]), fmt::format("{} at {}={}", base_.backend, sw_.level_option, sw_.levels[k])))
        return std::string(sw_.levels[k]);
    return "";
  }

  // The rules of group `name`: listed in the switches, else asked of the compiler for this graph.
  std::vector<std::string> members_of(const BisectStep& at, const std::string& name) const {
    auto group = std::find_if(sw_.groups.begin(), sw_.groups.end(), [&](const OptimizerGroup& gr) { return gr.name == name; });
    if (group != sw_.groups.end()) return {group->members.begin(), group->members.end()};
    if (!sw_.members) return {};
    CompileOptions options;
    options.backend = base_.backend;
    options.backend_options = at.backend_options;
    std::vector<std::string> found = sw_.members(g_, options, name);
    fmt::print("  {} in {}: {}\n", name, sw_.compiler, found.size());
    return found;
  }

  // When `name` is a group of rules: the one rule whose turning off makes the failure go, halving
  // the group (one cause assumed, then checked alone); empty when there is none or no group.
  std::string culprit_rule(const BisectStep& at, const std::string& name) {
    std::vector<std::string> left = members_of(at, name);
    if (left.empty()) return "";
    bool passed_alone = false;  // the last try turned off exactly the one rule left, and passed
    while (left.size() > 1) {
      std::vector<std::string> half(left.begin(), left.begin() + static_cast<std::ptrdiff_t>(left.size() / 2));
      const std::string what = half.size() == 1 ? "without rule " + half.front() : fmt::format("without rules {}", fmt::join(half, ", "));
      if (!fails_(without(at, half), what)) {
        left = half;
        passed_alone = left.size() == 1;
      } else {
        left.erase(left.begin(), left.begin() + static_cast<std::ptrdiff_t>(half.size()));
        passed_alone = false;
      }
    }
    if (left.empty() || (!passed_alone && fails_(without(at, left), "without rule " + left.front()))) return "";
    return left.front();
  }

  const BackendSwitches& sw_;
  const Graph& g_;
  const BisectStep& base_;
  const BisectTry& fails_;
  std::string base_disabled_;
};

}  // namespace

bool unjudged(const Failure& expected, const Failure& got) { return got.kind == FailureKind::timeout && expected.kind != FailureKind::timeout; }

json bisect_switches(const BackendSwitches& switches, const Graph& g, const BisectStep& base, const BisectTry& fails) {
  try {
    return SwitchSearch(switches, g, base, fails).run();
  } catch (const UnjudgedTry& t) {
    const std::string sentence = fmt::format("the try \"{}\" ran out of time, so {}'s optimisers were not told apart", t.what, switches.compiler);
    fmt::print("bisect: {}.\n", sentence);
    return {{"compiler", switches.compiler}, {"level", nullptr}, {"optimizer", nullptr}, {"rule", nullptr}, {"finding", sentence}};
  }
}

}  // namespace reprokit
