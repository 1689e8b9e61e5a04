// reprokit's entry point: dispatches to the command table; maps errors to exit statuses
// (1: the thing checked fails; 2: bad usage, bad input or a resource the user controls; 3 only
// for an internal bug).
#include <fmt/core.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <new>

#include <nlohmann/json.hpp>

#include "command.h"
#include "reprokit/process/self_executable.h"
#include "reprokit/codegen/unsupported.h"
#include "reprokit/harness/harness.h"
#include "reprokit/support/errors.h"
#include "reprokit/support/tool_failure.h"
#include "reprokit/support/escape_controls.h"
#include "reprokit/support/files.h"

namespace reprokit::cli {

std::vector<Command>& command_table() {
  static std::vector<Command> table;
  return table;
}

static void print_overview() {
  fmt::print("reprokit: capture, compile and minify failing tensor graphs\n\nusage: reprokit <command> [options]\n\ncommands:\n");
  for (const auto& c : command_table())
    if (!c.hidden) fmt::print("  {:<9} {}\n", c.name, c.summary);
  fmt::print("\n`reprokit <command> --help` describes each command.\n");
}

// An error's message, safe to print: it may quote a name or path from a file the user was handed
// (a model, a campaign), and a terminal must not act on what such a quote holds. Where a message
// quotes one it escapes newlines too (escape_controls); here the lines reprokit wrote stay lines.
static std::string shown(const std::exception& e) { return reprokit::escape_controls_keep_newlines(e.what()); }

}  // namespace reprokit::cli

namespace {

// Commands that run no compiler under test: when one fails on its own account (an internal error,
// a crash) inside a check, that is reprokit's failure, never the check's answer (tool_failure.h).
// `run`, `repro`, `passes` and the rest compile with reprokit's own stack, whose failure may be the
// very bug a check looks for.
constexpr const char* kJudgingCommands[] = {"compare", "analyze", "triage", "print", "export", "import", "generate"};

bool judges_only(const std::string& command) {
  for (const char* c : kJudgingCommands)
    if (command == c) return true;
  return false;
}

// A stage the harness's watchdog found hung never returns: once the hang is recorded the process
// ends here, with the status a timeout gets.
[[noreturn]] void end_hung_process() {
  reprokit::remove_scratch_dirs_in_use();  // the hung stage never unwinds to remove its own
  std::fflush(nullptr);
  _exit(reprokit::kTimeoutExitStatus);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace reprokit::cli;
  reprokit::set_hang_end(&end_hung_process);
  reprokit::this_process_is_reprokit();
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_overview();
    return args.empty() ? 2 : 0;
  }
  for (const auto& c : command_table()) {
    if (c.name != args[0]) continue;
    std::vector<std::string> rest(args.begin() + 1, args.end());
    for (const auto& a : rest)
      if (a == "--help" || a == "-h") {
        fmt::print("usage: {}\n\n{}\n\n{}\n", c.usage, c.summary, c.help);
        return 0;
      }
    const bool tool_failures_count = judges_only(c.name);
    if (tool_failures_count) reprokit::report_own_failures_to_caller(c.name);
    try {
      return c.run(rest);
    } catch (const UsageError& e) {
      fmt::print(stderr, "reprokit {}: {}\nusage: {}\n", c.name, shown(e), c.usage);
      return 2;
    } catch (const reprokit::Unsupported& e) {  // the compiler under test lacks an op or a type: not a finding
      fmt::print(stderr, "{}\n", reprokit::unsupported_line(c.name, shown(e)));
      return 2;
    } catch (const reprokit::UserError& e) {
      fmt::print(stderr, "reprokit {}: error: {}\n", c.name, shown(e));
      return 2;
    } catch (const nlohmann::json::exception& e) {  // JSON read from a file the user handed us
      fmt::print(stderr, "reprokit {}: error: malformed JSON input: {}\n", c.name, shown(e));
      return 2;
    } catch (const std::filesystem::filesystem_error& e) {
      fmt::print(stderr, "reprokit {}: error: {}\n", c.name, shown(e));
      return 2;
    } catch (const std::bad_alloc&) {
      fmt::print(stderr, "reprokit {}: error: out of memory (the input asks for more memory than this machine can give)\n", c.name);
      if (tool_failures_count) reprokit::record_own_failure("out of memory");
      return 2;
    } catch (const std::exception& e) {
      fmt::print(stderr, "reprokit {}: internal error: {}\n", c.name, shown(e));
      if (tool_failures_count) reprokit::record_own_failure("internal error: " + shown(e));
      return 3;
    }
  }
  fmt::print(stderr, "reprokit: unknown command '{}'\n", args[0]);
  print_overview();
  return 2;
}
